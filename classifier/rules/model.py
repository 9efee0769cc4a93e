"""The compiled rule set: rules, the category-level text of their files, and the caches the
matcher and the prefilter build from them."""

from __future__ import annotations

import marshal

from classifier.rules import regexcode

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any
    from classifier.diagnosis.match import KeywordIndex
    from classifier.diagnosis.finder import HyperscanFinder, PurePythonFinder


# A rule's regex groups, in the order Rule keeps them; and what the cache packs of a rule.
GROUPS = ("patterns", "exclude", "context", "not_near", "resolved_by", "not_after")
PACKED = GROUPS + ("required", "remediation")


def pack_rule(rule: dict) -> dict:
    """A validated built-in rule as the cache keeps it: what only a rule its keywords reach
    reads, in one marshal blob that Rule unpacks on first use, and its groups' sizes."""
    out = {k: v for k, v in rule.items() if k not in PACKED}
    out["packed"] = marshal.dumps({k: rule[k] for k in PACKED if k in rule})
    out["sizes"] = [len(rule.get(k) or ()) for k in GROUPS]
    return out


class Rule:
    """One compiled rule: keywords gate where its regexes run."""

    __slots__ = ("id", "category", "title", "role", "priority", "keywords", "exact_case", "select",
                 "reads_code", "echo", "_remediation", "_packed", "_sizes",
                 "_examples", "path", "info", "_structure_data", "_structure", "trend",
                 "_sources", "_compiled", "_one", "builtin", "_required", "_twins")

    def __init__(self, data: dict, category: str, path: str, info: "CategoryInfo",
                 builtin: bool = False) -> None:
        self.id = data["id"]
        self.category = category
        self.title = data["title"]
        self.role = data.get("role", "cause")
        self.priority = int(data.get("priority", 0))
        # `exact_case: true`: the keywords are matched as written (`TIMEOUT ` in a sacct row,
        # not `NCCL_TIMEOUT=1800`); otherwise in any case, and kept lower-cased.
        self.exact_case = bool(data.get("exact_case"))
        self.keywords = tuple(k if self.exact_case else k.lower() for k in data.get("keywords") or ())
        # `reads_code: true`: the rule may match a line that reads as source code (a statement
        # echoed under a traceback frame or by the warnings module), which no other rule sees.
        self.reads_code = bool(data.get("reads_code"))
        # `echo: true`: the line only says a peer went away. It marks that peer as the culprit
        # and orders the ranks, but names no cause: where it would decide, the job is unknown.
        self.echo = bool(data.get("echo"))
        # For the big-log prefilter: which keywords pick a line, and how many lines after it
        # the rule reads (a trend that waits for the failure ending a storm).
        self.select = data.get("select") or {}
        # A built-in rule from the cache brings its regexes and steps packed (pack_rule): a run
        # unpacks only the rules its keywords reach, ~1 ms less to load the set.
        packed = data.get("packed") if builtin else None
        if isinstance(packed, bytes):
            self._packed, self._sizes = packed, tuple(data["sizes"])
            self._sources = self._required = self._remediation = None
        else:
            self._packed = None
            self._unpack(data, builtin)
        # Conditions on an exception's type, frames and message (classifier.diagnosis.structure).
        self._structure_data = data.get("structure") or None
        self._structure = None  # compiled on first use
        self.trend = data.get("trend")  # its hits count only as a trend (diagnosis.trends)
        self._compiled = None
        self._one = None  # match patterns compiled one by one (pattern())
        self._twins = None  # their greedy twins, for partial searches (partial_pattern())
        # None: the rule came from the cache, which leaves examples in the YAML (see `examples`).
        self._examples = (data["examples"] or {}) if "examples" in data else None
        self.path = path
        self.info = info  # the checklist and steps of the file this rule came from
        # Shipped with dsdiag: linted and fuzzed by the suite, so trusted with short texts
        # (classifier.diagnosis.budget); a user's rule is always searched with a timeout.
        self.builtin = builtin

    def _unpack(self, data: dict, builtin: bool) -> None:
        self._sources = tuple(tuple(data.get(name) or ()) for name in GROUPS)
        self._sizes = tuple(map(len, self._sources))
        # Built-in rules from the cache bring their patterns' required literals with them.
        required = data.get("required") if builtin else None
        self._required = tuple(required) if isinstance(required, list) and \
            len(required) == len(self._sources[0]) else None
        self._remediation = tuple(data.get("remediation") or ())

    def _src(self) -> tuple:
        """The rule's regex sources by group (GROUPS), unpacked on first use."""
        if self._sources is None:
            self._unpack(marshal.loads(self._packed), True)
            self._packed = None
        return self._sources

    @property
    def remediation(self) -> tuple:
        """The rule's own remediation steps."""
        if self._remediation is None:
            self._src()
        return self._remediation

    @property
    def examples(self) -> dict[str, Any]:
        """The rule's `examples:`; read from its file on first use when it came from the cache."""
        if self._examples is None:
            self._examples = file_examples(self.path).get(self.id) or {}
        return self._examples

    def _group(self, k: int) -> tuple:
        # Compiling ~400 regexes costs more than scanning an ordinary log, so a rule compiles
        # each of its groups (patterns, exclude, context...) only when a line first asks it.
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = [None] * len(GROUPS)
        group = compiled[k]
        if group is None:
            group = compiled[k] = tuple(self.pattern(j) for j in range(self._sizes[0])) \
                if k == 0 else tuple(regexcode.compile(p) for p in self._src()[k])
        return group

    def pattern(self, j: int) -> "re.Pattern":
        """The j-th match pattern, compiled on first use: a keyword line whose text lacks a
        pattern's required literal never compiles that pattern."""
        one = self._one
        if one is None:
            one = self._one = [None] * self._sizes[0]
        compiled = one[j]
        if compiled is None:
            compiled = one[j] = regexcode.compile(self._src()[0][j])
        return compiled

    def partial_pattern(self, j: int) -> "re.Pattern":
        """The j-th match pattern as a partial search should ask it: its greedy twin
        (classifier.rules.literal.greedy_twin) where it has a lazy quantifier, else itself."""
        twins = self._twins
        if twins is None:
            twins = self._twins = [None] * self._sizes[0]
        twin = twins[j]
        if twin is None:
            from classifier.rules.literal import greedy_twin  # only a cut last line asks
            source = self._src()[0][j]
            greedy = greedy_twin(source)
            twin = twins[j] = self.pattern(j) if greedy == source else regexcode.compile(greedy)
        return twin

    @property
    def required(self) -> tuple:
        """Per match pattern, a literal every match contains (classifier.rules.literal), or
        None; a user's rule gets None throughout: its patterns are not read that way."""
        patterns = self._src()[0]  # unpacking may bring them
        if self._required is None:
            from classifier.rules.literal import required_literal
            self._required = tuple(required_literal(p) if self.builtin else None
                                   for p in patterns)
        return self._required

    @property
    def structure(self) -> dict | None:
        """The compiled `structure:` conditions, or None for a rule without them."""
        if self._structure is None and self._structure_data is not None:
            self._structure = compile_structure(self._structure_data)
        return self._structure

    def regex_sources(self) -> list[str]:
        """Every regex the rule may compile: patterns, exclusions, context and structure."""
        out = [p for group in self._src() for p in group]
        for key, value in (self._structure_data or {}).items():
            if key in STRUCTURE_LISTS:
                out.extend(value)
            elif key not in STRUCTURE_FLAGS:
                out.append(value)
        return out

    @property
    def has_patterns(self) -> bool:
        """False for a rule that fires on an exception's structure alone."""
        return self._sizes[0] > 0

    @property
    def patterns(self) -> tuple:
        """The compiled match patterns."""
        return self._group(0)

    @property
    def exclude(self) -> tuple:
        """The compiled exclusion patterns."""
        return self._group(1)

    @property
    def has_vetoes(self) -> bool:
        """Does the rule have an `exclude`, `not_near` or `not_after`? Known without compiling."""
        return bool(self._sizes[1] or self._sizes[3] or self._sizes[5])

    @property
    def has_context(self) -> bool:
        """Does the rule read lines before its match (`context`, `not_near`, `not_after`)?
        Known without compiling."""
        return bool(self._sizes[2] or self._sizes[3] or self._sizes[5])

    @property
    def context(self) -> tuple:
        """The compiled context patterns."""
        return self._group(2)

    @property
    def not_near(self) -> tuple:
        """The compiled patterns that veto a hit from a line near it (`not_near`)."""
        return self._group(3)

    @property
    def resolved_by(self) -> tuple:
        """The compiled patterns of a later line that ends what a weak symptom waited on
        (`resolved_by`): a hit such a line follows is not where the job hung."""
        return self._group(4) if self._sizes[4] else ()

    @property
    def not_after(self) -> tuple:
        """The compiled patterns that veto a hit from a line before it only (`not_after`)."""
        return self._group(5) if self._sizes[5] else ()


_FILE_EXAMPLES: dict[str, dict[str, Any]] = {}


def file_examples(path: str) -> dict[str, Any]:
    """{rule id: examples} of one rule file, parsed once per process."""
    if path not in _FILE_EXAMPLES:
        from classifier.rules.safeyaml import safe_load_bounded
        with open(path, encoding="utf-8") as fh:
            data = safe_load_bounded(fh.read()) or {}
        rules = data.get("rules") if isinstance(data, dict) else None
        _FILE_EXAMPLES[path] = {rule.get("id"): rule.get("examples")
                                for rule in rules or () if isinstance(rule, dict)}
    return _FILE_EXAMPLES[path]


STRUCTURE_LISTS = ("raised_in", "called_from", "not_called_from", "config_loader")
STRUCTURE_ONE = ("exception", "innermost", "source", "raised_source", "message")
STRUCTURE_FLAGS = ("cut", "training_run")


def compile_structure(data: dict) -> dict:
    """A rule's `structure:` block with its regexes compiled (lists stay lists)."""
    out = {}
    for key, value in data.items():
        if key in STRUCTURE_LISTS:
            out[key] = tuple(regexcode.compile(p) for p in value)
        elif key in STRUCTURE_FLAGS:
            out[key] = value
        else:
            out[key] = regexcode.compile(value)
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
            from classifier.diagnosis.finder import make_finder
            from classifier.vocabulary import ALL_TERMS
            # Rules of files hashed into their version (load_rules) may take tables from the cache.
            version = None if self.version == "unversioned" else self.version
            self._finders[engine] = make_finder(self._select_keywords, ALL_TERMS, engine, version)
        return self._finders[engine]

    def _select_keywords(self) -> set[tuple]:
        from classifier.diagnosis.finder import BEFORE, NEAR
        keywords = set()
        for rule in self.rules:
            # A rule with `context` reads BEFORE lines back; `select` may narrow which
            # keywords pick a line and say how far after it the rule reads on.
            before = BEFORE if rule.has_context else NEAR
            after = max(NEAR, rule.select.get("after", 0))
            for k in rule.select.get("keywords", rule.keywords):
                keywords.add((k if rule.exact_case else k.lower(), rule.exact_case, before, after))
        return keywords
