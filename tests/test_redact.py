"""Redaction: every pattern example is a test (`pytest -k redact`), plus the places it applies."""

import json

import pytest

from classifier.redact import (check_example, example_cases, load_patterns, redact_diagnosis,
                               redact_lines, redact_text)
from conftest import DEMO, run_dsdiag

PATTERNS = load_patterns()
CASES = list(example_cases(PATTERNS))
REQUIRED = {"github-token", "gitlab-token", "aws-access-key-id", "aws-secret-access-key",
            "huggingface-token", "openai-key", "pypi-token", "slack-token", "jwt",
            "pem-private-key", "url-credentials", "secret-env"}


@pytest.mark.parametrize("pattern,kind,text,secret", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_redaction_example(pattern, kind, text, secret):
    problem = check_example(pattern, kind, text, secret, PATTERNS)
    assert problem is None, problem


def test_pattern_set_is_complete_and_every_pattern_carries_examples():
    ids = [p.id for p in PATTERNS]
    assert len(ids) == len(set(ids))
    assert REQUIRED <= set(ids)
    for p in PATTERNS:
        assert len(p.examples.get("match") or []) >= 2, p.id
        assert len(p.examples.get("no_match") or []) >= 2, p.id
        assert all(k and k == k.lower() for k in p.keywords), p.id  # matched against text.lower()


def test_redaction_is_idempotent_on_every_example():
    for _, _, _, text, _ in CASES:
        once = redact_text(text)
        assert redact_text(once) == once


def test_pem_block_over_separate_lines_is_removed_whole():
    lines = ["loading key", "-----BEGIN PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
             "AbCdEf0123", "-----END PRIVATE KEY-----", "after"]
    out = redact_lines(lines)
    assert out[0] == "loading key" and out[-1] == "after"
    assert all("REDACTED" in line for line in out[1:5])
    assert not any("MIIEvQ" in line or "AbCdEf" in line for line in out)


def test_diagnosis_is_redacted_everywhere_and_the_input_left_alone():
    token = "hf_EXAMPLEexampleEXAMPLEexample0123456"
    d = {"category": "unknown", "title": "t", "evidence": [
        {"file": "a.log", "line": 9, "rank": 0, "text": "-----BEGIN RSA PRIVATE KEY-----"},
        {"file": "a.log", "line": 10, "rank": 0, "text": "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="},
        {"file": "a.log", "line": 30, "rank": 0, "text": f"token={token}"}],
        "facts": {"url": "https://u:p4ss@host/x"}, "remediation": [f"login with {token}"],
        "secondary": [{"evidence": [{"file": "a.log", "line": 2, "rank": None, "text": token}]}],
        "warnings": []}
    before = json.dumps(d)
    out = json.dumps(redact_diagnosis(d))
    assert json.dumps(d) == before
    assert token not in out and "p4ss" not in out and "QUJDREVG" not in out
    assert out.count("[REDACTED:huggingface-token]") == 3


SECRET_LOG = (DEMO.read_text() + "\n"
              "[rank3]: ValueError: bad key HF_TOKEN=hf_EXAMPLEexampleEXAMPLEexample0123456 "
              "WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567\n").encode()


def _unknown_log_with_secret():
    return (b"[INFO] starting\n"
            b"Traceback (most recent call last):\n"
            b"  File \"train.py\", line 3, in <module>\n"
            b"KeyError: 'token ghp_EXAMPLEexample0123456789EXAMPLEexample rejected'\n")


@pytest.mark.parametrize("fmt", ["json", "markdown", "text"])
def test_cli_redacts_what_leaves_the_terminal(fmt):
    proc = run_dsdiag("--format", fmt, stdin=_unknown_log_with_secret())
    out = proc.stdout.decode()
    assert "KeyError" in out
    assert "ghp_EXAMPLE" not in out and "[REDACTED:github-token]" in out


def test_no_redact_keeps_the_text_verbatim():
    proc = run_dsdiag("--format", "json", "--no-redact", stdin=_unknown_log_with_secret())
    assert "ghp_EXAMPLEexample0123456789EXAMPLEexample" in proc.stdout.decode()


def test_report_file_is_redacted(tmp_path):
    report = tmp_path / "r.json"
    proc = run_dsdiag("--format", "json", "--report", report, stdin=_unknown_log_with_secret())
    assert proc.returncode == 1 and proc.stdout == b""
    assert "[REDACTED:github-token]" in report.read_text()


def test_text_on_a_terminal_is_redacted_too():
    from conftest import run_on_terminal
    out = run_on_terminal("--color", "never", stdin=_unknown_log_with_secret())
    # Redaction runs on the result before any renderer: a terminal (screen shares, scrollback,
    # recordings) is no exception.
    assert b"KeyError" in out and b"[REDACTED:github-token]" in out
    assert b"ghp_EXAMPLE" not in out


def test_the_rules_own_words_are_never_taken_for_secrets():
    # An id like `x.hf_3...` once came out as `[REDACTED:...]`: the redactor must leave every
    # rule id, title and remediation line of the built-in rules as they are.
    from classifier.redact import redact_text
    from classifier.rules.load import default_rules
    rules = default_rules()
    # a remediation step is a line, or {text, when} for a step that applies only to some facts
    steps = [s["text"] if isinstance(s, dict) else s for r in rules.rules for s in r.remediation]
    texts = [t for r in rules.rules for t in (r.id, r.title)] + steps
    changed = [t for t in texts if redact_text(t) != t]
    assert len(texts) > 500 and changed == []
