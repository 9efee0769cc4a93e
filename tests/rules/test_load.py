"""Meta-tests over the rule set: schema, coverage of the taxonomy, located errors."""

from pathlib import Path

import pytest

from classifier.rules.load import RuleError, builtin_rules_dir, load_rules, rule_files, validate_file
from classifier.taxonomy import CATEGORIES


def test_builtin_rules_load_cleanly():
    # check_builtin also runs every regex against the adversarial inputs (no backtracking blow-up).
    rules = load_rules(check_builtin=True)
    assert rules.rules, "no rules loaded"


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_every_category_has_a_rule_file(category):
    path = builtin_rules_dir() / f"{category}.yaml"
    assert path.is_file(), f"missing {path}"
    data, problems, _ = validate_file(path, builtin=True)
    assert not problems, problems
    assert data["rules"], "a category file without rules"


def test_no_stray_rule_files():
    stems = {p.stem for p in rule_files(builtin_rules_dir())}
    assert stems <= set(CATEGORIES), stems - set(CATEGORIES)


BAD = """\
category: port_conflict
layer: config
checklist: y
remediation: ["z"]
references: ["u"]
rules:
  - id: wrong.prefix
    title: t
    role: maybe
    keywords: []
    patterns: ["(unclosed"]
    examples: {match: ["a"], no_match: []}
    colour: red
"""


def test_bad_rule_file_reports_every_problem_with_location(tmp_path):
    bad = tmp_path / "port_conflict.yaml"
    bad.write_text(BAD)
    broken = tmp_path / "gpu_oom.yaml"
    broken.write_text("category: gpu_oom\nrules: [\n")
    with pytest.raises(RuleError) as err:
        load_rules([tmp_path])
    problems = err.value.problems
    text = "\n".join(problems)
    # Each problem names file:line:col, and all of them are collected, across both files.
    assert all(p.startswith(str(tmp_path)) and p.split(":")[1].isdigit() for p in problems)
    for needle in ("unknown key `layer`", "must be a string starting with", "role must be",
                   "keywords must be", "bad regex", "examples.match needs", "examples.no_match needs",
                   "unknown rule key `colour`", "YAML syntax"):
        assert needle in text, needle
    role_line = [p for p in problems if "role must be" in p][0]
    assert role_line.split(":")[1] == "9", role_line


GOOD_USER_RULE = """\
category: disk_full
checklist: c
remediation: ["r"]
references: ["u"]
rules:
  - id: disk_full.site
    title: t
    keywords: ["quota"]
    patterns: ['{pattern}']
    examples:
      match: ["quota aaab", "x quota ab", "quota aaaaab y"]
      no_match: ["quota", "nothing"]
"""


def test_catastrophic_user_pattern_is_rejected_at_load(tmp_path):
    (tmp_path / "disk_full.yaml").write_text(GOOD_USER_RULE.format(pattern="quota (a+)+b"))
    with pytest.raises(RuleError) as err:
        load_rules([tmp_path])
    assert "backtrack" in err.value.problems[0] and ":9:" in err.value.problems[0]


def test_pattern_quadratic_in_front_of_an_example_with_facts_is_rejected(tmp_path):
    # An unanchored `[\\w.-]+` before the message scans to the message from every start in a long
    # run of word characters; the lint finds it from an example given with its facts too.
    rule = GOOD_USER_RULE.format(pattern="(?P<host>[\\w.-]+): quota gone").replace(
        'match: ["quota aaab", "x quota ab", "quota aaaaab y"]',
        'match: [{text: "ok then node-1: quota gone", facts: {host: node-1}}, '
        '{text: "n2: quota gone", facts: {host: n2}}, {text: "a.b: quota gone", facts: {host: a.b}}]').replace(
        'no_match: ["quota", "nothing"]', 'no_match: ["quota", "node-1: quota kept"]')
    (tmp_path / "disk_full.yaml").write_text(rule)
    with pytest.raises(RuleError) as err:
        load_rules([tmp_path])
    assert "backtrack" in err.value.problems[0]
    anchored = rule.replace("(?P<host>", "(?<![\\w.-])(?P<host>")
    (tmp_path / "disk_full.yaml").write_text(anchored)
    assert load_rules([tmp_path])


def test_rules_lint_and_test_cli_on_a_user_directory(tmp_path):
    import subprocess
    import sys
    from conftest import ROOT
    (tmp_path / "disk_full.yaml").write_text(GOOD_USER_RULE.format(pattern="quota a+b"))
    run = lambda *a: subprocess.run([sys.executable, "-m", "classifier", "rules", *a, str(tmp_path)],
                                    capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run("lint").returncode == 0
    tested = run("test")
    assert tested.returncode == 0 and " 0 failed" in tested.stdout
    # An example that no longer holds is reported with the file, and the exit code says so.
    (tmp_path / "disk_full.yaml").write_text(GOOD_USER_RULE.format(pattern="quota a+c"))
    tested = run("test")
    assert tested.returncode == 1 and "disk_full.yaml" in tested.stdout and "must match" in tested.stdout


STRUCTURE_RULE = """\
category: env_var_missing
rules:
  - id: env_var_missing.site_frames
    title: t
    structure:
      innermost: '{innermost}'
      cut: {cut}
    examples:
      match: ["a", "b", "c"]
      no_match: ["d", "e"]
"""


def test_structure_flags_and_innermost_are_validated(tmp_path):
    (tmp_path / "env_var_missing.yaml").write_text(STRUCTURE_RULE.format(innermost="(unclosed", cut='"yes"'))
    with pytest.raises(RuleError) as err:
        load_rules([tmp_path])
    text = "\n".join(err.value.problems)
    assert "structure.cut must be true or false" in text and "bad regex" in text
    (tmp_path / "env_var_missing.yaml").write_text(STRUCTURE_RULE.format(innermost="os\\.py:__getitem__$", cut="true"))
    rule = [r for r in load_rules([tmp_path]).rules if r.id == "env_var_missing.site_frames"][0]
    assert rule.structure["cut"] is True and rule.structure["innermost"].search("/usr/lib/os.py:__getitem__")
