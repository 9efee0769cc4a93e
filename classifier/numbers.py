"""Numbers read out of log text.

A log line is untrusted: a garbled or hostile one can hold a digit run thousands long, which
`int()` refuses (Python's 4,300-digit guard) and `float()` turns into inf, which JSON cannot
carry. No rank, pid, step or size a job prints comes near MAX_DIGITS.
"""

MAX_DIGITS = 18


def small_int(text: str) -> int | None:
    """The integer `text` spells, or None when it is none or longer than MAX_DIGITS digits."""
    if len(text) > MAX_DIGITS + 1:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def finite_float(text: str) -> float | None:
    """The finite float `text` spells, or None (no number, NaN or out of range)."""
    if len(text) > 64:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value - value == 0 else None  # false for inf and NaN
