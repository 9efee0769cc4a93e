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
    assert '<div id="chart"' in page and page.count('class="bar"') == len({r["category"] for r in results})
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
    from classifier.jobs.html import _csp_hash
    from classifier.jobs.html_assets import SCRIPT
    changed = SCRIPT.replace("\n  apply(true);\n", "\n  apply(true);noSuchFunction();\n")
    assert changed != SCRIPT
    # The page's CSP names its script by hash: the changed script gets its own hash there.
    broken.write_text(path.read_text().replace(SCRIPT, changed)
                      .replace(_csp_hash(SCRIPT), _csp_hash(changed)))
    proc = run_chromium(chromium, tmp_path, broken.as_uri(), "--dump-dom")
    dom = proc.stdout.decode()
    assert js_errors(dom) and "noSuchFunction" in dom
    assert not re.search(r'<html[^>]*data-ready="1"', dom)
    assert any("noSuchFunction" in line for line in console_lines(proc))


def probe(page, tmp_path, script, name="probe.html"):
    """A copy of the page with `script` run after the page's own (its hash added to the CSP):
    it measures what only a browser knows and writes the answer into <html> attributes."""
    from classifier.jobs.html import _csp_hash
    copy = tmp_path / name
    text = page.read_text().replace("script-src ", f"script-src {_csp_hash(script)} ", 1)
    copy.write_text(text.replace("</body>", f"<script>{script}</script></body>"))
    return copy


def _html_attr(dom, name):
    m = re.search(rf'<html[^>]*\sdata-{name}="([^"]*)"', dom)
    return m and m.group(1)


def test_legend_names_every_layer_in_its_colour(report):
    from classifier.jobs.html import LAYER_COLOURS, OUTCOME_COLOURS
    page = report[0].read_text()
    legend = re.search(r'<ul id="legend".*?</ul>', page).group(0)
    items = re.findall(r'class="swatch k-([0-9a-f]{6})"></span>([a-z]+)</li>', legend)
    expected = {layer: c for layer, c in LAYER_COLOURS.items() if layer} | \
        {"unknown": OUTCOME_COLOURS["unknown"], "none": OUTCOME_COLOURS["none"],
         "unreadable": OUTCOME_COLOURS["error"]}
    assert {name: "#" + colour for colour, name in items} == expected
    # every category pill on the page uses one of the legend's colours
    assert {"#" + c for c in re.findall(r'class="cat k-([0-9a-f]{6})"', page)} <= set(expected.values())


def test_sections_are_linked_from_the_top_and_groups_start_collapsed(report, chromium, tmp_path):
    path, results = report
    page = path.read_text()
    nav = re.search(r'<nav id="toc">.*?</nav>', page).group(0)
    for target in re.findall(r'href="#([^"]+)"', nav):
        assert f'id="{target}"' in page
    assert "#sec-jobs" in nav and page.index('<nav id="toc">') < page.index('id="chart"')
    assert '<details id="groups-box">' in page  # not open
    dom = run_chromium(chromium, tmp_path, path.as_uri() + "#sec-groups", "--dump-dom").stdout.decode()
    assert '<details id="groups-box" open="">' in dom  # the link to the groups opens them
    assert f"{len(results)} of {len(results)} jobs shown" in dom and not js_errors(dom)


@pytest.mark.parametrize("state", ["#category=gpu_oom", "?category=gpu_oom", "?filter=cat:gpu_oom"])
def test_a_filter_in_the_url_filters_and_scrolls_to_the_jobs(report, chromium, tmp_path, state):
    path, results = report
    dom = run_chromium(chromium, tmp_path, path.as_uri() + state, "--window-size=1400,900",
                       "--dump-dom").stdout.decode()
    visible = re.findall(r'<tbody class="job"[^>]*? data-category="([^"]*)"[^>]*?(hidden="")?>', dom)
    expected = sum(1 for r in results if r["category"] == "gpu_oom")
    assert [c for c, hidden in visible if not hidden] == ["gpu_oom"] * expected
    assert int(_html_attr(dom, "scrolled")) > 300 and not js_errors(dom)  # the table is below the chart
    dom = run_chromium(chromium, tmp_path, path.as_uri(), "--window-size=1400,900",
                       "--dump-dom").stdout.decode()
    assert _html_attr(dom, "scrolled") is None  # no filter: the page opens at its top


def test_a_filter_leaving_one_job_opens_it(report, chromium, tmp_path):
    path, _ = report
    # the hash wins over the query (the filter box writes the hash)
    url = path.as_uri() + "?category=gpu_oom#filter=evil.log"
    dom = run_chromium(chromium, tmp_path, url, "--dump-dom").stdout.decode()
    shown = re.findall(r'<tbody class="job"(?![^>]*hidden="")[^>]*>.*?</tbody>', dom, re.S)
    assert len(shown) == 1 and "<details open=" in shown[0]


# For each word of the first evidence cells: does it sit on one line box?
SPLIT_WORDS = """
var cells=document.querySelectorAll('#jobs td.ev code'),split=0,words=0,lines=0;
for(var c=0;c<Math.min(cells.length,8);c++){var node=cells[c].firstChild,text=node.textContent,re=/\\S+/g,m;
  var all=document.createRange();all.selectNodeContents(cells[c]);
  lines=Math.max(lines,Math.round(cells[c].getBoundingClientRect().height/parseFloat(getComputedStyle(cells[c]).lineHeight)));
  while((m=re.exec(text))){if(m[0].length>24)continue;var r=document.createRange();
    r.setStart(node,m.index);r.setEnd(node,m.index+m[0].length);words++;
    var tops={},rects=r.getClientRects();for(var i=0;i<rects.length;i++)tops[Math.round(rects[i].top)]=1;
    if(Object.keys(tops).length>1)split++;}}
document.documentElement.setAttribute('data-split',split);
document.documentElement.setAttribute('data-words',words);
document.documentElement.setAttribute('data-lines',lines);
"""


def test_evidence_wraps_at_word_boundaries(report, chromium, tmp_path):
    path, _ = report
    page = probe(path, tmp_path, SPLIT_WORDS)
    dom = run_chromium(chromium, tmp_path, page.as_uri(), "--window-size=1400,900", "--dump-dom").stdout.decode()
    assert int(_html_attr(dom, "words")) > 100 and int(_html_attr(dom, "lines")) > 2  # it does wrap
    assert _html_attr(dom, "split") == "0"


WIDTHS = """
document.documentElement.setAttribute('data-overflow',
  document.documentElement.scrollWidth-window.innerWidth);
"""


def test_phone_width_page_does_not_scroll_sideways(report, chromium, tmp_path):
    path, _ = report
    page = probe(path, tmp_path, WIDTHS)
    shot = tmp_path / "phone.png"
    proc = run_chromium(chromium, tmp_path, page.as_uri(), "--window-size=390,844", f"--screenshot={shot}")
    assert shot.exists() and console_lines(proc) == []
    dom = run_chromium(chromium, tmp_path, page.as_uri(), "--window-size=390,844", "--dump-dom").stdout.decode()
    assert int(_html_attr(dom, "overflow")) <= 0, "the page is wider than a phone"
    dom = run_chromium(chromium, tmp_path, page.as_uri(), "--window-size=1400,900", "--dump-dom").stdout.decode()
    assert int(_html_attr(dom, "overflow")) <= 0


def test_remediation_markdown_becomes_markup_and_log_text_stays_text():
    from classifier.jobs.html import markdown_inline
    assert markdown_inline("lower `train_micro_batch_size_per_gpu` and **then** retry") == \
        "lower <code>train_micro_batch_size_per_gpu</code> and <strong>then</strong> retry"
    assert markdown_inline("see [the docs](https://www.deepspeed.ai/docs/config-json/)") == \
        'see <a href="https://www.deepspeed.ai/docs/config-json/" rel="noreferrer">the docs</a>'
    # what came from a log is escaped, inside code spans too; only http(s) links are links
    assert markdown_inline("symbol `<script>x</script>` & <b>") == \
        "symbol <code>&lt;script&gt;x&lt;/script&gt;</code> &amp; &lt;b&gt;"
    assert "<a" not in markdown_inline("[x](javascript:alert(1))")
    assert markdown_inline('[x](https://a.b/"onmouseover="y)').count('"') == 4  # the quote is escaped
    assert markdown_inline("an odd ` backtick") == "an odd ` backtick"


def test_remediation_shows_code_not_backticks_in_the_browser(report, chromium, tmp_path):
    path, _ = report
    dom = run_chromium(chromium, tmp_path, path.as_uri() + "#open=all", "--dump-dom").stdout.decode()
    steps = re.findall(r'<ol class="steps">(.*?)</ol>', dom, re.S)
    assert steps and any("<code>" in s for s in steps)
    assert not any("`" in re.sub(r"<[^>]+>", "", s) for s in steps)


def test_csp_runs_only_the_pages_own_script(report, chromium, tmp_path):
    # Hash-pinned, no 'unsafe-inline': a script that is not the page's own never runs, even if
    # one reached the page; the page's own script still runs (data-ready).
    path, _ = report
    page = path.read_text()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)
    assert "unsafe-inline" not in csp and "'sha256-" in csp and " style=" not in page
    planted = tmp_path / "planted.html"
    planted.write_text(page.replace("<h1 ", "<script>document.documentElement.setAttribute("
                                    "'data-planted','1')</script><h1 ", 1))
    dom = run_chromium(chromium, tmp_path, planted.as_uri(), "--dump-dom").stdout.decode()
    assert _html_attr(dom, "ready") == "1"
    assert _html_attr(dom, "planted") is None
