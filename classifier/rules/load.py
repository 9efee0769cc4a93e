"""Rule files: find, load, validate against the schema, compile.

A rule file is data (see docs/writing-rules.md). Validation collects every problem of every
file as `path:line:col: message` instead of stopping at the first, so a rule author sees
the whole list in one run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from classifier.rules.cache import cache_key, sha256
from classifier.rules import regexcode, stamp
from classifier.rules.files import (builtin_rules_dir, builtin_rules_path,  # noqa: F401
                                    rule_file_paths, rule_files)
from classifier.rules.model import (STRUCTURE_FLAGS, STRUCTURE_LISTS, STRUCTURE_ONE, CategoryInfo,
                                    Rule, RuleSet)
from classifier.taxonomy import CATEGORIES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any

ROLES = ("cause", "symptom")


def check_regexes(*args, **kwargs):
    """classifier.rules.lint's check, imported only when a file is validated: lint imports
    regex's pure-Python parser (~5 ms), which a run from the rule cache never needs."""
    from classifier.rules.lint import check_regexes as check
    return check(*args, **kwargs)


_FILE_KEYS = {"category", "checklist", "remediation", "references", "rules"}
_TAXONOMY_KEYS = {"layer", "title"}
_RULE_KEYS = {"id", "title", "role", "priority", "keywords", "patterns", "exclude", "context",
              "not_near", "not_after", "resolved_by", "structure", "trend", "remediation", "examples",
              "exact_case", "select", "reads_code", "echo"}
TREND_KINDS = ("loss_scale", "loss_scale_log", "events", "retries")  # classifier.diagnosis.trends
MIN_MATCH_EXAMPLES = 3
MIN_NO_MATCH_EXAMPLES = 2


class RuleError(Exception):
    """One or more rule files are invalid; `problems` holds `path:line:col: message` strings."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


# --- validation -------------------------------------------------------------------------

def _marks(node, path=(), out=None):
    """Map each key path of a composed YAML node to its (line, col), 1-based."""
    import yaml  # only on a problem: a run from the cache never imports yaml
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


STEP_CONDITIONS = ("when", "unless")


def _check_steps(steps, where, report, minimum=0):
    """Remediation steps: strings, or {text, when/unless: {fact: value}} shown by condition."""
    if not isinstance(steps, list) or len(steps) < minimum:
        report(where, "remediation must be a non-empty list of steps" if minimum else
               "remediation must be a list of steps")
        return
    for i, step in enumerate(steps):
        if isinstance(step, str) and step:
            continue
        if isinstance(step, dict) and isinstance(step.get("text"), str) and step["text"] and \
                set(step) <= {"text", *STEP_CONDITIONS} and all(
                    isinstance(step[c], dict) and step[c] and
                    all(isinstance(k, str) and isinstance(v, str) for k, v in step[c].items())
                    for c in STEP_CONDITIONS if c in step):
            continue
        report(where + (i,), "a remediation step is a string or {text, when: {fact: value}, "
                             "unless: {fact: value}}")


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


def _check_structure(structure, where, report, lint):
    if not isinstance(structure, dict) or not structure:
        report(where, "structure must be a non-empty mapping")
        return
    for key, value in structure.items():
        if key in STRUCTURE_LISTS:
            if not _is_str_list(value, 1):
                report(where + (key,), f"structure.{key} must be a non-empty list of regexes")
            elif lint:
                check_regexes(value, where + (key,), report)
        elif key in STRUCTURE_FLAGS:
            if not isinstance(value, bool):
                report(where + (key,), f"structure.{key} must be true or false")
        elif key in STRUCTURE_ONE:
            if not isinstance(value, str) or not value:
                report(where + (key,), f"structure.{key} must be a regex string")
            elif lint:
                check_regexes([value], where + (key,), report)
        else:
            report(where + (key,), f"unknown structure key `{key}` (known: "
                                   f"{', '.join(STRUCTURE_LISTS + STRUCTURE_ONE + STRUCTURE_FLAGS)})")


def _validate_rule(rule, where, category, seen_ids, report, lint=True):
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
        report(where + ("id",), f"duplicate rule id `{rid}` (ids are unique across the built-in "
                                f"and extra rule files: extra rules add, never replace)")
    else:
        seen_ids.add(rid)
    if not isinstance(rule.get("title"), str):
        report(where, "rule needs a `title` string")
    if rule.get("role", "cause") not in ROLES:
        report(where + ("role",), f"role must be one of {', '.join(ROLES)}")
    if "priority" in rule and not isinstance(rule["priority"], int):
        report(where + ("priority",), "priority must be an integer")
    if "trend" in rule and rule["trend"] not in TREND_KINDS:
        report(where + ("trend",), f"trend must be one of {', '.join(TREND_KINDS)}")
    if "exact_case" in rule and not isinstance(rule["exact_case"], bool):
        report(where + ("exact_case",), "exact_case must be true or false")
    if "reads_code" in rule and not isinstance(rule["reads_code"], bool):
        report(where + ("reads_code",), "reads_code must be true or false")
    if "echo" in rule and (not isinstance(rule["echo"], bool) or rule.get("role") != "symptom"):
        report(where + ("echo",), "echo must be true or false, on a rule whose role is symptom")
    if "select" in rule:
        _check_select(rule, where + ("select",), report)
    has_structure = "structure" in rule
    if has_structure:
        _check_structure(rule["structure"], where + ("structure",), report, lint)
    # A structure-only rule fires on an exception's frames: it needs no patterns or keywords.
    structure_only = has_structure and "patterns" not in rule
    if not (structure_only and "keywords" not in rule) and not _is_str_list(rule.get("keywords"), 1):
        report(where + ("keywords",) if "keywords" in rule else where,
               "keywords must be a non-empty list of strings")
    if not structure_only and not _is_str_list(rule.get("patterns"), 1):
        report(where + ("patterns",) if "patterns" in rule else where,
               "patterns must be a non-empty list of strings")
    elif not structure_only and lint:
        keywords = rule["keywords"] if _is_str_list(rule.get("keywords"), 1) else ()
        examples = rule.get("examples")
        matches = examples.get("match") if isinstance(examples, dict) else None
        # An example with facts (`{text: ...}`) is as much a line the pattern meets as a bare one.
        texts = [m.get("text") if isinstance(m, dict) else m for m in matches or ()]
        samples = [" ".join(m.splitlines()) for m in texts if isinstance(m, str)]
        check_regexes(rule["patterns"], where + ("patterns",), report, keywords, samples)
    if "remediation" in rule:
        _check_steps(rule["remediation"], where + ("remediation",), report)
    for key in ("exclude", "context", "not_near", "not_after", "resolved_by"):
        if key in rule and not _is_str_list(rule[key]):
            report(where + (key,), f"{key} must be a list of strings")
        elif lint:
            check_regexes(rule.get(key), where + (key,), report)
    _check_examples(rule.get("examples"), where + ("examples",), report)


def _check_file_keys(data, builtin, report):
    for key in sorted(set(data) - _FILE_KEYS):
        hint = (": a category's layer and title live in the taxonomy (classifier/taxonomy.py)"
                if key in _TAXONOMY_KEYS else "")
        report((key,), f"unknown key `{key}`{hint}")
    for key in ("category", "rules"):
        if key not in data:
            report((), f"missing key '{key}'")
    # The built-in files carry the checklist and steps; a user file inherits what it leaves out.
    if builtin:
        for key in ("checklist", "remediation", "references"):
            if key not in data:
                report((), f"missing key '{key}'")
    if "checklist" in data and (not isinstance(data["checklist"], str) or not data["checklist"]):
        report(("checklist",), "`checklist` must be a non-empty string")
    if "remediation" in data:
        _check_steps(data["remediation"], ("remediation",), report, minimum=1)
    if "references" in data and not _is_str_list(data["references"], 1):
        report(("references",), "`references` must be a non-empty list of strings")


def validate_file(path: str | os.PathLike, seen_ids: set[str] | None = None, lint: bool = True,
                  builtin: bool = False,
                  raw: bytes | None = None) -> tuple[dict[str, Any] | None, list[str], bytes]:
    """Return (data or None, problems, raw bytes) for one rule file (`raw`: its bytes, if
    already read); problems are located."""
    import yaml  # a run from the cache never imports yaml
    from classifier.rules.safeyaml import safe_load_bounded
    from pathlib import Path
    path = Path(path)
    seen_ids = set() if seen_ids is None else seen_ids
    try:
        raw = path.read_bytes() if raw is None else raw
        text = raw.decode("utf-8")
        data = safe_load_bounded(text)
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"{path}:1:1: cannot read: {exc}"], b""
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        reason = getattr(exc, "problem", None) or str(exc)
        return None, [f"{path}:{line}:{col}: YAML syntax: {reason}"], raw
    problems = []
    marks = {}

    def report(where, message):
        # Composing node marks is slow in pure-Python YAML: only pay for it on a problem.
        if not marks:
            try:
                node = yaml.compose(text, Loader=yaml.SafeLoader)
                marks.update(_marks(node) if node is not None else {(): (1, 1)})
            except RecursionError:  # nested past what pure-Python YAML recurses through
                marks[()] = (1, 1)
        line, col = marks.get(tuple(where), marks.get((), (1, 1)))
        problems.append(f"{path}:{line}:{col}: {message}")

    if not isinstance(data, dict):
        report((), "a rule file must be a mapping")
        return None, problems, raw
    _check_file_keys(data, builtin, report)
    category = data.get("category")
    if "category" in data and category != path.stem:
        report(("category",), f"category `{category}` must equal the file stem `{path.stem}`")
    if "category" in data and category not in CATEGORIES:
        report(("category",), f"`{category}` is not a category id of the taxonomy; rule files "
                              f"add rules to its categories, a new category is a change to "
                              f"classifier/taxonomy.py")
    rules = data.get("rules")
    if "rules" in data and (not isinstance(rules, list) or not rules):
        report(("rules",), "`rules` must be a non-empty list")
    elif isinstance(rules, list):
        for i, rule in enumerate(rules):
            _validate_rule(rule, ("rules", i), str(category), seen_ids, report, lint)
    return (data if not problems else None), problems, raw


def _read_all(paths):
    """[(path, bytes or None)]: None for a file that cannot be read (validate_file says why)."""
    out = []
    for path in paths:
        try:
            with open(path, "rb") as fh:
                out.append((path, fh.read()))
        except OSError:
            out.append((path, None))
    return out


def _strip_examples(data):
    """A validated file's data without its rules' examples (read from YAML when wanted), with
    each match pattern's required literal (classifier.rules.literal)."""
    from classifier.rules.literal import required_literal
    rules = [{**{k: v for k, v in rule.items() if k != "examples"},
              "required": [required_literal(p) for p in rule.get("patterns") or ()]}
             for rule in data["rules"]]
    return {**data, "rules": rules}


def _check_select(rule: dict, where: tuple, report) -> None:
    """`select:` names some of the rule's own keywords and a number of lines after them."""
    select = rule["select"]
    if not isinstance(select, dict) or set(select) - {"keywords", "after"}:
        report(where, "select must be a mapping of `keywords` and/or `after`")
        return
    if "keywords" in select and not (_is_str_list(select["keywords"], 1)
                                     and set(select["keywords"]) <= set(rule.get("keywords") or ())):
        report(where + ("keywords",), "select.keywords must be some of the rule's keywords")
    after = select.get("after", 0)
    if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after <= 200:
        report(where + ("after",), "select.after must be a number of lines from 0 to 200")


def load_rules(directories: Iterable[str | os.PathLike] | None = None, check_builtin: bool = False,
               builtin_dir: str | os.PathLike | None = None) -> RuleSet:
    """Load the built-in rules plus those of extra directories, which add to them.

    A user file's rules join the built-in category of the same id and keep its checklist and
    steps unless the file gives its own; a rule id may be used only once across all files.
    User directories are fully linted, regexes included. The built-in rules are linted by the
    test suite, so at run time their regexes compile lazily (`check_builtin` forces it), and
    once validated they come from the cache (classifier.rules.cache) while their files' bytes
    stay the same; their examples are then read from the YAML only when asked for.
    """
    builtin = os.fspath(builtin_dir) if builtin_dir else builtin_rules_path()
    dirs = [builtin] + [os.fspath(d) for d in (directories or ())]
    problems = []
    rules, seen = [], set()
    categories = {}
    digest, version = sha256(), None
    for directory in dirs:
        if not os.path.isdir(directory):
            problems.append(f"{directory}:1:1: not a directory")
            continue
        is_builtin = directory == builtin
        paths = rule_file_paths(directory)
        # The built-in files alone: their digest may be known from their stat (stamp.py).
        stat = stamp.stat_key(paths, regexcode.release()) \
            if is_builtin and len(dirs) == 1 and not check_builtin else None
        known = stamp.recall(stat[0]) if stat else None
        loaded = stamp.from_cache(directory, paths, known[0]) if known else None
        if loaded is not None:
            (key, version), cacheable = known, False
        else:
            files = _read_all(paths)
            for path, raw in files:
                digest.update(os.path.basename(path).encode() + b"\0" + (raw or b""))
            cacheable = is_builtin and not check_builtin and None not in (raw for _, raw in files)
            # The key covers the regex release too: the compiled code kept beside the rules depends on it.
            key = cache_key(digest.digest(), regexcode.release(), *stamp.validator_sources()) \
                if cacheable else ""
            loaded = stamp.from_cache(directory, paths, key) if cacheable else None
        record_code = cacheable and loaded is None
        if loaded is None:
            loaded = []
            for path, raw in files:
                data, found, _ = validate_file(path, seen, check_builtin or not is_builtin,
                                               is_builtin, raw)
                problems.extend(found)
                if data is not None:
                    loaded.append((path, data))
            if cacheable and not problems:
                stamp.to_cache(key, [(os.path.basename(p), _strip_examples(d)) for p, d in loaded])
        else:
            seen.update(rule["id"] for _, data in loaded for rule in data["rules"])
            regexcode.load(key)
        for path, data in loaded:
            info = CategoryInfo(data, categories.get(data["category"]))
            if is_builtin:
                categories[data["category"]] = info
            rules += [Rule(rule, data["category"], str(path), info, is_builtin)
                      for rule in data["rules"]]
        if record_code and not problems:  # first run with these files: keep their regexes' code
            regexcode.keep(key, (p for r in rules for p in r.regex_sources()))
        if stat and stat[1] and cacheable and not problems:
            stamp.remember(stat[0], key, "sha256:" + digest.hexdigest()[:12])
    if problems:
        raise RuleError(problems)
    return RuleSet(rules, categories, version or "sha256:" + digest.hexdigest()[:12])


_DEFAULT = None


def default_rules() -> RuleSet:
    """Return the built-in rule set, loaded once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = load_rules()
    return _DEFAULT


def env_rules_dirs() -> list[str]:
    """Extra rule directories named by DSDIAG_RULES_DIR (os.pathsep separated)."""
    value = os.environ.get("DSDIAG_RULES_DIR", "")
    return [d for d in value.split(os.pathsep) if d]
