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


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_empty_input_is_none(tmp_path, how):
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    code, d = diagnose_json(path) if how == "file" else diagnose_json(stdin=b"")
    assert (code, d["category"]) == (1, "none")


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
