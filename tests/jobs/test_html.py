"""The triage HTML report, opened in headless Chromium: it renders, logs nothing, sorts and filters.

Chromium is Debian's `chromium` package. `make test` installs it (as root) when it is missing,
and when it cannot, runs the suite with DSDIAG_SKIP_BROWSER=1, which skips this module. Run
directly, the module installs it as root too, and fails (never skips) without it unless
DSDIAG_SKIP_BROWSER=1 says that this machine cannot have one.
"""

import html as html_lib
import json
import os
import re
import shutil
import subprocess

import pytest
from conftest import LOGS, ROOT, run_dsdiag
from jobtrees import torchrun_log_dir

from classifier.jobs.html import render_html

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0", "--window-size=1280,2000")
EVIL = "ValueError: </script><script>document.title='pwned'</script><b>bold</b> & \"quotes\""


def _find_chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or \
        (os.path.exists("/usr/bin/chromium") and "/usr/bin/chromium") or None


@pytest.fixture(scope="module")
def chromium():
    found = _find_chromium()
    if not found and os.environ.get("DSDIAG_SKIP_BROWSER") == "1":
        pytest.skip("DSDIAG_SKIP_BROWSER=1 and no chromium")  # make test tried already
    if not found and os.geteuid() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], env=env, capture_output=True,
                       timeout=900)
        found = _find_chromium()
    if not found:
        if os.environ.get("DSDIAG_SKIP_BROWSER") == "1":
            pytest.skip("DSDIAG_SKIP_BROWSER=1 and no chromium")
        pytest.fail("headless Chromium is needed: apt-get install chromium (make test does it as root)")
    return found


def run_chromium(binary, tmp_path, url, *action):
    """Run headless Chromium on `url` with one action (--screenshot=..., --dump-dom)."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    proc = subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *action, url],
                          capture_output=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return proc


def console_lines(proc):
    """Lines the page wrote to the console (Chromium logs them as `INFO:CONSOLE`), CSP refusals too."""
    return [line for line in proc.stderr.decode(errors="replace").splitlines()
            if ":CONSOLE" in line or "Refused to" in line]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A report over a multi-rank torchrun job, corpus jobs, a healthy log and hostile text."""
    tmp = tmp_path_factory.mktemp("report")
    torchrun = torchrun_log_dir(tmp / "torchrun-job")
    evil = tmp / "evil.log"
    evil.write_text(EVIL + "\n")
    corpus = sorted(str(p) for p in (ROOT / "corpus").glob("*/*.log"))[::25]
    out = tmp / "report.html"
    proc = run_dsdiag("triage", "-j", "2", "-q", "--html", out, torchrun, DEMO_JOB, evil,
                      LOGS / "healthy.log", *corpus)
    assert proc.returncode == 0, proc.stderr.decode()
    results = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    return out, results


DEMO_JOB = ROOT / "examples" / "zero3_oom_rank3_of_16.log"


def js_errors(dom):
    """Did the page's error trap fire (it marks <html data-js-errors="1">)?"""
    return bool(re.search(r"<html[^>]*data-js-errors", dom))


def _tbody_attrs(dom, name):
    return [html_lib.unescape(m) for m in re.findall(rf'<tbody class="job"[^>]*? data-{name}="([^"]*)"', dom)]


def test_report_is_self_contained_and_escapes_log_text(report):
    path, results = report
    page = path.read_text()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"<link|\ssrc=|@import|url\(", page)  # nothing to fetch
    assert page.count('<tbody class="job"') == len(results)
    assert "<svg id=\"chart\"" in page and page.count('class="bar"') == len({r["category"] for r in results})
    assert page.count('class="timeline"') == sum(1 for r in results if r.get("evidence"))
    assert "<script>document.title='pwned'" not in page and "&lt;/script&gt;&lt;script&gt;" in page


def test_timeline_shows_which_ranks_hit_which_finding(report):
    _, results = report
    demo = next(r for r in results if r["job"] == str(DEMO_JOB))
    svg = re.search(r'<svg class="timeline".*?</svg>', render_html([demo])).group(0)
    labels = re.findall(r">rank (\d+)<", svg)
    assert labels == [str(r) for r in range(16)]  # OOM on rank 3, watchdog echoes on the others
    red, blue = "#d62728", "#1f77b4"
    assert svg.count(f'fill="{red}"><title>rank 3: gpu_oom') == 1
    assert svg.count(f'fill="{blue}"><title>') == 15  # the nccl_timeout column: 15 of 16 ranks
    assert 'class="event"' in svg and "line 185" in svg


def test_report_renders_in_chromium_with_no_console_output(report, chromium, tmp_path):
    path, _ = report
    shot = tmp_path / "report.png"
    proc = run_chromium(chromium, tmp_path, path.as_uri() + "#open=all", f"--screenshot={shot}")
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert console_lines(proc) == []


def test_page_script_runs_without_errors(report, chromium, tmp_path):
    path, results = report
    proc = run_chromium(chromium, tmp_path, path.as_uri(), "--dump-dom")
    dom = proc.stdout.decode()
    assert re.search(r'<html[^>]*data-ready="1"', dom), "the page script did not run to its end"
    assert not js_errors(dom) and re.search(r'<pre id="js-errors" hidden=""></pre>', dom)
    assert "<title>dsdiag triage</title>" in dom  # the hostile log line did not run
    assert f"{len(results)} of {len(results)} jobs shown" in dom
    assert console_lines(proc) == []


def test_sorting_by_hash_and_by_clicking_headers(report, chromium, tmp_path):
    path, results = report
    dom = run_chromium(chromium, tmp_path, path.as_uri() + "#sort=job&dir=desc", "--dump-dom").stdout.decode()
    assert _tbody_attrs(dom, "job") == sorted((r["job"] for r in results), reverse=True)
    assert 'data-sorted="job:desc"' in dom and 'data-key="job" aria-sort="descending"' in dom
    # Two clicks on "confidence": ascending, then descending (the real click handler runs).
    dom = run_chromium(chromium, tmp_path, path.as_uri() + "#click=confidence,confidence",
                       "--dump-dom").stdout.decode()
    shown = [float(c) for c in _tbody_attrs(dom, "confidence")]
    assert shown == sorted(shown, reverse=True) and len(set(shown)) > 2
    assert 'data-sorted="confidence:desc"' in dom and not js_errors(dom)


def test_filter_by_category(report, chromium, tmp_path):
    path, results = report
    url = path.as_uri() + "#filter=cat:gpu_oom"
    dom = run_chromium(chromium, tmp_path, url, "--dump-dom").stdout.decode()
    visible = re.findall(r'<tbody class="job"[^>]*? data-category="([^"]*)"[^>]*?(hidden="")?>', dom)
    shown = [cat for cat, hidden in visible if not hidden]
    expected = sum(1 for r in results if r["category"] == "gpu_oom")
    assert expected >= 2 and shown == ["gpu_oom"] * expected
    assert len(visible) == len(results)


def test_the_error_checks_catch_a_broken_script(report, chromium, tmp_path):
    # The negative control: the same page with a failing call must trip both checks above.
    path, _ = report
    broken = tmp_path / "broken.html"
    broken.write_text(path.read_text().replace("\n  apply();\n", "\n  apply();noSuchFunction();\n"))
    proc = run_chromium(chromium, tmp_path, broken.as_uri(), "--dump-dom")
    dom = proc.stdout.decode()
    assert js_errors(dom) and "noSuchFunction" in dom
    assert not re.search(r'<html[^>]*data-ready="1"', dom)
    assert any("noSuchFunction" in line for line in console_lines(proc))
