"""Decompression bombs stop at the ratio or size limit with a warning; real logs are read whole."""

import bz2
import gzip
import io
import json
import lzma
import os
import subprocess
import sys

import pytest

from classifier.diagnosis.read import RATIO_FLOOR, InputLimits, Warnings, byte_chunks
from conftest import ROOT, run_dsdiag

MEMBER = 8 << 20  # one compressed member of a bomb; members are repeated, never built whole


def _zstd(data):
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor().compress(data)


COMPRESSORS = {
    "gz": lambda d: gzip.compress(d, compresslevel=9),
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "zst": _zstd,
}


def _bomb(tmp_path, kind, fill=b"\n", inflated=RATIO_FLOOR * 4):
    """A bomb of `inflated` bytes of `fill`: one compressed member, concatenated."""
    member = COMPRESSORS[kind](fill * MEMBER)
    path = tmp_path / f"bomb.log.{kind}"
    path.write_bytes(member * (inflated // MEMBER))
    return path


def _read_all(path, limits=None):
    warnings = Warnings()
    total = biggest = 0
    for block in byte_chunks(str(path), warnings, limits=limits):
        total += len(block)
        biggest = max(biggest, len(block))
    return total, biggest, [w["code"] for w in warnings.as_list()]


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
@pytest.mark.parametrize("fill", [b"\n", b"\0"], ids=["newlines", "zeros"])
def test_a_bomb_stops_just_past_the_ratio_floor_with_a_warning(tmp_path, kind, fill):
    total, biggest, codes = _read_all(_bomb(tmp_path, kind, fill))
    assert "input_limit" in codes
    assert total <= RATIO_FLOOR + (16 << 20)   # stopped, not read to its 256 MiB
    assert biggest <= 16 << 20                 # no step inflates a whole frame at once


def test_the_absolute_limit_cuts_at_the_byte_count(tmp_path):
    total, _, codes = _read_all(_bomb(tmp_path, "gz", inflated=MEMBER * 2),
                                InputLimits(max_ratio=10 ** 9, max_decompressed=3 << 20))
    assert total == 3 << 20 and codes == ["input_limit"]


def test_a_bomb_within_a_raised_ratio_is_read_whole(tmp_path):
    path = _bomb(tmp_path, "gz", inflated=MEMBER * 10)  # 80 MiB at ~1000x
    total, _, codes = _read_all(path, InputLimits(max_ratio=5000))
    assert total == MEMBER * 10 and codes == []


def test_compressed_corpus_logs_are_never_cut():
    logs = sorted((ROOT / "corpus").rglob("*.log.gz"))
    assert logs
    for path in logs:
        assert "input_limit" not in _read_all(path)[2], path


@pytest.mark.parametrize("via", ["file", "stdin"])
def test_cli_reports_the_limit_and_still_diagnoses_what_was_read(tmp_path, via):
    # A real failure, then a bomb member: the failure is diagnosed, the bomb is cut short.
    failure = (ROOT / "examples" / "zero3_oom_rank3_of_16.log").read_bytes()
    path = tmp_path / "job.log.gz"
    path.write_bytes(gzip.compress(failure) + gzip.compress(b"\n" * MEMBER, 9) * 20)
    args = ("--format", "json", "--max-decompressed", "32M")
    proc = run_dsdiag(*args, path) if via == "file" else \
        run_dsdiag(*args, "-", stdin=path.read_bytes())
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    assert result["category"] == "gpu_oom"
    warning = [w for w in result["warnings"] if w["code"] == "input_limit"]
    assert warning and "32 MiB" in warning[0]["message"]


@pytest.mark.parametrize("args,env", [
    (("--max-ratio", "0.5"), {}),
    (("--max-decompressed", "lots"), {}),
    ((), {"DSDIAG_MAX_RATIO": "nan"}),
    ((), {"DSDIAG_MAX_DECOMPRESSED": "9" * 5000}),
])
def test_a_bad_limit_is_a_one_line_usage_error(tmp_path, args, env):
    log = tmp_path / "x.log"
    log.write_text("hello\n")
    proc = run_dsdiag(*args, log, env=env)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_storm_of_empty_lines_goes_through_the_prefilter(tmp_path, compress):
    # Every line costs the full pipeline the same, however short: 2M empty lines must not
    # all be normalised and matched, only the few the byte-speed prefilter picks.
    from classifier.diagnosis import diagnose
    from classifier.rules.load import default_rules
    data = b"\n" * 2_000_000
    path = tmp_path / ("storm.log.gz" if compress else "storm.log")
    path.write_bytes(gzip.compress(data, 9) if compress else data)
    lines = diagnose._raw_lines(str(path), Warnings(), default_rules(), None, None, InputLimits())
    assert sum(1 for _ in lines) < 10_000


def test_numbers_of_thousands_of_digits_are_not_line_numbers_or_ranks(tmp_path):
    # Found by benchmarks/fuzz.py: int() refuses over 4,300 digits, and a frame's line number,
    # a rank label and torchelastic's root-cause rank are all converted from log text.
    from classifier.diagnosis.diagnose import diagnose_job
    digits = "9" * 8000
    log = tmp_path / "job.log"
    log.write_text("Traceback (most recent call last):\n"
                   f'  File "/opt/train.py", line {digits}, in step\n'
                   f"[rank{digits}]: RuntimeError: boom\n"
                   f"  rank      : {digits} (local_rank: 0)\n"
                   "RuntimeError: boom\n")
    result = diagnose_job([str(log)])
    assert result["category"] == "unknown"
    assert json.loads(json.dumps(result, allow_nan=False)) == result


def test_every_number_read_from_the_log_survives_thousands_of_digits(tmp_path):
    # Found by benchmarks/fuzz.py (input 25164 of seed 1): an Xid line's pid of 6,124 digits
    # crashed the diagnosis. Each line below reaches one place that reads a number out of the
    # log: culprit and topology fields, a Slurm host list, a loss scale, a size fact.
    from classifier.diagnosis.diagnose import diagnose_job
    from classifier.render import render
    n = "7" * 6000
    log = tmp_path / "job.log"
    log.write_text("\n".join([
        f"[host-a:0]: NVRM: Xid (PCI:0000:3b:00): 79, pid={n}, GPU has fallen off the bus.",
        f"[host-a:0]: Out of memory: Killed process {n} (python)",
        f"[host-a:0]: [launch.py:319:sigkill_handler] --local_rank={n} exits with return code = -9",
        f"[host-a:0]: failed (exitcode: -9) local_rank: {n} (pid: {n}) of binary: python",
        f"[host-a:0]: [E ProcessGroupNCCL.cpp:475] [Rank {n}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE) ran for 1800000 milliseconds",
        f"[host-a:0]: [Rank 1] last enqueued NCCL work: {n}, last completed NCCL work: 1.",
        f"[host-a:0]: [Rank 1] step {n} loss 2.0",
        f"[host-a:0]: host-a:11:22 [0] NCCL INFO comm 0x55d rank {n} nranks {n} cudaDev 0 busId 1000",
        f"[host-a:0]: dist_world_size={n} global_ranks=[{n}, 1] global_world_sizes=[{n}]",
        f"[host-a:0]: SLURM_JOB_NODELIST=node[0-99999999],gpu[{n}] SLURM_TASKS_PER_NODE={n}",
        f"[host-a:0]: nnodes={n}, num_local_procs={n}, node_rank={n}",
        f"[host-a:0]: process {n} spawned with command: ['python', '--local_rank={n}']",
        f"[host-a:0]: [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 2, "
        f"reducing to 1{n}",
        f"[host-a:0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1{n} GiB. "
        f"GPU 0 has a total capacity of 79.15 GiB of which nan GiB is free.",
        ""]))
    result = diagnose_job([str(log)])
    assert result["category"] != "none"
    assert json.loads(json.dumps(result, allow_nan=False)) == result
    from classifier.diagnosis.topology import MAX_HOSTS, expand_hostlist
    assert expand_hostlist("node[0-99999999]") == []  # not 100 M names in memory
    assert len(expand_hostlist(f"n[1-{MAX_HOSTS - 1}]")) == MAX_HOSTS - 1
    for fmt in ("text", "json", "markdown"):
        out = io.StringIO()
        render(result, fmt, out)
        assert out.getvalue()


def test_a_bug_is_one_line_and_exit_70_never_a_traceback(tmp_path):
    # The last guard: whatever escapes the diagnosis is named on one line, secrets redacted.
    code = ("import sys; import classifier.diagnosis.diagnose as d\n"
            "def boom(*a, **k): raise ValueError('token=ghp_' + 'a1' * 18 + ' \\x1b]52;c;eA==\\x07')\n"
            "d.diagnose_job = boom\n"
            "from classifier.cli import main; sys.exit(main(['README.md']))\n")
    env = {k: v for k, v in os.environ.items() if k != "DSDIAG_DEBUG"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 70
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("dsdiag: internal error: ValueError at <string>:2")
    assert "ghp_" + "a1" * 18 not in proc.stderr and "\x1b" not in proc.stderr
