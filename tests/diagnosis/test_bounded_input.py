"""Decompression bombs stop at the ratio or size limit with a warning; real logs are read whole."""

import bz2
import gzip
import json
import lzma

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
