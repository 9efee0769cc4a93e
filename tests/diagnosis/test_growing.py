"""Growing files (issue 16): a live log is read up to its size at open, or followed (--follow)
until it goes quiet, its writer exits or the user stops it. A real writer process appends while
dsdiag runs as a real process; every process has a timeout."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from classifier.diagnosis.read import Warnings, read_lines
from conftest import DEMO, ROOT, default_sigint, run_dsdiag

OOM = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 "
       "has a total capacity of 79.15 GiB of which 1.07 GiB is free.")
HEALTHY = "".join(f"[rank0]: step {i} loss 1.{i}\n" for i in range(20))

# The writer: writes HEAD, says "ready", waits for a line on stdin, then appends. `lines`
# appends step lines for DELAY seconds and then TAIL; `flood` appends step lines and holes of
# NUL bytes (a crashed node's padding) faster than any reader reads, for up to 60 s.
WRITER = r"""
import os, sys, time
path, mode, delay, tail = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
with open(path, "ab", buffering=0) as f:
    f.write(sys.stdin.buffer.readline()[:-1].replace(b"\x1e", b"\n"))
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.monotonic()
    step = 0
    while time.monotonic() - start < delay:
        f.write(b"[rank0]: step %d loss 0.5\n" % step)
        step += 1
        if mode == "flood":
            os.ftruncate(f.fileno(), os.fstat(f.fileno()).st_size + (64 << 20))
        time.sleep(0.01 if mode == "flood" else 0.1)
    f.write(tail.encode() + b"\n")
    if mode == "linger":
        time.sleep(60)
"""


def _start_writer(path, head, mode, delay, tail=""):
    """A writer that has written `head` to `path` and waits for go()."""
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), mode, str(delay), tail],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    # The first stdin line is the head (one line: its newlines travel as \x1e).
    proc.stdin.write(head.encode().replace(b"\n", b"\x1e") + b"\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == b"ready\n"
    return proc


def _go(proc):
    proc.stdin.write(b"go\n")
    proc.stdin.flush()


def _dsdiag(*args):
    return subprocess.Popen([sys.executable, "-m", "classifier", "--format", "json", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                            preexec_fn=default_sigint)


def _wait_until_open(proc, path, timeout=30):
    """Wait until process `proc` holds `path` open (it has started reading it)."""
    deadline = time.monotonic() + timeout
    fd_dir = f"/proc/{proc.pid}/fd"
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if any(os.path.realpath(os.path.join(fd_dir, fd)) == str(path)
                   for fd in os.listdir(fd_dir)):
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"dsdiag never opened {path}")


def _finish(proc, timeout=60):
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return proc.returncode, json.loads(out) if out else None, err.decode()


def _stop(writer):
    writer.kill()
    writer.communicate(timeout=30)


@pytest.fixture(autouse=True)
def _linux_proc():
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to see when dsdiag has opened the file")


def test_a_file_read_while_it_grows_is_read_to_its_size_at_open_and_a_cut_line_kept(tmp_path):
    path = tmp_path / "job.log"
    path.write_text("line 1\nline 2 is cu")
    warnings = Warnings()
    lines = read_lines(str(path), warnings)
    first = next(lines)  # opened now: 21 bytes
    with path.open("a") as fh:
        fh.write("t here\n" + OOM + "\n")
    rest = list(lines)
    assert [first.text] + [r.text for r in rest] == ["line 1", "line 2 is cu"]
    assert [w["code"] for w in warnings.as_list()] == ["still_growing"]


def test_without_follow_a_log_growing_faster_than_any_reader_is_diagnosed_as_opened(tmp_path):
    # The writer extends the file by 64 MiB every 10 ms (holes of NUL bytes, with step lines):
    # reading to the end would never finish; the size at open bounds the read.
    path = tmp_path / "job.log"
    writer = _start_writer(path, DEMO.read_text(), "flood", delay=60)
    try:
        _go(writer)  # already growing when dsdiag starts (the old reader never caught up)
        code, d, err = _finish(_dsdiag(path), timeout=60)
        assert writer.poll() is None, "the writer stopped before dsdiag did"
    finally:
        _stop(writer)
        path.unlink()  # sparse, but its apparent size is tens of GB
    assert (code, d["category"]) == (0, "gpu_oom"), err
    assert "still_growing" in {w["code"] for w in d["warnings"]}


def _follow_appended_oom(path, *options):
    """dsdiag --follow OPTIONS on a log whose writer appends a CUDA OOM a second after it opens.

    An option `"{pid}"` is replaced by the writer's pid. Returns (exit code, JSON, stderr).
    """
    writer = _start_writer(path, HEALTHY, "lines", delay=1.0, tail=OOM)
    try:
        args = [writer.pid if o == "{pid}" else o for o in options]
        proc = _dsdiag("--follow", *args, path)
        _wait_until_open(proc, path)
        _go(writer)
        return _finish(proc)
    finally:
        _stop(writer)


def test_follow_sees_a_failure_appended_later_and_stops_when_the_log_goes_quiet(tmp_path):
    path = tmp_path / "job.log"
    code, d, err = _follow_appended_oom(path, "--idle", "2")
    assert (code, d["category"]) == (0, "gpu_oom"), err
    assert d["evidence"][0]["line"] == len(path.read_text().splitlines())
    assert d["warnings"] == []


def test_follow_with_pid_stops_when_the_writer_exits(tmp_path):
    # No idle period with --pid: only the writer's exit (here a zombie, not yet reaped) ends it.
    code, d, err = _follow_appended_oom(tmp_path / "job.log", "--pid", "{pid}")
    assert (code, d["category"]) == (0, "gpu_oom"), err


def test_ctrl_c_stops_the_follow_and_diagnoses_what_was_read(tmp_path):
    path = tmp_path / "job.log"
    writer = _start_writer(path, HEALTHY, "linger", delay=0.5, tail=OOM)
    try:
        proc = _dsdiag("--follow", "--idle", "0", path)
        _wait_until_open(proc, path)
        _go(writer)
        deadline = time.monotonic() + 30
        while OOM not in path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # a few polls: dsdiag has read the OOM and is waiting for more
        proc.send_signal(signal.SIGINT)
        code, d, err = _finish(proc)
    finally:
        _stop(writer)
    assert (code, d["category"]) == (0, "gpu_oom"), err
    assert "Traceback" not in err


def test_a_followed_file_truncated_in_place_ends_with_a_warning(tmp_path):
    # logrotate's copytruncate: what the file holds after the cut is another text.
    from classifier.diagnosis.follow import Follow
    from classifier.diagnosis.read import InputLimits
    path = tmp_path / "job.log"
    path.write_text(HEALTHY)
    cutter = subprocess.Popen([sys.executable, "-c", "import os, sys, time; time.sleep(0.5); "
                               "os.truncate(sys.argv[1], 10)", str(path)])
    try:
        warnings = Warnings()
        limits = InputLimits(follow=Follow(idle=30, poll=0.05))
        lines = [r.text for r in read_lines(str(path), warnings, limits=limits)]
    finally:
        cutter.wait(timeout=30)
    assert lines == HEALTHY.splitlines()
    assert [w["code"] for w in warnings.as_list()] == ["truncated_while_followed"]


@pytest.mark.parametrize("args,why", [
    (["--idle", "5"], "go with --follow"),
    (["--pid", "1"], "go with --follow"),
    (["--follow", "-"], "a pipe"),
    (["--follow", "--idle", "-1", "F"], "seconds >= 0"),
    (["--follow", "--idle", "nan", "F"], "seconds >= 0"),
])
def test_follow_options_misused_are_one_line_errors(tmp_path, args, why):
    log = tmp_path / "job.log"
    log.write_text(HEALTHY)
    proc = run_dsdiag(*[str(log) if a == "F" else a for a in args], stdin=b"", timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and why in err, err
