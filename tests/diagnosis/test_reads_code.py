"""`reads_code: true` lets a rule match a line that reads as source code (the warnings module's
echo of the statement that warned); every other rule still skips such lines (match.scan)."""

import textwrap

import pytest

from classifier.diagnosis.match import KeywordIndex, scan
from classifier.diagnosis.normalize import normalize
from classifier.diagnosis.read import RawLine
from classifier.rules.load import RuleError, load_rules

RULE_FILE = textwrap.dedent(r"""
    category: version_mismatch
    rules:
      - id: version_mismatch.rc_reads
        title: reads the echo
        reads_code: true
        keywords: ["probe_warn"]
        patterns: ['^\s{0,8}warnings\.warn\(probe_warn\b']
        examples:
          match: ['warnings.warn(probe_warn.format(x))', '  warnings.warn(probe_warn % x)', 'warnings.warn(probe_warn)']
          no_match: ['probe_warn = 1', 'x']
      - id: version_mismatch.rc_skips
        title: does not read code
        keywords: ["probe_warn"]
        patterns: ['probe_warn']
        examples:
          match: ['probe_warn fired', 'a probe_warn', 'probe_warn!']
          no_match: ['warnings.warn(probe_warn)', 'x']
    """)


def _hits(folder, text):
    rules = load_rules([folder])
    lines = normalize([RawLine("x", i + 1, t) for i, t in enumerate(text.splitlines())])
    return {hit.rule.id.split(".")[1] for hit in scan(lines, KeywordIndex(rules.rules))}


@pytest.fixture()
def folder(tmp_path):
    (tmp_path / "version_mismatch.yaml").write_text(RULE_FILE)
    return tmp_path


def test_only_a_reads_code_rule_matches_a_code_line(folder):
    assert _hits(folder, "  warnings.warn(probe_warn.format(device_name))\n") == {"rc_reads"}


def test_output_lines_are_read_by_both(folder):
    assert _hits(folder, "probe_warn fired\n") == {"rc_skips"}


def test_reads_code_must_be_a_boolean(folder):
    path = folder / "version_mismatch.yaml"
    path.write_text(RULE_FILE.replace("reads_code: true", "reads_code: sometimes"))
    with pytest.raises(RuleError, match="reads_code"):
        load_rules([folder])


ECHO = '  warnings.warn(incompatible_device_warn.format(device_name, capability, " ".join(arch_list), device_name))\n'


def _category(tmp_path, text):
    from classifier.diagnosis.diagnose import diagnose_job
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return diagnose_job([str(log)], use_model=False)["category"]


def test_capability_echo_explains_a_cut_collective(tmp_path):
    text = ECHO + (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.8/site-packages/torch/multiprocessing/spawn.py", line 69, in _wrap\n'
        "    fn(i, *args)\n"
        '  File "/work/main.py", line 102, in worker\n'
        "    torch.distributed.barrier()\n"
        '  File "/opt/conda/lib\n')
    assert _category(tmp_path, text) == "version_mismatch"


def test_capability_echo_yields_to_an_error_a_rule_reads(tmp_path):
    text = ECHO + (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.7/site-packages/torch/cuda/__init__.py", line 317, in get_device_properties\n'
        '    raise AssertionError("Invalid device id")\n'
        "AssertionError: Invalid device id\n")
    assert _category(tmp_path, text) == "device_visibility"
