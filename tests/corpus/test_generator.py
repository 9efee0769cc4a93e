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


def test_gpu_ingest_rebuilds_the_committed_sidecars_and_refuses_a_log_without_its_signature(tmp_path):
    # The GPU scenarios run only where a GPU is lent; what CI can check is that ingesting their
    # captured logs writes the sidecars the corpus holds, and that a wrong capture is refused.
    import json
    src, out = tmp_path / "captured", tmp_path / "corpus"
    src.mkdir()
    results = {}
    for name in ("oom_alloc_torchrun", "hf_trainer_batch_mismatch", "healthy_bf16_nccl_info"):
        committed = next((ROOT / "corpus").glob(f"*/gpu_{name}.yaml"))
        meta = yaml.safe_load(committed.read_text())
        (src / f"{name}.log").write_bytes(committed.with_suffix(".log").read_bytes())
        results[name] = {"command": meta["produced_by"], "exit_code": meta["exit_code"]}
    # a capture that ended without its failure (the OOM log of another scenario)
    (src / "dup_gpu_nccl.log").write_bytes((src / "oom_alloc_torchrun.log").read_bytes())
    results["dup_gpu_nccl"] = {"command": "x", "exit_code": 1}
    (src / "manifest.json").write_text(json.dumps({"versions": {"torch": "2.11.0+cu130"}, "results": results}))
    proc = subprocess.run([sys.executable, str(ROOT / "corpus" / "generate" / "gpu" / "run_gpu.py"),
                           "ingest", str(src), str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "skip dup_gpu_nccl" in proc.stdout, proc.stdout + proc.stderr
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))
    assert written == ["batch_size_mismatch/gpu_hf_trainer_batch_mismatch.yaml",
                       "gpu_oom/gpu_oom_alloc_torchrun.yaml", "none/gpu_healthy_bf16_nccl_info.yaml"]
    for path in written:
        new, old = (yaml.safe_load((base / path).read_text()) for base in (out, ROOT / "corpus"))
        assert (new["label"], new["evidence_lines"]) == (old["label"], old["evidence_lines"])
        assert new["origin"] == "real-run" and new["family"] == old["family"]
