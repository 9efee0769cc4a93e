"""`dsdiag --tee`: byte-exact, live pass-through; the diagnosis at the end; nothing lost."""

import json
import os
import select
import signal
import subprocess
import sys
import time

from classifier.integrations.tee import copy_stream
from conftest import DEMO, ROOT, default_sigint, diagnose_json, run_dsdiag

HOSTILE_TAIL = b"\xff\xfe bad utf-8 \xc3\n\x00\x00NUL line\r\nlast line without newline"


def _popen(*args, env=None, **kw):
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    full_env.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "classifier", *map(str, args)], cwd=ROOT,
                            env=full_env, preexec_fn=default_sigint, **kw)


def _read_until(fd, want, timeout):
    """Read from fd until `want` was seen or timeout; return the bytes read."""
    got = b""
    end = time.monotonic() + timeout
    while want not in got and time.monotonic() < end:
        if select.select([fd], [], [], max(0.0, end - time.monotonic()))[0]:
            block = os.read(fd, 65536)
            if not block:
                break
            got += block
    return got


def test_pass_through_is_byte_for_byte_and_a_crash_exits_1(tmp_path):
    data = DEMO.read_bytes() + HOSTILE_TAIL
    proc = run_dsdiag("--tee", stdin=data)
    assert proc.stdout == data
    assert proc.returncode == 1
    assert proc.stderr.decode().startswith("gpu_oom")


def test_pass_through_to_a_file_and_report_file(tmp_path):
    data = DEMO.read_bytes() + HOSTILE_TAIL
    log, report = tmp_path / "train.log", tmp_path / "report.json"
    with open(log, "wb") as out:
        proc = _popen("--tee", "--format", "json", "--report", report, stdin=subprocess.PIPE,
                      stdout=out, stderr=subprocess.PIPE)
        _, err = proc.communicate(data, timeout=60)
    assert log.read_bytes() == data
    assert proc.returncode == 1 and err == b""
    d = json.loads(report.read_text())
    assert d["category"] == "gpu_oom" and d["evidence"][0]["file"] == "<stdin>"
    assert d["evidence"][0]["line"] == 185 and d["retryable"] is False


def test_healthy_log_exits_0_unlike_a_plain_run():
    data = b"step 1 loss 2.0\nstep 2 loss 1.9\ntraining complete\n"
    proc = run_dsdiag("--tee", stdin=data)
    assert proc.stdout == data and proc.returncode == 0
    assert run_dsdiag(stdin=data).returncode == 1  # the plain command keeps its own codes


def test_lines_and_partial_lines_pass_through_live():
    proc = _popen("--tee", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        os.write(proc.stdin.fileno(), b"[rank0]: step 1 loss 2.0\n")
        assert _read_until(proc.stdout.fileno(), b"\n", 10) == b"[rank0]: step 1 loss 2.0\n"
        os.write(proc.stdin.fileno(), b"progress 10%\r")  # tqdm: no newline at all
        assert _read_until(proc.stdout.fileno(), b"\r", 10) == b"progress 10%\r"
        assert proc.poll() is None  # still running: the writer has not finished
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0


def test_reader_closing_early_loses_nothing_for_the_diagnosis():
    # `deepspeed ... | dsdiag --tee | head -c 100`: head exits, the writer must not get
    # SIGPIPE, and the OOM far past byte 100 must still be diagnosed.
    filler = b"".join(b"[rank0]: step %d loss 1.0\n" % i for i in range(50000))
    data = filler + DEMO.read_bytes()
    proc = _popen("--tee", "--format", "json", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE)
    os.write(proc.stdin.fileno(), data[:4096])
    head = os.read(proc.stdout.fileno(), 100)
    proc.stdout.close()
    proc.stdin.write(data[4096:])  # the writer goes on writing all of it, unharmed
    proc.stdin.close()
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert head and data.startswith(head)
    assert proc.returncode == 1
    text = err.decode()
    assert "stdout: Broken pipe" in text
    d = json.loads(text[text.index("{"):])
    assert d["category"] == "gpu_oom" and d["evidence"][0]["line"] == 50000 + 185


def test_writer_dying_mid_line_keeps_the_partial_line(tmp_path):
    log = tmp_path / "train.log"
    script = f"cat '{DEMO}'; printf 'RuntimeError: half a li'; kill -9 $$"
    with open(log, "wb") as out:
        writer = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE)
        proc = _popen("--tee", stdin=writer.stdout, stdout=out, stderr=subprocess.PIPE)
        writer.stdout.close()
        _, err = proc.communicate(timeout=60)
    writer.wait(timeout=10)
    assert writer.returncode == -signal.SIGKILL
    assert log.read_bytes() == DEMO.read_bytes() + b"RuntimeError: half a li"
    assert proc.returncode == 1 and err.decode().startswith("gpu_oom")


def test_first_ctrl_c_keeps_draining_the_dying_writer():
    proc = _popen("--tee", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.write(proc.stdin.fileno(), b"[rank0]: step 1\n")
    assert _read_until(proc.stdout.fileno(), b"\n", 10)
    proc.send_signal(signal.SIGINT)  # Ctrl-C reaches the whole pipeline ...
    time.sleep(0.2)
    proc.stdin.write(DEMO.read_bytes())  # ... and the writer's last words still pass through
    proc.stdin.close()
    rest = proc.stdout.read()
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert rest == DEMO.read_bytes()
    assert proc.returncode == 1 and err.decode().startswith("gpu_oom")


def test_spill_leaves_no_file_behind(tmp_path):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    proc = _popen("--tee", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  env={"TMPDIR": str(spill_dir)})
    os.write(proc.stdin.fileno(), b"line\n")
    assert _read_until(proc.stdout.fileno(), b"\n", 10)
    assert list(spill_dir.iterdir()) == []  # anonymous while dsdiag runs ...
    proc.stdin.close()
    proc.stdout.read()
    proc.stderr.read()
    proc.wait(timeout=60)
    assert list(spill_dir.iterdir()) == []  # ... and after


def test_broken_rules_still_pass_the_log_through(tmp_path):
    bad = tmp_path / "rules"
    bad.mkdir()
    (bad / "gpu_oom.yaml").write_text("category: gpu_oom\nrules: [\n")
    data = DEMO.read_bytes()
    proc = run_dsdiag("--tee", "--rules-dir", bad, stdin=data)
    assert proc.stdout == data and proc.returncode == 2 and proc.stderr


def test_tee_refuses_files_and_a_terminal():
    assert run_dsdiag("--tee", DEMO).returncode == 2


def test_copy_stream_goes_on_when_the_spill_disk_is_full():
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    payload = b"x" * 200000
    pid = os.fork()
    if pid == 0:  # the writer
        os.close(r)
        os.write(w, payload)
        os._exit(0)
    os.close(w)
    got = bytearray()
    import threading

    def drain():
        while True:
            block = os.read(out_r, 65536)
            if not block:
                return
            got.extend(block)
    t = threading.Thread(target=drain)
    t.start()
    with open("/dev/full", "wb", buffering=0) as full:
        stats = copy_stream(r, out_w, full)
    os.close(out_w)
    t.join(10)
    os.waitpid(pid, 0)
    os.close(r)
    os.close(out_r)
    assert bytes(got) == payload and stats.reached_eof
    assert stats.spill_error and stats.spilled == 0 and stats.bytes_in == len(payload)


def _pipeline(script, tmp_path, log):
    """Run a bash pipeline with `dsdiag` on PATH (this interpreter); return the exit status."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    shim = bindir / "dsdiag"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m classifier "$@"\n')
    shim.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", LOG=str(log), PYTHONPATH=str(ROOT))
    return subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, timeout=120,
                          capture_output=True)


def test_pipefail_sees_a_crash_as_failure_and_a_clean_run_as_success(tmp_path):
    # The README's idiom: with pipefail the pipeline's status is the last non-zero one, so a
    # crash the launcher does not report (exit 0) still fails the script through dsdiag.
    healthy = tmp_path / "healthy.log"
    healthy.write_bytes(b"[rank0]: step 1 loss 2.0\n[rank0]: step 2 loss 1.9\n"
                        b"[INFO] [launch.py:351:main] Process 17 exits successfully.\n")
    script = 'set -o pipefail; cat "$LOG" | dsdiag --tee > train.log 2>report.txt'
    crashed = _pipeline(script, tmp_path, DEMO)
    assert crashed.returncode == 1
    assert (tmp_path / "train.log").read_bytes() == DEMO.read_bytes()
    assert (tmp_path / "report.txt").read_text().splitlines()[1].startswith("gpu_oom")
    clean = _pipeline(script, tmp_path, healthy)
    assert clean.returncode == 0
    assert (tmp_path / "train.log").read_bytes() == healthy.read_bytes()
    # PIPESTATUS keeps the launcher's own code and dsdiag's apart.
    both = _pipeline('(cat "$LOG"; exit 3) | dsdiag --tee >/dev/null 2>&1; '
                     'echo "${PIPESTATUS[0]} ${PIPESTATUS[1]}"', tmp_path, DEMO)
    assert both.stdout.decode().split() == ["3", "1"]


def test_report_in_the_jobs_own_log_is_not_diagnosed_again(tmp_path):
    # Slurm without --error: stdout and stderr are one slurm-%j.out, so the report lands in
    # the log that `slurm-annotate` reads next; that diagnosis must be the log's, not the report's.
    out = tmp_path / "slurm-1001.out"
    proc = _pipeline('cat "$LOG" | dsdiag --tee > slurm-1001.out 2>&1', tmp_path, DEMO)
    assert proc.returncode == 1
    text = out.read_text()
    assert text.startswith(DEMO.read_text()) and "gpu_oom" in text[len(DEMO.read_text()):]
    _, alone = diagnose_json(DEMO)
    _, again = diagnose_json(out)
    assert again["category"] == alone["category"] and again["confidence"] == alone["confidence"]
    assert [e["line"] for e in again["evidence"]] == [e["line"] for e in alone["evidence"]]
    assert again["secondary"] == json.loads(json.dumps(alone["secondary"]).replace(str(DEMO), str(out)))
    # The fence survives a prefix added after dsdiag wrote it (`srun -l` around the pipeline).
    prefixed = tmp_path / "prefixed.out"
    prefixed.write_text("".join(f"0: {line}\n" for line in text.splitlines()))
    _, labelled = diagnose_json(prefixed)
    assert [e["line"] for e in labelled["evidence"]] == [e["line"] for e in alone["evidence"]]
    assert labelled["confidence"] == alone["confidence"]


def test_report_to_a_terminal_or_pipe_is_not_fenced():
    proc = run_dsdiag("--tee", stdin=DEMO.read_bytes())
    assert proc.stderr.splitlines()[0].startswith(b"gpu_oom")  # stderr is a pipe here
