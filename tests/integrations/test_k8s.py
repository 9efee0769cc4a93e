"""Kubernetes: the termination message, the per-category exit codes, the verdict, the docs."""

import re

import pytest
import yaml

from classifier import confidence, taxonomy
from classifier.integrations.k8s import MAX_BYTES, termination_message
from classifier.taxonomy import (ALL_IDS, CATEGORIES, FIX_FIRST_BAND, RETRYABLE_BAND,
                                 k8s_exit_code, retry_verdict)
from conftest import DEMO, ROOT, diagnose_json, run_dsdiag

SECRET_LINE = b"[rank0]: KeyError: 'login failed for hf_EXAMPLEexampleEXAMPLEexample0123456'\n"


def test_every_category_has_a_verdict_and_a_code_in_its_band():
    codes = [k8s_exit_code(c) for c in ALL_IDS]
    assert len(codes) == len(set(codes))
    for category, row in CATEGORIES.items():
        reason = row.retry_reason
        assert isinstance(row.retryable, bool) and row.layer in taxonomy.LAYERS
        band = RETRYABLE_BAND if row.retryable else FIX_FIRST_BAND
        assert k8s_exit_code(category) in band, category
        assert reason and "\n" not in reason and len(reason) < 160
    assert k8s_exit_code("none") == 0 and k8s_exit_code("unknown") == 1
    # Never a code the shell or the runtime uses for something else.
    assert not {2, 126, 127} & set(codes) and all(c < 128 for c in codes)


def test_install_and_config_fix_first_network_nccl_hardware_retry():
    for category, row in CATEGORIES.items():
        if row.layer in ("install", "config"):
            assert retry_verdict(category)["retryable"] is False, category
    for category in ("nccl_timeout", "nccl_network", "gpu_hardware", "connection_failure"):
        assert retry_verdict(category)["retryable"] is True
    assert retry_verdict("unknown")["retryable"] is None
    assert retry_verdict("none")["retryable"] is None


def test_json_carries_the_verdict():
    _, d = diagnose_json(DEMO)
    assert d["retryable"] is False and "GPU memory" in d["retry_reason"]


def test_termination_log_is_compact_and_exit_code_follows_the_table(tmp_path):
    path = tmp_path / "termination-log"
    proc = run_dsdiag(f"--k8s-termination-log={path}", DEMO)
    assert proc.returncode == 107
    text = path.read_text()
    lines = text.splitlines()
    assert lines[0] == "dsdiag: gpu_oom [config] fix first (exit 107)"
    assert lines[2].startswith("evidence: ") and "CUDA out of memory" in lines[2]
    assert lines[3] == "culprit: rank 3 on gpu-node-01: the other 15 ranks lost their connection to it or timed out waiting for it"
    assert lines[4].startswith("next: ") and len(text.encode()) <= MAX_BYTES
    assert proc.stdout.decode().startswith("gpu_oom")  # the normal report still goes to stdout


def test_termination_log_with_tee_and_a_retryable_failure(tmp_path):
    log = (b"[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
           b"unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
           b"[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call "
           b"failed or device error.\n"
           b"[rank1]: Last error:\n[rank1]: socket.c:540 NCCL WARN Net : Connection closed by remote peer "
           b"10.0.0.7<41204>\n")
    path = tmp_path / "term"
    proc = run_dsdiag("--tee", "--k8s-termination-log", path, stdin=log)
    assert proc.stdout == log
    first = path.read_text().splitlines()[0]
    category = first.split()[1]
    assert retry_verdict(category)["retryable"] is True, first
    assert proc.returncode == k8s_exit_code(category) and proc.returncode in RETRYABLE_BAND


def test_termination_message_stays_under_4096_bytes_on_a_utf8_boundary():
    d = {"category": "gpu_oom", "layer": "config", "title": "t" * 5000, "retryable": False,
         "retry_reason": "r" * 5000, "remediation": ["Checklist: c", "ü" * 5000],
         "evidence": [{"file": "x.log", "line": 1, "rank": 3, "text": "€" * 20000}]}
    msg = termination_message(d)
    raw = msg.encode("utf-8")
    assert len(raw) <= MAX_BYTES and raw.decode("utf-8") == msg
    assert msg.startswith("dsdiag: gpu_oom [config] fix first (exit 107)\n")
    tiny = termination_message(d, limit=100)
    assert len(tiny.encode()) <= 100 and tiny.endswith("…\n")


def test_termination_log_is_redacted_unless_asked(tmp_path):
    path = tmp_path / "term"
    run_dsdiag(f"--k8s-termination-log={path}", stdin=SECRET_LINE)
    assert "[REDACTED:huggingface-token]" in path.read_text()
    run_dsdiag(f"--k8s-termination-log={path}", "--no-redact", stdin=SECRET_LINE)
    assert "hf_EXAMPLEexample" in path.read_text()


def test_a_log_file_swallowed_as_path_is_not_overwritten(tmp_path):
    log = tmp_path / "job.log"
    log.write_bytes(DEMO.read_bytes())
    proc = run_dsdiag("--k8s-termination-log", log)
    assert proc.returncode == 2 and b"refusing to overwrite" in proc.stderr
    assert log.read_bytes() == DEMO.read_bytes()


def _manifest():
    docs = list(yaml.safe_load_all((ROOT / "examples" / "k8s-job.yaml").read_text()))
    return next(d for d in docs if d and d.get("kind") == "Job")


def test_example_job_manifest_matches_the_exit_code_table():
    job = _manifest()
    spec = job["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"  # podFailurePolicy requires it
    rules = spec["podFailurePolicy"]["rules"]
    by_action = {}
    for rule in rules:
        if "onExitCodes" in rule:
            by_action.setdefault(rule["action"], set()).update(rule["onExitCodes"]["values"])
    fix_first = {row.exit_code for row in CATEGORIES.values() if not row.retryable}
    retryable = {row.exit_code for row in CATEGORIES.values() if row.retryable}
    assert by_action["FailJob"] == fix_first
    assert by_action.get("Count", set()) == retryable
    container = spec["template"]["spec"]["containers"][0]
    script = " ".join(container.get("command", []) + container.get("args", []))
    assert "--tee" in script and "--k8s-termination-log" in script and "PIPESTATUS" in script
    for rule in rules:
        if "onExitCodes" in rule:
            assert rule["onExitCodes"]["containerName"] == container["name"]


def test_docs_table_matches_the_code():
    text = (ROOT / "docs" / "integrations.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z0-9_]+)` \| (\d+) \|", text, flags=re.MULTILINE))
    assert {k: int(v) for k, v in rows.items()} == {c: k8s_exit_code(c) for c in ALL_IDS}


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_docs_state_each_verdict(category):
    text = (ROOT / "docs" / "integrations.md").read_text()
    row = re.search(rf"^\| `{category}` \| \d+ \| (retry|fix first) \|", text, flags=re.MULTILINE)
    assert row, category
    assert (row.group(1) == "retry") == CATEGORIES[category].retryable


@pytest.mark.parametrize("launcher,want", [
    (f"cat '{DEMO}'; exit 1", 107),             # diagnosed: dsdiag's code
    ("echo step 1 loss 2.0; exit 0", 0),         # training succeeded
    ("echo step 1 loss 2.0; exit 3", 3),         # failed, nothing in the log: launcher's code
])
def test_the_manifest_script_exits_as_documented(tmp_path, launcher, want):
    import os
    import subprocess
    import sys
    container = _manifest()["spec"]["template"]["spec"]["containers"][0]
    script = container["args"][0]
    script = script.replace("deepspeed --num_gpus 8 train.py --deepspeed ds_config.json",
                            f"({launcher})")
    script = script.replace("dsdiag ", f"'{sys.executable}' -m classifier ")
    script = script.replace("--k8s-termination-log", f"--k8s-termination-log={tmp_path / 'term'}")
    script = script.replace("/workspace/out/dsdiag.json", str(tmp_path / "dsdiag.json"))
    proc = subprocess.run(["/bin/bash", "-c", script], capture_output=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == want, proc.stderr.decode()
    assert (tmp_path / "term").read_text().startswith("dsdiag: ")


# A rank ended by SIGKILL and nothing else: host_oom's symptom rule, 0.6 (it may as well have
# been a time limit or an operator's kill).
BARE_SIGKILL = (b"[2024-05-01 10:00:00,000] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4242\n"
                b"[2024-05-01 10:00:01,000] [ERROR] [launch.py:321:sigkill_handler] ['python', "
                b"'train.py'] exits with return code = -9\n")
# The CLI with a text model that knows one word and is sure of it (the shipped one may be
# silent): its guess of gpu_oom, a fix-first row, on a failure no rule explains.
MODEL_GUESS_CLI = """
import sys
from classifier.diagnosis import fallback
fallback._MODEL = fallback.TextModel({"classes": ["gpu_oom", "unknown"], "vocabulary": {"memmory": 0},
                                      "idf": [1.0], "coef": [[4.0], [-4.0]], "intercept": [0.0, 0.0],
                                      "threshold": 0.5})
from classifier.cli import main
sys.exit(main(sys.argv[1:]))
"""
MODEL_GUESS_LOG = (b"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                   b"RuntimeError: the GPU ran out of memmory while allocating activations\n")


def test_a_symptom_does_not_fail_the_job_for_good(tmp_path):
    term = tmp_path / "term"
    proc = run_dsdiag(f"--k8s-termination-log={term}", "--format", "json", stdin=BARE_SIGKILL)
    import json
    d = json.loads(proc.stdout)
    assert taxonomy.CATEGORIES[d["category"]].retryable is False, d["category"]  # a fix-first row
    assert d["source"] == "rule" and d["confidence"] < confidence.FIX_FIRST
    assert d["retryable"] is None and "symptom" in d["retry_reason"]
    assert proc.returncode == taxonomy.OUTCOMES["unknown"].exit_code
    assert proc.returncode not in FIX_FIRST_BAND
    assert term.read_text().splitlines()[0].endswith("no verdict (exit 1)")


def test_a_model_guess_does_not_fail_the_job_for_good(tmp_path):
    import json
    import subprocess
    import sys
    term = tmp_path / "term"
    proc = subprocess.run([sys.executable, "-c", MODEL_GUESS_CLI, f"--k8s-termination-log={term}",
                           "--format", "json", "-"], input=MODEL_GUESS_LOG, capture_output=True,
                          cwd=ROOT, timeout=60)
    d = json.loads(proc.stdout)
    assert d["source"] == "model" and d["confidence"] >= confidence.FIX_FIRST - 0.05
    assert taxonomy.CATEGORIES[d["category"]].retryable is False
    assert d["retryable"] is None and proc.returncode == 1


def test_a_whole_rule_cause_still_fails_the_job():
    proc = run_dsdiag("--k8s-termination-log=/dev/null", DEMO)
    assert proc.returncode == k8s_exit_code("gpu_oom") and proc.returncode in FIX_FIRST_BAND
    _, d = diagnose_json(DEMO)
    assert d["confidence"] >= confidence.FIX_FIRST and d["retryable"] is False
