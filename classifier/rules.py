"""Rule files: find, load, validate against the schema, compile.

A rule file is data (see docs/writing-rules.md). Validation collects every problem of every
file as `path:line:col: message` instead of stopping at the first, so a rule author sees
the whole list in one run.
"""

import hashlib
import os
from pathlib import Path

import regex
import yaml

from classifier.taxonomy import CATEGORIES

ROLES = ("cause", "symptom")
_FILE_KEYS = {"category", "layer", "title", "checklist", "remediation", "references", "rules"}
_RULE_KEYS = {"id", "title", "role", "priority", "keywords", "patterns", "exclude", "context",
              "remediation", "examples"}
MIN_MATCH_EXAMPLES = 3
MIN_NO_MATCH_EXAMPLES = 2

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class RuleError(Exception):
    """One or more rule files are invalid; `problems` holds `path:line:col: message` strings."""

    def __init__(self, problems):
        super().__init__("\n".join(problems))
        self.problems = problems


class Rule:
    """One compiled rule: keywords gate where its regexes run."""

    __slots__ = ("id", "category", "title", "role", "priority", "keywords", "remediation",
                 "examples", "path", "_sources", "_compiled")

    def __init__(self, data, category, path):
        self.id = data["id"]
        self.category = category
        self.title = data["title"]
        self.role = data.get("role", "cause")
        self.priority = int(data.get("priority", 0))
        self.keywords = tuple(k.lower() for k in data["keywords"])
        self._sources = (tuple(data["patterns"]), tuple(data.get("exclude") or ()),
                         tuple(data.get("context") or ()))
        self._compiled = None
        self.remediation = tuple(data.get("remediation") or ())
        self.examples = data.get("examples") or {}
        self.path = path

    def _regexes(self):
        # Compiling ~400 regexes costs more than scanning an ordinary log, so a rule compiles
        # its own only when one of its keywords first occurs.
        if self._compiled is None:
            self._compiled = tuple(tuple(regex.compile(p) for p in group) for group in self._sources)
        return self._compiled

    @property
    def patterns(self):
        """The compiled match patterns."""
        return self._regexes()[0]

    @property
    def exclude(self):
        """The compiled exclusion patterns."""
        return self._regexes()[1]

    @property
    def context(self):
        """The compiled context patterns."""
        return self._regexes()[2]


class CategoryInfo:
    """The category-level part of a rule file: checklist item, remediation, references."""

    __slots__ = ("id", "layer", "title", "checklist", "remediation", "references")

    def __init__(self, data):
        self.id = data["category"]
        self.layer = data["layer"]
        self.title = data["title"]
        self.checklist = data.get("checklist", "")
        self.remediation = tuple(data.get("remediation") or ())
        self.references = tuple(data.get("references") or ())


class RuleSet:
    """All loaded rules plus their category info."""

    def __init__(self, rules, categories, version="unversioned"):
        self.rules = rules
        self.categories = categories
        self.version = version  # "sha256:<12 hex>": which rule files produced a diagnosis

    def by_id(self, rule_id):
        """Return the rule with this id, or None."""
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        return None


def builtin_rules_dir():
    """Locate the shipped rules: the repo's `rules/` in a checkout, package data when installed."""
    here = Path(__file__).resolve().parent
    checkout = here.parent / "rules"
    if checkout.is_dir():
        return checkout
    from importlib.resources import files
    return Path(str(files("classifier") / "_rules"))


def rule_files(directory):
    """List the `*.yaml` rule files of a directory in a stable order."""
    return sorted(Path(directory).glob("*.yaml"))


# --- validation -------------------------------------------------------------------------

def _marks(node, path=(), out=None):
    """Map each key path of a composed YAML node to its (line, col), 1-based."""
    if out is None:
        out = {}
    out[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _marks(value, path + (key.value,), out)
            # A problem with a key's value is reported at the key.
            out[path + (key.value,)] = (key.start_mark.line + 1, key.start_mark.column + 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _marks(item, path + (i,), out)
    return out


def _is_str_list(value, minimum=0):
    return isinstance(value, list) and len(value) >= minimum and all(
        isinstance(v, str) and v for v in value)


# Inputs that make a backtracking regex blow up: long runs of one character (the pattern's own
# literals among them), with and without a character that makes the match fail at the end.
# A quadratic pattern is cheap on short lines and hangs on long ones, so the runs are as long
# as the longest text a rule is ever shown (normalize.MATCH_LIMIT).
ADVERSARIAL_LENGTH = 3 * 8192  # a three-line window of MATCH_LIMIT lines
BACKTRACK_BUDGET = 0.25  # seconds one search may take on an adversarial input


def adversarial_inputs(pattern, keywords=()):
    """Strings built to expose catastrophic backtracking in `pattern` (gated by `keywords`)."""
    chars = {"a", "0", " ", ".", "/", ":", "-", "_", "'", "\t"}
    chars.update(c for c in pattern if c.isalnum())
    # The pattern's own words in front of the run defeat the engine's required-literal
    # shortcut, as a line that passed the keyword gate would.
    phrase = " ".join(regex.findall(r"[A-Za-z_]{2,}", pattern))[:400]
    out = []
    for c in sorted(chars):
        run = c * ADVERSARIAL_LENGTH
        out.extend((run, run + "\x00", "x" + run + "!"))
        if phrase:
            out.extend((phrase + " " + run, run + " " + phrase))
        # a line that passes the rule's own keyword gate, then the run
        out.extend(text for kw in keywords for text in (kw + " " + run, run + " " + kw))
    if phrase:
        out.append((phrase + " ") * (ADVERSARIAL_LENGTH // max(1, len(phrase))))
    return out


def backtracking_problem(compiled, keywords=()):
    """Return a reason if the compiled pattern is too slow on an adversarial input, else None."""
    for text in adversarial_inputs(compiled.pattern, keywords):
        try:
            compiled.search(text, timeout=BACKTRACK_BUDGET)
        except TimeoutError:
            return (f"pattern may backtrack catastrophically (over {BACKTRACK_BUDGET}s on "
                    f"{len(text)} chars of {text[:1]!r}); make quantifiers possessive or "
                    "bound them")
    return None


def _check_regexes(values, where, report, keywords=()):
    for i, pattern in enumerate(values or ()):
        try:
            compiled = regex.compile(pattern)
        except regex.error as exc:
            report(where + (i,), f"bad regex: {exc}")
            continue
        problem = backtracking_problem(compiled, keywords)
        if problem:
            report(where + (i,), problem)


def _check_examples(examples, where, report):
    if not isinstance(examples, dict):
        report(where, "examples must be a mapping with `match` and `no_match` lists")
        return
    for key, minimum in (("match", MIN_MATCH_EXAMPLES), ("no_match", MIN_NO_MATCH_EXAMPLES)):
        items = examples.get(key)
        if not isinstance(items, list) or len(items) < minimum:
            report(where + (key,) if key in examples else where,
                   f"examples.{key} needs at least {minimum} entries")
            continue
        for i, item in enumerate(items):
            if isinstance(item, str) and item.strip():
                continue
            if isinstance(item, dict) and isinstance(item.get("text"), str) and \
                    set(item) <= {"text", "facts"} and isinstance(item.get("facts", {}), dict):
                continue
            report(where + (key, i), "an example is a string or {text, facts}")
    extra = set(examples) - {"match", "no_match"}
    if extra:
        report(where, f"unknown example keys: {', '.join(sorted(extra))}")


def _validate_rule(rule, where, category, seen_ids, report, check_regexes=True):
    if not isinstance(rule, dict):
        report(where, "a rule must be a mapping")
        return
    for key in sorted(set(rule) - _RULE_KEYS):
        report(where + (key,), f"unknown rule key `{key}`")
    rid = rule.get("id")
    if not isinstance(rid, str) or not rid.startswith(category + "."):
        report(where + ("id",) if "id" in rule else where,
               f"rule id must be a string starting with `{category}.`")
    elif rid in seen_ids:
        report(where + ("id",), f"duplicate rule id `{rid}`")
    else:
        seen_ids.add(rid)
    if not isinstance(rule.get("title"), str):
        report(where, "rule needs a `title` string")
    if rule.get("role", "cause") not in ROLES:
        report(where + ("role",), f"role must be one of {', '.join(ROLES)}")
    if "priority" in rule and not isinstance(rule["priority"], int):
        report(where + ("priority",), "priority must be an integer")
    if not _is_str_list(rule.get("keywords"), 1):
        report(where + ("keywords",) if "keywords" in rule else where,
               "keywords must be a non-empty list of strings")
    if not _is_str_list(rule.get("patterns"), 1):
        report(where + ("patterns",) if "patterns" in rule else where,
               "patterns must be a non-empty list of strings")
    elif check_regexes:
        keywords = rule["keywords"] if _is_str_list(rule.get("keywords"), 1) else ()
        _check_regexes(rule["patterns"], where + ("patterns",), report, keywords)
    for key in ("exclude", "context", "remediation"):
        if key in rule and not _is_str_list(rule[key]):
            report(where + (key,), f"{key} must be a list of strings")
        elif key != "remediation" and check_regexes:
            _check_regexes(rule.get(key), where + (key,), report)
    _check_examples(rule.get("examples"), where + ("examples",), report)


def validate_file(path, seen_ids=None, check_regexes=True):
    """Return (data or None, problems) for one rule file; problems are located strings."""
    path = Path(path)
    problems = []
    seen_ids = set() if seen_ids is None else seen_ids
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.load(text, Loader=_Loader)
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"{path}:1:1: cannot read: {exc}"]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        reason = getattr(exc, "problem", None) or str(exc)
        return None, [f"{path}:{line}:{col}: YAML syntax: {reason}"]
    marks = {}

    def report(where, message):
        # Composing node marks is slow in pure-Python YAML: only pay for it on a problem.
        if not marks:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            marks.update(_marks(node) if node is not None else {(): (1, 1)})
        line, col = marks.get(tuple(where), marks.get((), (1, 1)))
        problems.append(f"{path}:{line}:{col}: {message}")

    if not isinstance(data, dict):
        report((), "a rule file must be a mapping")
        return None, problems
    for key in sorted(set(data) - _FILE_KEYS):
        report((key,), f"unknown key `{key}`")
    category = data.get("category")
    if category != path.stem:
        report(("category",), f"category `{category}` must equal the file stem `{path.stem}`")
    if category not in CATEGORIES:
        report(("category",), f"`{category}` is not a category id of the taxonomy")
    elif data.get("layer") != CATEGORIES[category][0]:
        report(("layer",), f"layer of `{category}` is `{CATEGORIES[category][0]}`")
    for key in ("title", "checklist"):
        if not isinstance(data.get(key), str) or not data.get(key):
            report((key,) if key in data else (), f"`{key}` must be a non-empty string")
    for key in ("remediation", "references"):
        if not _is_str_list(data.get(key), 1):
            report((key,) if key in data else (), f"`{key}` must be a non-empty list of strings")
    rules = data.get("rules")
    if not isinstance(rules, list) or not rules:
        report(("rules",) if "rules" in data else (), "`rules` must be a non-empty list")
    else:
        for i, rule in enumerate(rules):
            _validate_rule(rule, ("rules", i), str(category), seen_ids, report, check_regexes)
    return (data if not problems else None), problems


def load_rules(directories=None, check_builtin=False):
    """Load rules from the built-in directory plus any extra ones (later ids override).

    User directories are fully checked, regexes included. The built-in rules are checked by
    the test suite, so at run time their regexes compile lazily (`check_builtin` forces it).
    """
    builtin = builtin_rules_dir()
    dirs = [builtin] + [Path(d) for d in (directories or ())]
    problems = []
    by_id = {}
    categories = {}
    digest = hashlib.sha256()
    for directory in dirs:
        if not directory.is_dir():
            problems.append(f"{directory}:1:1: not a directory")
            continue
        seen = set()
        for path in rule_files(directory):
            data, found = validate_file(path, seen, check_builtin or directory != builtin)
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
            problems.extend(found)
            if data is None:
                continue
            categories[data["category"]] = CategoryInfo(data)
            for rule in data["rules"]:
                by_id[rule["id"]] = Rule(rule, data["category"], str(path))
    if problems:
        raise RuleError(problems)
    return RuleSet(list(by_id.values()), categories, "sha256:" + digest.hexdigest()[:12])


_DEFAULT = None


def default_rules():
    """Return the built-in rule set, loaded once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = load_rules()
    return _DEFAULT


def env_rules_dirs():
    """Extra rule directories named by DSDIAG_RULES_DIR (os.pathsep separated)."""
    value = os.environ.get("DSDIAG_RULES_DIR", "")
    return [d for d in value.split(os.pathsep) if d]
