"""The compiled rule set: rules, the category-level text of their files, and the caches the
matcher and the prefilter build from them."""

from typing import TYPE_CHECKING

import regex

if TYPE_CHECKING:
    from classifier.diagnosis.match import KeywordIndex
    from classifier.diagnosis.prefilter import HyperscanFinder, PurePythonFinder


class Rule:
    """One compiled rule: keywords gate where its regexes run."""

    __slots__ = ("id", "category", "title", "role", "priority", "keywords", "remediation",
                 "examples", "path", "info", "structure", "trend", "_sources", "_compiled")

    def __init__(self, data: dict, category: str, path: str, info: "CategoryInfo") -> None:
        self.id = data["id"]
        self.category = category
        self.title = data["title"]
        self.role = data.get("role", "cause")
        self.priority = int(data.get("priority", 0))
        self.keywords = tuple(k.lower() for k in data.get("keywords") or ())
        self._sources = (tuple(data.get("patterns") or ()), tuple(data.get("exclude") or ()),
                         tuple(data.get("context") or ()))
        # Conditions on an exception's type, frames and message (classifier.diagnosis.structure).
        self.structure = compile_structure(data["structure"]) if data.get("structure") else None
        self.trend = data.get("trend")  # its hits count only as a trend (diagnosis.trends)
        self._compiled = None
        self.remediation = tuple(data.get("remediation") or ())
        self.examples = data.get("examples") or {}
        self.path = path
        self.info = info  # the checklist and steps of the file this rule came from

    def _regexes(self):
        # Compiling ~400 regexes costs more than scanning an ordinary log, so a rule compiles
        # its own only when one of its keywords first occurs.
        if self._compiled is None:
            self._compiled = tuple(tuple(regex.compile(p) for p in group) for group in self._sources)
        return self._compiled

    @property
    def has_patterns(self) -> bool:
        """False for a rule that fires on an exception's structure alone."""
        return bool(self._sources[0])

    @property
    def patterns(self) -> tuple:
        """The compiled match patterns."""
        return self._regexes()[0]

    @property
    def exclude(self) -> tuple:
        """The compiled exclusion patterns."""
        return self._regexes()[1]

    @property
    def has_context(self) -> bool:
        """Does the rule read lines before its match (`context`)? Known without compiling."""
        return bool(self._sources[2])

    @property
    def context(self) -> tuple:
        """The compiled context patterns."""
        return self._regexes()[2]


STRUCTURE_LISTS = ("raised_in", "called_from", "not_called_from")
STRUCTURE_ONE = ("exception", "innermost", "source", "message")
STRUCTURE_FLAGS = ("cut",)


def compile_structure(data: dict) -> dict:
    """A rule's `structure:` block with its regexes compiled (lists stay lists)."""
    out = {}
    for key, value in data.items():
        if key in STRUCTURE_LISTS:
            out[key] = tuple(regex.compile(p) for p in value)
        elif key in STRUCTURE_FLAGS:
            out[key] = value
        else:
            out[key] = regex.compile(value)
    return out


class CategoryInfo:
    """The category-level part of a rule file: checklist item, remediation, references.

    A user file that leaves a field out inherits the built-in file's (`base`), so its rules
    are explained like the built-in ones of their category.
    """

    __slots__ = ("id", "checklist", "remediation", "references")

    def __init__(self, data: dict, base: "CategoryInfo | None" = None) -> None:
        self.id = data["category"]
        self.checklist = data.get("checklist") or (base.checklist if base else "")
        self.remediation = tuple(data.get("remediation") or (base.remediation if base else ()))
        self.references = tuple(data.get("references") or (base.references if base else ()))


class RuleSet:
    """All loaded rules, the built-in category info, and what is derived from them once."""

    def __init__(self, rules: list[Rule], categories: dict[str, CategoryInfo],
                 version: str = "unversioned") -> None:
        self.rules = rules
        self.categories = categories
        self.version = version  # "sha256:<12 hex>" of the rule files: what made a diagnosis
        self._index = None
        self._finders = {}

    def by_id(self, rule_id: str) -> Rule | None:
        """Return the rule with this id, or None."""
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        return None

    def keyword_index(self) -> "KeywordIndex":
        """The keyword gate of the matcher (classifier.diagnosis.match), built once."""
        if self._index is None:
            from classifier.diagnosis.match import KeywordIndex
            self._index = KeywordIndex(self.rules)
        return self._index

    def finder(self, engine: str = "auto") -> "HyperscanFinder | PurePythonFinder":
        """The prefilter's line finder for these rules' keywords and the failure vocabulary."""
        if engine not in self._finders:
            from classifier.diagnosis.prefilter import make_finder
            from classifier.vocabulary import ALL_TERMS
            keywords = {k for rule in self.rules for k in rule.keywords}
            far = {k for rule in self.rules if rule.has_context for k in rule.keywords}
            self._finders[engine] = make_finder(keywords, ALL_TERMS, engine, far)
        return self._finders[engine]
