"""The finished diagnosis made safe to show anywhere: secrets masked, terminal controls gone.

A diagnosis quotes log text and names files, and both come from whoever wrote the log or
named the file. `finish` runs once on the finished result, before any renderer, so the text,
JSON, Markdown, triage, HTML, Slurm and Kubernetes channels all receive the same clean data:

* escape sequences (CSI, OSC 52 clipboard, titles, OSC 8 links, DCS / APC / PM / SOS, their
  8-bit C1 forms) are removed until none is left, since removing one can join the halves of
  another; then every remaining C0 / C1 control but the tab is dropped, so no ESC survives;
* a lone surrogate (a file name's undecodable byte, from Python's surrogateescape) is shown
  as `\\xNN`, so every string encodes as UTF-8 in any locale;
* file names keep their controls visible as `\\xNN` instead of losing them;
* secrets are replaced by `[REDACTED:<kind>]` (classifier/redact.py) unless asked not to.
"""

from __future__ import annotations

import re

from classifier.precompiled import re_compile

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any

# One escape sequence, 7-bit or 8-bit: CSI (ESC [ / 0x9b), string commands to their terminator
# or the end of the text (ESC ] P X ^ _ / 0x9d 0x90 0x98 0x9e 0x9f), then any other ESC
# sequence (charset selection, RIS `ESC c`, keypad modes).
_SEQUENCE = re_compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?")
_CONTROL = re_compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_BREAKS = re_compile(r"[\n\r\v\f\u2028\u2029]+")  # a line break inside a value reads as a space
_SURROGATE = re_compile(r"[\ud800-\udfff]")
# Any character one of the patterns above acts on: most strings hold none and are kept as is.
_SPECIAL = re_compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NAME_KEYS = frozenset({"file", "job"})  # keys whose strings are file names, not log text


def _escape_char(m: re.Match) -> str:
    code = ord(m.group())
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's stand-in for the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def strip_controls(text: str) -> str:
    """Return `text` without escape sequences or control characters (tab kept)."""
    if not _SPECIAL.search(text):
        return text
    while True:
        shorter = _SEQUENCE.sub("", text)
        if shorter == text:
            break
        text = shorter
    return _SURROGATE.sub(_escape_char, _CONTROL.sub("", _BREAKS.sub(" ", text)))


def escape_name(name: str) -> str:
    """Return a file name with controls and undecodable bytes shown as `\\xNN`."""
    if not _SPECIAL.search(name):
        return name
    return _SURROGATE.sub(_escape_char, _CONTROL.sub(_escape_char, name))


def _clean(value: Any, key: str | None = None) -> Any:
    if isinstance(value, str):
        return escape_name(value) if key in _NAME_KEYS else strip_controls(value)
    if isinstance(value, list):
        return [_clean(v, key) for v in value]
    if isinstance(value, dict):
        return {(strip_controls(k) if isinstance(k, str) else k): _clean(v, k)
                for k, v in value.items()}
    return value


def finish(result: dict[str, Any], redact: bool = True) -> dict[str, Any]:
    """Return the result cleaned of controls and, unless `redact` is False, of secrets."""
    cleaned = _clean(result)
    if not redact:
        return cleaned
    from classifier.redact import redact_diagnosis
    return redact_diagnosis(cleaned)


# JSON Lines readers that are JavaScript (or split lines the Unicode way, as Python's
# str.splitlines does) break a line at U+2028, U+2029 and U+0085: keep them escaped.
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"})


def json_line(obj: Any, ascii_only: bool = False) -> str:
    """One JSON object on one line, safe for any line splitter; surrogates shown escaped."""
    import json  # triage's output only: not on a single diagnosis's start
    text = json.dumps(obj, ensure_ascii=ascii_only)
    return _SURROGATE.sub(lambda m: "\\" + _escape_char(m), text).translate(_LINE_BREAKS)
