"""Built-in patterns stay linear on long lines: the adversarial lint sees a rule's own examples
behind a long run, and the line from issue 16 is matched without a regex timeout."""

import json

import regex

from classifier.rules.lint import backtracking_problem
from conftest import run_dsdiag

# The library pattern as it was: an unanchored `[\w./+~-]*` before `\.so:` rescans the whole
# run from every start position when the colon is missing.
QUADRATIC = r"(?P<library>[\w./+~-]*\.so(?:\.\d+)*):\s+undefined symbol:\s+(?P<symbol>[\w.@$]+)"
EXAMPLE = "ImportError: /usr/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister"


def test_lint_flags_a_prefix_scan_only_when_shown_the_rules_examples():
    compiled = regex.compile(QUADRATIC)
    assert backtracking_problem(compiled, ["undefined symbol"]) is None  # the old blind spot
    assert backtracking_problem(compiled, ["undefined symbol"], [EXAMPLE]) is not None


def test_long_lines_ending_in_a_near_miss_need_no_regex_timeout(tmp_path):
    # Issue 16: lines of 8,100 characters ending in `.so undefined symbol: x` (no colon after
    # .so) took seconds per line; each search now fails in one pass.
    log = tmp_path / "job.log"
    log.write_text(("a" * 8100 + ".so undefined symbol: x\n") * 5)
    proc = run_dsdiag("--format", "json", log, timeout=120)
    result = json.loads(proc.stdout)
    assert [w["code"] for w in result["warnings"]] == []
    assert result["category"] == "version_mismatch"
    assert result["facts"]["symbol"] == "x"


def _module_patterns():
    """Every compiled `re` pattern held at module level by the pipeline (alone or in a table)."""
    import importlib
    import pkgutil
    import re

    import classifier.diagnosis as pipeline
    names = [f"classifier.diagnosis.{m.name}" for m in pkgutil.iter_modules(pipeline.__path__)]
    for name in names + ["classifier.vocabulary"]:
        for attr, value in vars(importlib.import_module(name)).items():
            items = value if isinstance(value, (tuple, list)) else [value]
            for item in items:
                for p in (item if isinstance(item, tuple) else (item,)):
                    if isinstance(p, re.Pattern):
                        yield f"{name}.{attr}", p


def test_the_pipelines_own_patterns_pass_the_backtracking_lint():
    # The fuzzer found a line of 30,000 slashes taking 6 s in the model's path mask; the same
    # lint the rules pass now covers the patterns normalisation and the model apply to log text.
    import re
    problems = []
    for where, p in _module_patterns():
        flags = (regex.I if p.flags & re.I else 0) | (regex.M if p.flags & re.M else 0)
        # A bytes pattern (the prefilter's) is linted as the same text.
        text = p.pattern.decode("latin-1") if isinstance(p.pattern, bytes) else p.pattern
        problem = backtracking_problem(regex.compile(text, flags | regex.V0))
        if problem:
            problems.append(f"{where}: {p.pattern[:80]}: {problem}")
    assert not problems, "\n".join(problems)
