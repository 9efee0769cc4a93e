"""Typed facts: the values rules capture, turned from log text into JSON numbers and sizes.

Rules capture strings; the JSON contract (schema_version 2) gives each fact name one type, so
`jq '.facts.port == 29500'` works. The type goes by the fact's name: counts, ranks, ports and
ids are ints, loss scales floats, memory sizes and timeouts objects that keep the unit the log
printed next to a value in one base unit. A value the log printed in a form its type cannot
read (a user rule capturing words under a numeric name) stays the string it was.
"""

import re
from collections.abc import Mapping

from classifier.numbers import finite_float, small_int
from classifier.precompiled import re_compile

INT_FACTS = frozenset({
    # ranks and how many there are
    "rank", "rank_a", "rank_b", "local_rank", "world_size", "device_count", "joined", "skipped",
    # network and processes
    "port", "peer_port", "pid", "retcode", "exit_code",
    # batch arithmetic (captured and derived)
    "train_batch_size", "micro_batch", "grad_acc", "expected_train_batch_size",
    "suggested_grad_acc",
    # counters, ids, positions, steps
    "count", "overflows", "events", "retries", "seq", "last_completed", "last_enqueued", "xid", "gpu", "task",
    "line", "column", "pos", "expected_pos", "available_tokens", "steps_taken", "total_steps",
    "version_a", "version_b", "driver_version",
    # durations whose unit is in the name
    "timeout_ms", "elapsed_ms", "timeout_s", "heartbeat_s",
})
LIST_FACTS = frozenset({"ranks", "xid_codes"})  # lists of ints
FLOAT_FACTS = frozenset({"scale", "first_scale", "last_scale", "min_scale", "model_probability"})
# Memory sizes: "3.82 GiB", "120987424kB", or bare digits, which every message these come from
# prints in bytes (Slurm's memory limit, the Rust allocator, DeepSpeed's KV-cache sizing).
SIZE_FACTS = frozenset({"requested", "free", "total", "allocated", "reserved",
                        "reserved_unallocated", "used", "limit", "needed", "size", "anon_rss",
                        "total_vm"})
DURATION_FACTS = frozenset({"timeout"})

# PyTorch prints binary units (GiB); the kernel's "kB" is 1024 bytes; hub downloads print
# decimal MB (huggingface_hub divides by 1e6).
_UNIT_BYTES = {"B": 1, "bytes": 1, "byte": 1, "kB": 1024,
               "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
               "EiB": 1 << 60,
               # Kubernetes quantities (`16Gi`, an eviction's memory limit) are binary too
               "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
               # TensorFlow's and XLA's allocators print a bare letter (`7.35G (7889485824 bytes)`)
               "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40,
               "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12, "PB": 10 ** 15,
               "EB": 10 ** 18}
# numpy prints three significant digits: `926. GiB`; CuPy < 6 groups thousands: `25,600,000 bytes`
_SIZE = re_compile(r"^(-?\d{1,3}(?:,\d{3})+|-?\d+(?:\.\d*)?)\s*([A-Za-z]*)$")
_DURATION = re_compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|m|min)$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "min": 60}


def _number(text: str) -> float | int | None:
    return small_int(text) if re.fullmatch(r"-?\d+", text) else finite_float(text)


def parse_size(text: str) -> dict[str, object] | None:
    """'3.82 GiB' -> {value, unit, bytes, text}; bare digits are bytes; None if not a size."""
    m = _SIZE.match(text.strip())
    if not m or m.group(2) not in _UNIT_BYTES and m.group(2):
        return None
    unit = m.group(2) or "B"
    value = _number(m.group(1).replace(",", ""))
    if value is None:
        return None
    shown = text.strip() if m.group(2) else f"{value} bytes"
    size = value * _UNIT_BYTES[unit]
    if size - size != 0:  # inf: no size
        return None
    return {"value": value, "unit": "B" if unit in ("bytes", "byte") else unit,
            "bytes": round(size), "text": shown}


def parse_duration(text: str) -> dict[str, object] | None:
    """'600000ms' -> {value, unit, seconds, text}; None if not a duration."""
    m = _DURATION.match(text.strip())
    if not m:
        return None
    value = _number(m.group(1))
    if value is None:
        return None
    return {"value": value, "unit": m.group(2), "seconds": value * _UNIT_SECONDS[m.group(2)],
            "text": text.strip()}


def typed_value(name: str, value: object) -> object:
    """The value of fact `name` in its JSON type; the value unchanged when it does not read."""
    if not isinstance(value, str):
        return value
    if name in LIST_FACTS:  # a list the message printed ("Ranks 1, 3 failed to pass ...")
        ranks = [small_int(r) for r in re.findall(r"\d+", value)]
        return ranks if ranks and None not in ranks else value
    text = value.strip().replace(",", "") if name in INT_FACTS | FLOAT_FACTS else value
    if name in INT_FACTS:
        number = finite_float(text)
        return int(number) if number is not None and number.is_integer() else value
    if name in FLOAT_FACTS:
        number = finite_float(text)
        return value if number is None else number
    if name in SIZE_FACTS:
        return parse_size(value) or value
    if name in DURATION_FACTS:
        return parse_duration(value) or value
    return value


def typed_facts(facts: Mapping[str, object]) -> dict[str, object]:
    """Every fact in its JSON type (see the module docstring)."""
    return {name: typed_value(name, value) for name, value in facts.items()}


def fact_text(value: object) -> str:
    """The human form of a typed fact: '3.82 GiB', '29500', '1, 3'."""
    if isinstance(value, dict) and "text" in value:
        return str(value["text"])
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fact_text(v) for v in value)
    return str(value)
