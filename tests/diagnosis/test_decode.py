"""A small input decoded at once (decode.py) reads exactly as one decoded line by line."""

import random

import pytest

from classifier.diagnosis import prefilter
from classifier.diagnosis.read import SAMPLE_CHARS, Warnings
from classifier.rules.load import default_rules

_PIECES = [b"[rank3]: ", b"NCCL INFO ", b"RuntimeError: CUDA out of memory", b"\r", b"\r\n",
           b"\xc3\xa9", b"\xe2\x82\xac", b"\xe2\x82", b"\xc3", b"\xff", b"\xed\xa0\x80", b"\x1b[31m",
           b"\x07", b"\x7f", b"\t", b"step 12", b" ", b"\xf0\x9f\x98", b"\xf0\x9f\x98\x80", b"x" * 40]


def _input(rng, lines, repeat=0.0):
    out, previous = [], b"first"
    for _ in range(lines):
        if rng.random() < repeat:
            line = previous
        else:
            line = b"".join(rng.choice(_PIECES) for _ in range(rng.randrange(0, 12)))
        out.append(line)
        previous = line
    data = b"\n".join(out)
    return data + b"\n" if rng.random() < 0.7 else data


def _read(data, monkeypatch, bulk, sampled=0):
    if not bulk:
        monkeypatch.setattr(prefilter, "decode_whole", lambda *a: None)
    warnings = Warnings()
    warnings.sampled_chars = sampled
    lines = [(r.lineno, r.text)
             for r in prefilter.select_lines([data], "x.log", warnings, lambda: default_rules().finder())]
    monkeypatch.undo()
    return lines, warnings.sampled_chars, warnings.odd_chars, warnings.as_list()


@pytest.mark.parametrize("seed", range(40))
def test_decoding_at_once_reads_what_decoding_by_line_reads(monkeypatch, seed):
    rng = random.Random(seed)
    # Short inputs (no storm bookkeeping), inputs past storms.KEEP with storms of one line,
    # and a sample that runs out inside the input.
    lines = rng.choice([1, 5, 120, 400, 900, 2100])
    data = _input(rng, lines, repeat=rng.choice([0.0, 0.5, 0.97]))
    sampled = rng.choice([0, SAMPLE_CHARS - 3000, SAMPLE_CHARS - 10, SAMPLE_CHARS])
    assert _read(data, monkeypatch, True, sampled) == _read(data, monkeypatch, False, sampled)


def test_nuls_and_long_lines_take_the_line_by_line_path(monkeypatch):
    for data in (b"a\x00b\nok\n", b"y" * (70 * 1024) + b"\nshort\n"):
        assert _read(data, monkeypatch, True) == _read(data, monkeypatch, False)
