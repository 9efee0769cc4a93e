"""Seconds since the epoch from the fields of a log line's timestamp (normalize.py peels them).

calendar.timegm's arithmetic without importing calendar (and with it datetime and locale) on
every run, and an ISO stamp's whole seconds looked up when a line before had the same ones.
"""

_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


def timegm(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int:
    """calendar.timegm of these fields, without importing calendar (and with it datetime and
    locale) on every run: ValueError for a month or year a date cannot have; the day, hour,
    minute and second are added as given, as timegm does."""
    if not (1 <= month <= 12 and 1 <= year <= 9999):
        raise ValueError(f"no date has year {year}, month {month}")
    y = year - (month <= 2)  # days from 1970-01-01 to the 1st of the month (proleptic Gregorian)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468 + day - 1
    return ((days * 24 + hour) * 60 + minute) * 60 + second


_BASE_SECONDS: dict[str, int | None] = {}  # an ISO stamp's text up to its seconds -> timegm


def iso_seconds(m) -> float | None:
    """Seconds of an `_ISO_TS` match (normalize.py); None for a date no calendar has."""
    # Most lines share their second with a line before: its timegm is looked up, not redone.
    key = m.string[m.start("y"):m.end("s")]
    base = _BASE_SECONDS.get(key, _BASE_SECONDS)
    if base is _BASE_SECONDS:
        if len(_BASE_SECONDS) > 4096:
            _BASE_SECONDS.clear()
        try:
            base = timegm(int(m["y"]), int(m["mo"]), int(m["d"]),
                          int(m["h"]), int(m["mi"]), int(m["s"]))
        except (ValueError, OverflowError):
            base = None
        _BASE_SECONDS[key] = base
    if base is None:
        return None
    frac = m["frac"]
    return base + (float("0." + frac[1:]) if frac else 0.0)


def syslog_seconds(m) -> int:
    """Seconds of a `_SYSLOG_TS` match (normalize.py), in the year 2000."""
    # syslog has no year; only order within one file matters, so a fixed year is fine.
    return timegm(2000, _MONTHS[m["mon"]], int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]))
