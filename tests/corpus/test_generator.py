"""The real-run generator still works: CI regenerates a few quick scenarios from scratch.

The committed corpus keeps every captured log, so CI does not rerun them all (`make corpus`
does); these scenarios need only torch (no DeepSpeed JIT build) and finish in seconds.
"""

import os
import subprocess
import sys

import yaml

from classifier.diagnosis.diagnose import diagnose_job
from conftest import ROOT

QUICK = ("env_no_master_addr_plain", "port_held_plain_env", "cuda_on_cpu_torch_torchrun")


def test_generator_reproduces_quick_scenarios(tmp_path):
    python = os.environ.get("DSDIAG_GEN_PYTHON", sys.executable)
    args = [sys.executable, str(ROOT / "corpus" / "generate" / "run.py"), "--python", python,
            "--out", str(tmp_path)]
    for name in QUICK:
        args += ["--only", name]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=540)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    sidecars = sorted(tmp_path.rglob("*.yaml"))
    assert {p.stem for p in sidecars} == set(QUICK)
    for sidecar in sidecars:
        meta = yaml.safe_load(sidecar.read_text())
        assert meta["origin"] == "real-run" and meta["versions"]["torch"].startswith("2.13")
        d = diagnose_job([str(sidecar.with_suffix(".log"))])
        assert d["category"] == meta["label"], (sidecar.stem, d["rule"])
        assert set(meta["evidence_lines"]) & {ev["line"] for ev in d["evidence"]}


def test_generator_reproduces_a_straggler_and_names_it(tmp_path):
    # 4 gloo ranks on two fake nodes under DeepSpeed's per-node launcher; rank 2 sleeps
    python = os.environ.get("DSDIAG_GEN_PYTHON", sys.executable)
    args = [sys.executable, str(ROOT / "corpus" / "generate" / "run.py"), "--python", python,
            "--out", str(tmp_path), "--only", "culprit_stall_gloo_2x2_ds"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    sidecar = tmp_path / "nccl_timeout" / "culprit_stall_gloo_2x2_ds.yaml"
    meta = yaml.safe_load(sidecar.read_text())
    assert meta["culprit"] == {"ranks": [2], "hosts": ["node-b"]} and meta["train"] is False
    d = diagnose_job([str(sidecar.with_suffix(".log"))])
    assert d["category"] == "nccl_timeout"
    assert (d["culprit"]["ranks"], d["culprit"]["hosts"]) == ([2], ["node-b"])
