"""`make test` and the browser it needs: say what apt installs and why; skip, not fail, without it."""

import os
import shutil
import subprocess

import pytest

from conftest import ROOT

MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="no make on this machine")


def _bin(tmp_path, **scripts):
    """A PATH holding `id` and the given fake commands (name -> shell body), nothing else."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(shutil.which("id"), bindir / "id")
    for name, body in scripts.items():
        path = bindir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    return bindir


def _make(bindir, *targets):
    return subprocess.run([MAKE, "-s", "-C", str(ROOT), *targets], env={"PATH": str(bindir)},
                          capture_output=True, text=True, timeout=120)


def test_browser_target_is_quiet_when_chromium_is_there(tmp_path):
    proc = _make(_bin(tmp_path, chromium="exit 0"), "browser")
    assert proc.returncode == 0 and proc.stdout == ""


def test_browser_target_says_why_it_cannot_install(tmp_path):
    proc = _make(_bin(tmp_path), "browser")  # no chromium, no apt-get
    assert proc.returncode != 0 and "apt-get install chromium" in proc.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="the apt-get path is taken as root only")
def test_browser_target_says_what_apt_installs_and_why(tmp_path):
    proc = _make(_bin(tmp_path, **{"apt-get": 'echo "apt-get $*" >> "$0.calls"; exit 100'}), "browser")
    assert proc.returncode != 0
    first = proc.stdout.splitlines()[0]
    assert "apt-get install chromium" in first and "tests/jobs/test_html.py" in first
    assert "could not install chromium" in proc.stdout
    assert "apt-get update -q" in (tmp_path / "bin" / "apt-get.calls").read_text()


def test_make_test_skips_the_browser_test_when_there_is_no_chromium(tmp_path):
    # `-o install-test`: no pip here; BIN's python only reports what pytest would be run with.
    fake = tmp_path / "venv"
    fake.mkdir()
    (fake / "python").write_text('#!/bin/sh\necho "pytest $* DSDIAG_SKIP_BROWSER=$DSDIAG_SKIP_BROWSER"\n')
    (fake / "python").chmod(0o755)
    bindir = _bin(tmp_path)
    proc = subprocess.run([MAKE, "-s", "-C", str(ROOT), "-o", "install-test", f"BIN={fake}", "test"],
                          env={"PATH": str(bindir)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "tests/jobs/test_html.py is skipped" in proc.stdout
    assert "pytest -m pytest -q DSDIAG_SKIP_BROWSER=1" in proc.stdout
    (bindir / "chromium").write_text("#!/bin/sh\nexit 0\n")
    (bindir / "chromium").chmod(0o755)
    proc = subprocess.run([MAKE, "-s", "-C", str(ROOT), "-o", "install-test", f"BIN={fake}", "test"],
                          env={"PATH": str(bindir)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "pytest -m pytest -q DSDIAG_SKIP_BROWSER=\n" in proc.stdout
