"""Leading timestamps: their forms (normalize.py peels them) and seconds since the epoch from
their fields.

calendar.timegm's arithmetic without importing calendar (and with it datetime and locale) on
every run, and an ISO stamp's whole seconds looked up when a line before had the same ones.
"""

from classifier.precompiled import re_compile

# The forms loggers, Kubernetes, syslog and dmesg write them in.
_ISO_TS = re_compile(
    r"\[?(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[ T_](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?P<frac>[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?(?:\s*[|-]\s|\s+|$)")
_SYSLOG_TS = re_compile(
    r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+(?P<d>\d{1,2}) "
    r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.\d{1,9})?(?: \S+)?(?: kernel:)? ")
# A stamp with no date: moreutils' `ts -s` / `ts -i` / `ts '%.T'` (`00:00:05 `, `14:03:07.512208 `), rich's log column
# (`[14:03:07] `), `ts '%.s'`'s epoch seconds (`1796518808.408548 `: ten digits, 2001 to 2065). Peeled like a dated
# stamp, the level after it kept (rules read rich's `ERROR` column); a time of day alone gives the line no time.
_CLOCK_TS = re_compile(r"(?:\[(?:\d\d:){2}\d\d(?:[.,]\d{1,9})?\]|(?:\d\d:){2}\d\d(?:[.,]\d{1,9})?"
                       r"|(?P<epoch>[12]\d{9}(?:\.\d{1,9})?))(?:\s*[|-]\s|\s+)(?=\S)")
_EPOCH_END = frozenset(". \t")  # what follows an epoch stamp's ten digits: a cheap gate before the regex
_DMESG_TS = re_compile(r"\[\s*\+?\d+\.\d+\]\s")  # `dmesg` and `dmesg -H`'s `[  +0.000844]`
_DMESG_HUMAN_TS = re_compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]\s")
# Month- or day-first dates with a four-digit year: transformers' and accelerate's example
# scripts log with `%m/%d/%Y %H:%M:%S` (`12/05/2023 10:57:26 - INFO - ...`), DrQA with a 12-hour
# clock (`04/24/2018 12:11:33 PM: `), others day-first (`15/04/2023 15:21:03: `, `6-10-2022
# 08:49:15`), and a pasted stamp may be glued to the message (`08:49:15ValueError: ...`).
_DMY_TS = re_compile(
    r"\[?(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4}),?[ T](?P<h>\d{1,2}):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?P<frac>[.,]\d{1,9})?(?:\s?(?P<pm>[AaPp])[Mm])?\]?(?::?(?:\s*[|-]\s|\s+|$)|(?=[A-Z_]))")
_DMY_FIRST = frozenset("/.-")  # the date's separator, second or third character: a cheap gate

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


def dmy_seconds(m) -> int | None:
    """Seconds of a `_DMY_TS` match: month first unless the first number cannot be a month
    (the order only matters across a day boundary); None for a date no calendar has."""
    a, b = int(m["a"]), int(m["b"])
    month, day = (b, a) if a > 12 else (a, b)
    hour = int(m["h"])
    if m["pm"] is not None and hour <= 12:
        hour = hour % 12 + (12 if m["pm"] in "Pp" else 0)
    try:
        return timegm(int(m["y"]), month, day, hour, int(m["mi"]), int(m["s"]))
    except (ValueError, OverflowError):
        return None
