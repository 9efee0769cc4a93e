"""Input hazards from crashed jobs: each must give an answer, a warning or a one-line error."""

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from classifier.diagnosis.read import CHUNK, MAX_LINE
from conftest import DEMO, ROOT, default_sigint, diagnose_json, run_dsdiag

OOM = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB"


def test_nul_bytes_after_the_first_read_chunk(tmp_path):
    path = tmp_path / "nul.log"
    path.write_bytes(b"x" * (CHUNK + 10) + b"\n" + b"\x00" * 4096 + OOM + b"\x00\n")
    code, d = diagnose_json(path)
    assert (code, d["category"], d["evidence"][0]["line"]) == (0, "gpu_oom", 2)
    assert "nul_bytes" in {w["code"] for w in d["warnings"]}


def test_multibyte_utf8_split_across_a_chunk_edge(tmp_path):
    from classifier.diagnosis.diagnose import diagnose_job
    path = tmp_path / "utf8.log"
    text = "[rank1]: │ Résumé — état ✓ │\n".encode() + b"\xff\xfe broken \xc3\n" + OOM + b"\n"
    path.write_bytes(text)
    for size in (1, 2, 3, 5, 7):
        d = diagnose_job([str(path)], chunk_size=size)
        assert d["category"] == "gpu_oom" and d["evidence"][0]["line"] == 3


def test_utf16_log_with_bom(tmp_path):
    path = tmp_path / "win.log"
    path.write_bytes(("step 1\r\n" + OOM.decode() + "\r\n").encode("utf-16"))
    code, d = diagnose_json(path)
    assert (code, d["category"], d["evidence"][0]["line"]) == (0, "gpu_oom", 2)


def test_100mb_line_with_the_evidence_at_its_start(tmp_path):
    path = tmp_path / "huge.log"
    with path.open("wb") as f:
        f.write(OOM + b" ")
        block = b"A" * (1 << 20)
        for _ in range(100):
            f.write(block)
        f.write(b"\nlast line\n")
    start = time.monotonic()
    code, d = diagnose_json(path)
    assert (code, d["category"]) == (0, "gpu_oom")
    assert len(d["evidence"][0]["text"]) <= MAX_LINE
    assert "line_truncated" in {w["code"] for w in d["warnings"]}
    assert time.monotonic() - start < 60


def test_truncated_gzip_gives_a_partial_result_and_a_warning(tmp_path):
    body = DEMO.read_bytes() * 50
    data = gzip.compress(body)
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    code, d = diagnose_json(path)
    assert (code, d["category"]) == (0, "gpu_oom")
    assert "truncated_input" in {w["code"] for w in d["warnings"]}


@pytest.mark.parametrize("how", ["file", "stdin", "blank lines"])
def test_empty_input_is_a_none_without_confidence(tmp_path, how):
    # An empty log is no evidence of a healthy run: a failed job's output may simply be gone.
    path = tmp_path / "empty.log"
    path.write_bytes(b"\n \n\n" if how == "blank lines" else b"")
    code, d = diagnose_json(path) if how != "stdin" else diagnose_json(stdin=b"")
    assert (code, d["category"], d["confidence"]) == (1, "none", 0.0)
    assert [w["code"] for w in d["warnings"]] == ["empty_input"]


def test_unreadable_file_is_a_one_line_error(tmp_path):
    path = tmp_path / "secret.log"
    path.write_bytes(OOM)
    os.chmod(path, 0)
    cmd = [sys.executable, "-m", "classifier", str(path)]
    if os.getuid() == 0:
        # root reads anything; without the DAC capabilities it is refused like any user.
        cmd = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] + cmd
    proc = subprocess.run(cmd, capture_output=True, cwd=ROOT, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Permission denied" in err and err.count("\n") == 1, err


def test_read_error_after_open_is_a_one_line_error():
    # /proc/self/mem opens fine and fails on the first read (EIO at address 0).
    proc = run_dsdiag("/proc/self/mem")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err, err


def test_fifo_is_read_like_a_pipe(tmp_path):
    fifo = tmp_path / "job.fifo"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as f:
            f.write(DEMO.read_bytes())

    thread = threading.Thread(target=writer)
    thread.start()
    code, d = diagnose_json(fifo)
    thread.join(timeout=30)
    assert (code, d["category"]) == (0, "gpu_oom")


def test_ctrl_c_exits_130_without_traceback():
    proc = subprocess.Popen([sys.executable, "-m", "classifier"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                            preexec_fn=default_sigint)
    proc.stdin.write(b"step 1\n")
    proc.stdin.flush()
    time.sleep(1.5)  # let it start reading the never-ending pipe
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and err.strip() == b"dsdiag: interrupted"


def test_directory_without_log_files_is_a_one_line_error(tmp_path):
    # A directory is read as one job's per-rank files (classifier.jobs.discover); with none it is an error.
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "model.bin").write_bytes(b"\x00" * 16)
    proc = run_dsdiag(tmp_path)
    assert proc.returncode == 2 and proc.stderr.decode().count("\n") == 1


def test_warning_list_is_part_of_json(tmp_path):
    path = tmp_path / "w.log"
    path.write_bytes(b"\x00" + OOM + b"\n")
    _, d = diagnose_json(path)
    assert json.dumps(d["warnings"]) and d["warnings"][0]["code"] == "nul_bytes"


def _random_bytes(n, seed=0):
    import random
    return random.Random(seed).randbytes(n)


@pytest.mark.parametrize("name,data", [
    ("random.bin", _random_bytes(50000)),
    ("model.pt.gz", gzip.compress(_random_bytes(50000, seed=1))),        # binary inside gzip
    ("core", b"\x7fELF\x02\x01\x01" + _random_bytes(30000, seed=2)),
    ("image.png", b"\x89PNG\r\n\x1a\n" + _random_bytes(20000, seed=3)),
])
def test_input_that_is_not_text_is_a_none_without_confidence(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    code, d = diagnose_json(path)
    assert (code, d["category"], d["confidence"]) == (1, "none", 0.0)
    assert "not_text" in {w["code"] for w in d["warnings"]}
    assert d["title"].startswith("Nothing to diagnose")


def test_a_log_with_nul_padding_and_a_binary_tail_is_still_text(tmp_path):
    # A node that crashed leaves NUL padding; a log may end in a few garbage bytes.
    path = tmp_path / "crashed.log"
    path.write_bytes(DEMO.read_bytes() + b"\x00" * 100000 + _random_bytes(2000))
    code, d = diagnose_json(path)
    assert (code, d["category"], d["confidence"]) == (0, "gpu_oom", 0.9)
    assert "not_text" not in {w["code"] for w in d["warnings"]}


@pytest.mark.parametrize("name,magic", [("logs.zip", None), ("logs.7z", b"7z\xbc\xaf\x27\x1c")])
def test_an_archive_is_refused_in_one_line_exit_2(tmp_path, name, magic):
    import zipfile
    path = tmp_path / name
    if magic is None:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.write(DEMO, "rank3.log")
    else:
        path.write_bytes(magic + _random_bytes(1000))
    proc = run_dsdiag(path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert str(path) in err and "archive" in err and "unpack" in err
    tee = run_dsdiag("--tee", stdin=path.read_bytes())  # passed through, then refused
    assert tee.returncode == 2 and tee.stdout == path.read_bytes()
    assert tee.stderr.decode().count("\n") == 1 and "<stdin>: a " in tee.stderr.decode()


def test_zstd_is_read_like_gzip(tmp_path):
    zstandard = pytest.importorskip("zstandard")  # a declared dependency: present in every install
    data = zstandard.ZstdCompressor().compress(DEMO.read_bytes())
    path = tmp_path / "job.log.zst"
    path.write_bytes(data)
    _, plain = diagnose_json(DEMO)
    for how in ("file", "stdin"):
        code, d = diagnose_json(path) if how == "file" else diagnose_json(stdin=data)
        assert (code, d["category"]) == (0, "gpu_oom")
        assert [e["line"] for e in d["evidence"]] == [e["line"] for e in plain["evidence"]]
        assert d["warnings"] == []
    # `zstd` streams of several frames (`cat a.zst b.zst`) read as one log.
    lines = DEMO.read_bytes().splitlines(keepends=True)
    frames = b"".join(zstandard.ZstdCompressor().compress(b"".join(lines[i:i + 50]))
                      for i in range(0, len(lines), 50))
    path.write_bytes(frames)
    _, d = diagnose_json(path)
    assert [e["line"] for e in d["evidence"]] == [e["line"] for e in plain["evidence"]]


def test_a_cut_zstd_stream_gives_a_partial_result_and_a_warning(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    # Lines that do not compress away, so the frame holds many blocks and the first ones decode.
    noise = b"".join(b"[rank0]: step %d digest %s\n" % (i, _random_bytes(16, i).hex().encode())
                     for i in range(20000))
    body = DEMO.read_bytes() + noise
    data = zstandard.ZstdCompressor().compress(body)
    path = tmp_path / "cut.log.zst"
    path.write_bytes(data[: len(data) * 2 // 3])
    code, d = diagnose_json(path)
    assert (code, d["category"]) == (0, "gpu_oom")
    assert "truncated_input" in {w["code"] for w in d["warnings"]}
