"""Triage workers load the rules once each, not once per job or per batch (classifier/jobs/run.py)."""

import subprocess
import sys

from conftest import DEMO, ROOT

# A fresh interpreter: a spy around load_rules, inherited by the forked workers, appends the
# pid of every call to a file; then 8 one-job batches run on 2 workers.
PROBE = r"""
import os, sys
import classifier.rules.load as load
real, log = load.load_rules, sys.argv[2]
def spy(*args, **kwargs):
    with open(log, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    return real(*args, **kwargs)
load.load_rules = spy
from classifier.jobs.run import run_local
batches = [[(f"job{i}", [sys.argv[1]])] for i in range(8)]
results = [r for _, batch in run_local(batches, 2, (), True) for r in batch]
assert len(results) == 8 and {r["category"] for r in results} == {"gpu_oom"}, results
"""


def test_each_worker_loads_the_rules_once(tmp_path):
    log = tmp_path / "loads"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(DEMO), str(log)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    pids = log.read_text().split()
    assert 1 <= len(pids) <= 2 and len(set(pids)) == len(pids), pids
