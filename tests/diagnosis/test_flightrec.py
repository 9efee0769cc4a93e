"""Flight-recorder dumps next to the logs name the rank that never entered the collective."""

import os
import pickle
import socket
import subprocess
import sys

from conftest import ROOT

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.flightrec import dump_files, last_entered


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_real_gloo_job_s_dumps_name_the_late_rank(tmp_path):
    env = dict(os.environ, TORCH_FR_BUFFER_SIZE="2000", TORCH_FR_DUMP_TEMP_FILE=str(tmp_path / "nccl_trace_rank_"),
               OMP_NUM_THREADS="1")
    port = str(_free_port())
    outs = [open(tmp_path / f"rank{r}.log", "wb") for r in range(3)]
    procs = [subprocess.Popen([sys.executable, str(ROOT / "tests" / "fr_gloo_job.py"), str(r), port],
                              stdout=out, stderr=subprocess.STDOUT, env=env) for r, out in enumerate(outs)]
    try:
        for p in procs:
            p.wait(timeout=120)
    finally:
        for p, out in zip(procs, outs):
            p.kill()
            out.close()
    assert sorted(dump_files([str(tmp_path / "rank0.log")])) == [0, 1, 2]
    seqs = last_entered(dump_files([str(tmp_path / "rank0.log")]))
    assert {r: s for r, (s, _) in seqs.items()} == {0: 2, 1: 2, 2: 1}
    # every rank's log reports a failed allreduce, rank 2's too: only the dumps tell them apart
    logs = [str(tmp_path / f"rank{r}.log") for r in range(3)]
    assert all("RuntimeError" in open(p).read() for p in logs)
    d = diagnose_job(logs)
    assert d["category"] == "nccl_timeout"
    assert d["culprit"]["ranks"] == [2] and "flight recorder" in d["culprit"]["reason"]
    assert d["culprit"]["confidence"] == 0.9


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_a_dump_that_would_run_code_is_refused_and_ignored(tmp_path):
    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps({"entries": [_Boom()]}, protocol=2))
    (tmp_path / "nccl_trace_rank_1").write_bytes(b"\x80\x02garbage")
    (tmp_path / "job.log").write_text("x\n")
    assert last_entered(dump_files([str(tmp_path / "job.log")])) == {}
