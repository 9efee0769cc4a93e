"""Shared helpers: run the real CLI in a subprocess, exactly as users and schedulers do."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOGS = Path(__file__).resolve().parent / "logs"
DEMO = ROOT / "examples" / "zero3_oom_rank3_of_16.log"


def run_dsdiag(*args, stdin=None, env=None, timeout=60):
    """Run `python -m classifier ARGS` and return the CompletedProcess (bytes in, text out)."""
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "classifier", *map(str, args)],
                          input=stdin, capture_output=True, cwd=ROOT, env=full_env,
                          timeout=timeout)


def run_on_terminal(*args, stdin=b"", timeout=60):
    """Run `python -m classifier ARGS` with stdout on a pseudo-terminal; return what it showed."""
    import pty
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "classifier", *map(str, args)],
                                stdin=subprocess.PIPE, stdout=slave, stderr=subprocess.PIPE,
                                cwd=ROOT)
        os.close(slave)
        proc.communicate(stdin, timeout=timeout)
        out = b""
        while True:
            try:
                block = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not block:
                break
            out += block
    finally:
        os.close(master)
    return out


def diagnose_json(*args, stdin=None):
    """Run dsdiag with --format json and return (exit code, parsed object)."""
    proc = run_dsdiag("--format", "json", *args, stdin=stdin)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


def default_sigint():
    """preexec_fn for a child that must see Ctrl-C: a backgrounded `make test` runs with SIGINT
    ignored, and an ignored signal stays ignored across exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def logs():
    return LOGS


def load_user_rules(folder, category, text):
    """The built-in rules plus one user rule file `text` for `category`, written in `folder`."""
    from classifier.rules.load import load_rules
    (folder / f"{category}.yaml").write_text(text)
    return load_rules([folder])


def diagnose_text(rules, folder, text):
    """The diagnosis (no fallback model) of a one-file job holding `text`."""
    from classifier.diagnosis.diagnose import diagnose_job
    log = folder / "job.log"
    log.write_text(text, encoding="utf-8")
    return diagnose_job([str(log)], rules, use_model=False)
