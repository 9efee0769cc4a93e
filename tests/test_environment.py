"""What the environment hands dsdiag cannot crash it: odd file names, locales, closed streams,
symbolic link loops, unreadable files. Each case runs the real command in a subprocess."""

import json
import os
import socket
import subprocess
import sys

import pytest

from conftest import DEMO, ROOT

# A file name no encoding decodes, with a terminal title sequence in it.
HOSTILE_NAME = b"rank0-\xff\x1b]0;pwned\x07.log"


def _run(args, env=None, shell_redirect="", cwd=ROOT, timeout=120):
    """Run dsdiag through sh so the redirections (<&-, >&-) are the shell's own."""
    full = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "NO_COLOR")}
    full.update(env or {})
    full["PYTHONPATH"] = str(ROOT)
    argv = [os.fsencode(sys.executable), b"-m", b"classifier", *[os.fsencode(a) for a in args]]
    script = b'exec "$@" ' + shell_redirect.encode()
    return subprocess.run([b"/bin/sh", b"-c", script, b"sh", *argv], capture_output=True,
                          env=full, cwd=cwd, timeout=timeout)


def _no_traceback(proc):
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")


@pytest.fixture
def hostile_file(tmp_path):
    path = os.path.join(os.fsencode(tmp_path), HOSTILE_NAME)
    with open(path, "wb") as fh:
        fh.write(DEMO.read_bytes())
    return path


LOCALES = {"C": {"LC_ALL": "C"},
           "ascii": {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
           "utf8": {"LC_ALL": "C.UTF-8"}}


@pytest.mark.parametrize("locale", sorted(LOCALES))
def test_any_file_name_gives_valid_json_in_any_locale(hostile_file, locale):
    proc = _run(["--format", "json", hostile_file], env=LOCALES[locale])
    _no_traceback(proc)
    d = json.loads(proc.stdout.decode("utf-8", errors="strict"))
    assert d["category"] == "gpu_oom"
    assert d["evidence"][0]["file"].endswith("rank0-\\xff\\x1b]0;pwned\\x07.log")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
@pytest.mark.parametrize("locale", sorted(LOCALES))
def test_any_file_name_is_shown_escaped_in_text_and_markdown(hostile_file, fmt, locale):
    proc = _run(["--format", fmt, hostile_file], env=LOCALES[locale])
    _no_traceback(proc)
    out = proc.stdout.decode("utf-8", errors="strict")
    assert "gpu_oom" in out and "rank0-\\xff\\x1b]0;pwned\\x07.log" in out
    assert "\x1b" not in out and "\x07" not in out


def test_any_file_name_reaches_the_termination_message_and_triage(hostile_file, tmp_path):
    term = tmp_path / "termination-log"
    proc = _run([hostile_file, f"--k8s-termination-log={term}"], env=LOCALES["C"])
    _no_traceback(proc)
    assert term.read_bytes().decode("utf-8").startswith("dsdiag: gpu_oom")
    page = tmp_path / "r.html"
    proc = _run(["triage", "--html", str(page), os.path.dirname(hostile_file)], env=LOCALES["C"])
    _no_traceback(proc)
    assert proc.returncode == 0
    job = json.loads(proc.stdout.decode("utf-8", errors="strict"))
    assert job["category"] == "gpu_oom" and "\\xff" in job["evidence"][0]["file"]
    assert "\\xff" in page.read_bytes().decode("utf-8", errors="strict")


def test_closed_stdin_is_one_clear_error_and_files_still_diagnosed():
    proc = _run([], shell_redirect="<&-")
    _no_traceback(proc)
    assert proc.returncode == 2 and proc.stderr.decode().count("\n") == 1
    assert b"stdin is closed" in proc.stderr
    proc = _run(["--format", "json", str(DEMO)], shell_redirect="<&-")
    _no_traceback(proc)
    assert proc.returncode == 0 and json.loads(proc.stdout)["category"] == "gpu_oom"


def test_closed_stdout_is_one_clear_error_and_report_files_still_written(tmp_path):
    for args in ([str(DEMO)], ["triage", str(DEMO)]):
        proc = _run(args, shell_redirect=">&-")
        _no_traceback(proc)
        assert proc.returncode == 2 and b"stdout is closed" in proc.stderr
    report = tmp_path / "r.json"
    proc = _run(["--format", "json", "--report", str(report), str(DEMO)], shell_redirect=">&-")
    _no_traceback(proc)
    assert proc.returncode == 0 and json.loads(report.read_text())["category"] == "gpu_oom"


def test_closed_stderr_does_not_stop_the_diagnosis():
    proc = _run(["--format", "json", str(DEMO)], shell_redirect="2>&-")
    assert proc.returncode == 0 and json.loads(proc.stdout)["category"] == "gpu_oom"


def test_triage_follows_a_symlink_loop_once_and_says_so(tmp_path):
    for job in ("job1", "job2"):
        (tmp_path / "arch" / job).mkdir(parents=True)
        (tmp_path / "arch" / job / "rank0.log").write_bytes(DEMO.read_bytes())
    (tmp_path / "arch" / "nest").mkdir()
    os.symlink("..", tmp_path / "arch" / "nest" / "up")
    os.symlink("job1", tmp_path / "arch" / "zz-alias")
    proc = _run(["triage", "-q", str(tmp_path / "arch")])
    _no_traceback(proc)
    jobs = [json.loads(line)["job"] for line in proc.stdout.decode().splitlines()]
    assert sorted(os.path.basename(j) for j in jobs) == ["job1", "job2"]
    assert proc.returncode == 0
    assert b"nest/up: a directory already read" in proc.stderr
    assert b"zz-alias: a directory already read" in proc.stderr


def _unreadable(path):
    """A file nobody can read, root included: a Unix socket (open() fails with ENXIO)."""
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    return sock


def test_an_unreadable_rank_file_is_skipped_and_named(tmp_path):
    (tmp_path / "rank0.log").write_bytes(DEMO.read_bytes())
    sock = _unreadable(tmp_path / "rank1.log")
    try:
        proc = _run(["--format", "json", str(tmp_path / "rank0.log"), str(tmp_path / "rank1.log")])
        _no_traceback(proc)
        d = json.loads(proc.stdout)
        assert proc.returncode == 0 and d["category"] == "gpu_oom"
        warning = [w for w in d["warnings"] if w["code"] == "unreadable_file"]
        assert len(warning) == 1 and "rank1.log" in warning[0]["message"]
        alone = _run([str(tmp_path / "rank1.log")])  # the job's only file: an error, exit 2
        assert alone.returncode == 2 and b"rank1.log" in alone.stderr
        _no_traceback(alone)
    finally:
        sock.close()


def test_triage_reports_a_job_directory_it_cannot_list(tmp_path, monkeypatch):
    # Root reads every directory, so the refusal is the operating system's answer made up for
    # one path; discovery and the triage record around it are the real code.
    from classifier.jobs import triage
    from classifier.jobs.run import triage_job
    for job in ("ok", "locked"):
        (tmp_path / job).mkdir()
        (tmp_path / job / "rank0.log").write_bytes(DEMO.read_bytes())
    locked = str(tmp_path / "locked")
    real_scandir, real_listdir = os.scandir, os.listdir

    def refuse(fn):
        def wrapped(path="."):
            if os.fspath(path) == locked:
                raise PermissionError(13, "Permission denied", locked)
            return fn(path)
        return wrapped
    monkeypatch.setattr(os, "scandir", refuse(real_scandir))
    monkeypatch.setattr(os, "listdir", refuse(real_listdir))
    jobs, problems = triage.find_jobs([str(tmp_path)])
    assert problems == [] and sorted(j for j, _ in jobs) == sorted([str(tmp_path / "ok"), locked])
    results = {job: triage_job(job, files) for job, files in jobs}
    assert results[locked]["error"] == f"cannot read {locked}: Permission denied"
    assert results[str(tmp_path / "ok")]["category"] == "gpu_oom"


def test_error_messages_show_a_file_names_controls_escaped(tmp_path):
    missing = os.path.join(os.fsencode(tmp_path), b"gone-\x1b]0;pwned\x07.log")
    for args in ([missing], ["triage", missing]):
        proc = _run(args)
        _no_traceback(proc)
        assert proc.returncode == 2 and b"\x1b" not in proc.stderr and b"\x07" not in proc.stderr
        assert b"gone-\\x1b]0;pwned\\x07.log" in proc.stderr
