"""A real Slurm ends a job (scancel, the time limit): slurmstepd's own line makes the Epilog's
diagnosis `job_cancelled`. The single-node cluster of test_slurm.py, started for this module."""

import json
import subprocess
import time
from pathlib import Path

from classifier.integrations.slurm import parse_show_job
from test_slurm import _wait, slurm  # noqa: F401  (the module-scoped cluster fixture)

# A job that trains for a while: step lines, then it runs until Slurm ends it.
JOB = """#!/bin/bash
#SBATCH --job-name=pretrain
#SBATCH --output={out}/train-%j.out
{extra}
for i in 1 2 3; do echo "[2024-05-11 09:59:4$i,111] [INFO] [logging.py:96:log_dist] [Rank 0] step=${{i}}00, skipped=0"; done
sleep 600
"""


def _state(cluster, job_id):
    return parse_show_job(cluster.scontrol("show", "job", job_id)).get("JobState")


def _sidecar(cluster, job_id, timeout):
    sidecar = Path(cluster.dir / "out" / f"train-{job_id}.out.dsdiag.json")
    return json.loads(_wait(lambda: sidecar.exists() and sidecar.read_text(), timeout, "the sidecar"))


def test_a_job_cancelled_with_scancel_is_job_cancelled(slurm):  # noqa: F811
    job_id = slurm.sbatch(JOB.format(out=slurm.dir / "out", extra=""))
    out = slurm.dir / "out" / f"train-{job_id}.out"
    _wait(lambda: out.exists() and "step=300" in out.read_text(), 30, f"job {job_id} to run")
    subprocess.run(["/usr/bin/scancel", job_id], env=slurm.env, check=True, timeout=15)
    _wait(lambda: _state(slurm, job_id) == "CANCELLED", 30, f"job {job_id} to be cancelled")
    d = _sidecar(slurm, job_id, 30)
    assert (d["category"], d["rule"]) == ("job_cancelled", "job_cancelled.slurm_cancelled"), \
        f"{out.read_text()}\n{slurm.logs()}"
    assert f"JOB {job_id} ON" in d["evidence"][0]["text"] and d["retryable"] is True


def test_a_job_at_its_time_limit_is_job_cancelled(slurm):  # noqa: F811
    # Slurm's smallest limit is a minute, checked every ~30 s: this test takes one to two minutes.
    start = time.monotonic()
    job_id = slurm.sbatch(JOB.format(out=slurm.dir / "out", extra="#SBATCH --time=1"))
    _wait(lambda: _state(slurm, job_id) == "TIMEOUT", 180, f"job {job_id} to time out")
    d = _sidecar(slurm, job_id, 30)
    out = slurm.dir / "out" / f"train-{job_id}.out"
    assert (d["category"], d["rule"]) == ("job_cancelled", "job_cancelled.slurm_time_limit"), \
        f"{out.read_text()}\n{slurm.logs()}"
    assert d["facts"]["job_id"] == job_id and "--time" in "\n".join(d["remediation"])
    assert time.monotonic() - start < 200
