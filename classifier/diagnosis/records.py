"""Records around a whole log line, unwrapped before normalize.py peels its prefixes.

Split out of normalize.py: the formats a log shipper or an export wraps each line in.
"""

from classifier.precompiled import re_compile

# Wrappers around a whole line, unwrapped before the prefixes are peeled: Docker's json-file log
# driver (`{"log":"...\n","stream":"stderr","time":"..."}`, what `/var/log/containers` holds),
# the CRI format of containerd / CRI-O (`<RFC3339 time> stderr F <line>`), and a paste copied
# out of an HTML page (`&#39;`, `&quot;`, `&lt;`).
_DOCKER_JSON = re_compile(r'^\s*\{"log":\s*"')
_CRI = re_compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (?:stdout|stderr) [FP] ")
_ENTITY = re_compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|quot|amp|lt|gt|apos|nbsp);")
# A log exported as CSV rows of time and message (CloudWatch Logs Insights' `@timestamp,@message`
# download): the message unquoted (`""` is one `"`), behind its stamp. A digit after the comma is
# Python logging's milliseconds (`09:14:02,118 - INFO`), not a row.
_CSV_ROW = re_compile(r'(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?),'
                      r'(?:"(?P<quoted>(?:[^"]|""){0,65536})"|(?P<bare>[^"\d].*|))$')
# `journalctl -o json`: one record a line, the line in MESSAGE, the time in __REALTIME_TIMESTAMP
# (microseconds since the epoch, given back as an epoch stamp that peel_prefixes reads).
_JOURNAL_JSON = re_compile(r'^\s*\{"(?:__CURSOR|__REALTIME_TIMESTAMP|__MONOTONIC_TIMESTAMP|MESSAGE|PRIORITY|_[A-Z_]+)"\s*:')


def _json_record(text: str, field: str) -> dict | None:
    """The JSON object of one line when its `field` is a string, else None."""
    import json  # only JSON records need it: json costs every start ~1 ms
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) and isinstance(record.get(field), str) else None


def unwrap(text: str) -> str:
    """The log line inside a container runtime's record or an HTML-escaped paste."""
    if '{"log"' in text and _DOCKER_JSON.match(text):
        record = _json_record(text, "log")
        if record is not None:
            line = record["log"].rstrip("\n")
            time = record.get("time")
            text = f"{time} {line}" if isinstance(time, str) else line
    elif '"MESSAGE"' in text and _JOURNAL_JSON.match(text):
        record = _json_record(text, "MESSAGE")
        if record is not None:
            line = record["MESSAGE"].rstrip("\n")
            usec = record.get("__REALTIME_TIMESTAMP")
            text = (f"{int(usec) // 10**6}.{int(usec) % 10**6:06d} {line}"
                    if isinstance(usec, str) and usec.isdigit() and len(usec) == 16 else line)
    m = _CRI.match(text) if text[:1].isdigit() else None
    if m:
        text = m.group(1) + " " + text[m.end():]
    elif m is None and text[:1].isdigit() and "," in text[19:36] and (m := _CSV_ROW.match(text)):
        quoted = m["quoted"]
        text = m.group(1) + " " + (quoted.replace('""', '"') if quoted is not None else m["bare"])
    if "&" in text and _ENTITY.search(text):
        import html  # html.entities is a large table: only for lines that hold an entity
        text = html.unescape(text)
    return text
