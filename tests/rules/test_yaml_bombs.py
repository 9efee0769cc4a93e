"""Rule files are hostile input too: alias bombs and deep nesting end in one located error line."""

import pytest
import yaml

from classifier.rules.load import builtin_rules_dir, rule_files
from classifier.rules.safeyaml import MAX_EXPANDED_NODES, safe_load_bounded
from conftest import DEMO, run_dsdiag


def _alias_bomb(levels):
    """`levels` lists of nine aliases to the previous one: 9**levels leaves from ~50 bytes a level."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines + ["category: gpu_oom", f"rules: *a{levels - 1}"]) + "\n"


def test_an_alias_bomb_is_refused_before_it_expands():
    with pytest.raises(yaml.YAMLError, match="aliases expand"):
        safe_load_bounded(_alias_bomb(7))


def test_shared_aliases_below_the_limit_still_load():
    data = safe_load_bounded(_alias_bomb(3))
    assert len(data["rules"]) == 9 and data["rules"][0][0][0] == "lol"


def test_every_builtin_rule_file_is_far_below_the_alias_limit():
    for path in rule_files(builtin_rules_dir()):
        safe_load_bounded(path.read_text(), limit=MAX_EXPANDED_NODES // 10)


@pytest.mark.parametrize("text", [
    _alias_bomb(10),                                               # 3.5 billion nodes from 600 bytes
    "category: gpu_oom\nrules: " + "[" * 990 + "]" * 990 + "\n",   # under libyaml's depth limit
    "category: gpu_oom\nrules: " + "[" * 5000 + "]" * 5000 + "\n",  # over it
])
def test_a_hostile_rules_dir_is_one_error_line_and_exit_2(tmp_path, text):
    (tmp_path / "gpu_oom.yaml").write_text(text)
    proc = run_dsdiag("--rules-dir", tmp_path, DEMO, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert err.count("\n") == 1 and err.startswith(str(tmp_path / "gpu_oom.yaml") + ":"), err
