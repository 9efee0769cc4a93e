"""Typed facts (JSON schema_version 2): numbers are numbers, sizes carry their unit, and every
consumer of facts (remediation, text, markdown, grouping) still shows the human form."""

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, run_dsdiag

from classifier.diagnosis.diagnose import diagnose_job
from classifier.facts import (DURATION_FACTS, FLOAT_FACTS, INT_FACTS, LIST_FACTS, SIZE_FACTS,
                              fact_text, parse_duration, parse_size, typed_value)
from classifier.jobs.group import group_key
from classifier.render.json import render_json

CORPUS = ROOT / "corpus"


def test_sizes_keep_the_unit_and_give_bytes():
    assert parse_size("3.82 GiB") == {"value": 3.82, "unit": "GiB", "bytes": 4101693768,
                                      "text": "3.82 GiB"}
    assert parse_size("120987424kB")["bytes"] == 120987424 * 1024  # the kernel's kB is KiB
    assert parse_size("7.35G")["bytes"] == round(7.35 * (1 << 30))  # TensorFlow's bare letter
    assert parse_size("926. GiB")["value"] == 926.0                 # numpy's three digits
    assert parse_size("2051.33 MB")["bytes"] == 2051330000  # hub downloads print decimal MB
    assert parse_size("1073741824 bytes") == {"value": 1073741824, "unit": "B",
                                              "bytes": 1073741824, "text": "1073741824 bytes"}
    assert parse_size("515000000")["text"] == "515000000 bytes"  # Slurm prints bare bytes
    assert parse_size("25,600,000 bytes")["bytes"] == 25600000  # CuPy < 6 groups thousands
    assert parse_size("1,5 GiB") is None  # a decimal comma is no thousands group
    assert parse_size("12 parsecs") is None
    assert parse_duration("600000ms")["seconds"] == 600.0
    assert parse_duration("1800s") == {"value": 1800, "unit": "s", "seconds": 1800, "text": "1800s"}


def test_a_value_that_does_not_read_as_its_type_stays_a_string():
    assert typed_value("port", "29,500") == 29500 and typed_value("world_size", "2.0") == 2
    assert typed_value("port", "http") == "http"  # a user rule capturing words under "port"
    assert typed_value("requested", "a lot") == "a lot"
    assert typed_value("torch_cuda", "12.1") == "12.1"  # versions are not numbers
    assert typed_value("ranks", "1, 3") == [1, 3]
    assert fact_text(parse_size("71.30 GiB")) == "71.30 GiB" and fact_text(1.0) == "1"


def _check_types(facts, where):
    for name, value in facts.items():
        if name in INT_FACTS:
            assert type(value) is int, (where, name, value)
        elif name in FLOAT_FACTS:
            assert type(value) is float, (where, name, value)
        elif name in SIZE_FACTS:
            assert isinstance(value, dict) and type(value["bytes"]) is int, (where, name, value)
            assert isinstance(value["value"], (int, float)) and isinstance(value["unit"], str)
        elif name in DURATION_FACTS:
            assert isinstance(value, dict) and isinstance(value["seconds"], (int, float))
        elif name in LIST_FACTS:  # ranks, an Xid trend's codes
            assert value and all(type(r) is int for r in value), (where, name, value)
        else:
            assert isinstance(value, str), (where, name, value)


def test_every_corpus_log_gives_typed_facts_of_every_kind():
    """All labelled logs, real pastes included: each fact has the type its name promises."""
    seen = {"int": 0, "float": 0, "size": 0, "duration": 0, "ranks": 0}
    for log in sorted(CORPUS.glob("**/*.log*")):
        out = io.StringIO()
        render_json(diagnose_job([str(log)], use_model=False), out)
        d = json.loads(out.getvalue())  # what `--format json` prints, read back
        for finding in [d] + d["secondary"]:
            _check_types(finding["facts"], log)
            for name in finding["facts"]:
                kind = ("int" if name in INT_FACTS else "float" if name in FLOAT_FACTS else
                        "size" if name in SIZE_FACTS else "duration" if name in DURATION_FACTS
                        else "ranks" if name == "ranks" else None)
                if kind:
                    seen[kind] += 1
        assert not any("'bytes':" in step or "'value':" in step for step in d["remediation"])
    assert all(seen.values()), seen  # the corpus exercises every kind


def test_json_on_stdout_compares_as_numbers_and_renders_stay_human():
    demo = ROOT / "examples" / "zero3_oom_rank3_of_16.log"
    d = json.loads(run_dsdiag("--format", "json", demo).stdout)
    facts = d["facts"]
    assert d["schema_version"] == 2
    assert facts["gpu"] == 3 and facts["world_size"] == 16 and facts["ranks"] == [3]
    assert facts["requested"] == {"value": 3.82, "unit": "GiB", "bytes": 4101693768,
                                  "text": "3.82 GiB"}
    assert facts["total"]["bytes"] > facts["allocated"]["bytes"] > facts["free"]["bytes"]
    assert any("3.82 GiB on GPU 3, which had 1.07 GiB free out of 79.15 GiB" in step
               for step in d["remediation"])
    text = run_dsdiag("--format", "text", "--color", "never", demo).stdout.decode()
    markdown = run_dsdiag("--format", "markdown", demo).stdout.decode()
    assert "  requested: 3.82 GiB\n" in text and "  gpu: 3\n" in text
    assert "- allocated: `71.30 GiB`" in markdown
    assert "'value'" not in text + markdown and "'bytes'" not in text + markdown


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq not installed")
def test_jq_compares_the_port_as_a_number():
    log = ROOT / "tests" / "logs" / "pdsh_port.log"
    out = run_dsdiag("--format", "json", log).stdout
    jq = subprocess.run(["jq", "-e", ".facts.port == 29500"], input=out, capture_output=True)
    assert jq.returncode == 0, jq.stdout


def test_grouping_keys_read_typed_values_as_the_log_wrote_them():
    typed = {"category": "fp16_overflow", "rule": "fp16_overflow.x", "source": "rule",
             "facts": {"min_scale": 1.0, "port": 29500, "requested": parse_size("2.00 GiB")}}
    assert group_key(typed) == "fp16_overflow.x min_scale=1 port=29500"
    stepped = {"category": "scheduler_config", "rule": "scheduler_config.stepped_past_total",
               "source": "rule", "facts": {"steps_taken": 1001, "total_steps": 1000}}
    assert group_key(stepped) == "scheduler_config.stepped_past_total"  # counters vary by run


def test_schema_version_2_is_documented_with_its_changes():
    readme = Path(ROOT / "README.md").read_text()
    assert "### The JSON contract (`schema_version` 2)" in readme
    assert "Changed from 1" in readme
