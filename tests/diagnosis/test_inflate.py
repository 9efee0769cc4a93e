"""zlib-ng inflating a .gz log reads exactly what the standard gzip reader reads.

The same blocks, the same bytes before a cut or a corrupt byte, the same warnings (their
messages included), the same point where the ratio limit stops a bomb; and the bytes and
errors are those of the standard library's GzipFile, handed on in blocks of the size asked
for, as a plain file's are.
"""

import functools
import gzip
import random
import zlib

import pytest

from classifier.diagnosis import inflate
from classifier.diagnosis.read import InputLimits, Warnings, byte_chunks

pytestmark = pytest.mark.skipif(inflate._NG_FACTORY is None, reason="zlib-ng is not installed")


def _body(lines=60000, seed=1):
    rng = random.Random(seed)
    return b"".join(b"[rank%d]: step %d NCCL INFO Channel %02d : %x\n"
                    % (i % 8, i, i % 32, rng.getrandbits(44)) for i in range(lines))


@functools.lru_cache(maxsize=1)
def _gz_cases():
    body = _body()
    cases = {}
    for level in (1, 6, 9):
        g = gzip.compress(body, level)
        cases[f"whole{level}"] = g
        for cut in (11, 40, 333, 4097, 65536, 131072 + 5, len(g) // 2, len(g) - 9, len(g) - 1):
            cases[f"cut{level}-{cut}"] = g[:cut]
        for pos in (30, 5000, len(g) // 3, len(g) - 6):
            flipped = bytearray(g)
            flipped[pos] ^= 0x5A
            cases[f"flip{level}-{pos}"] = bytes(flipped)
    g = gzip.compress(body)
    cases["members"] = g + gzip.compress(b"RuntimeError: CUDA out of memory\n")
    cases["zero padding"] = g + b"\0" * 1000
    cases["garbage after"] = g + b"not gzip at all\n"
    cases["header only"] = g[:10]
    cases["bomb"] = gzip.compress(b"\n" * (80 << 20), 1)  # stopped by the ratio limit
    return cases


def _read(path, limits):
    warnings = Warnings()
    blocks = list(byte_chunks(str(path), warnings, 1 << 20, limits))
    return [len(b) for b in blocks], b"".join(blocks), warnings.as_list()


@pytest.mark.parametrize("name", sorted(_gz_cases()))
def test_zlib_ng_reads_what_the_standard_reader_reads(tmp_path, monkeypatch, name):
    path = tmp_path / "x.log.gz"
    path.write_bytes(_gz_cases()[name])
    limits = InputLimits(max_ratio=100, max_decompressed=16 << 30)
    fast = _read(path, limits)
    monkeypatch.setattr(inflate, "_NG_FACTORY", None)
    assert fast == _read(path, limits)


def _stdlib(data):
    """(bytes, the error's text or None) of gzip.GzipFile reading `data` until it stops."""
    import io
    out, error = [], None
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
        try:
            while block := fh.read1(1 << 16):
                out.append(block)
        except (EOFError, OSError, zlib.error) as exc:
            error = str(exc)
    return b"".join(out), error


@pytest.mark.parametrize("name", sorted(set(_gz_cases()) - {"bomb"}))
def test_the_bytes_and_errors_are_gzipfiles_in_plain_file_blocks(tmp_path, name):
    path = tmp_path / "x.log.gz"
    path.write_bytes(_gz_cases()[name])
    sizes, data, warnings = _read(path, InputLimits())
    want, error = _stdlib(_gz_cases()[name])
    assert data == want
    assert all(size == 1 << 20 for size in sizes[:-1]) and sizes[-1:] <= [1 << 20]
    if error is None:
        assert warnings == []
    else:
        assert [w["code"] for w in warnings] == ["truncated_input"] and f"({error})" in warnings[0]["message"]


def test_the_fast_reader_is_the_one_used(tmp_path):
    path = tmp_path / "x.log.gz"
    path.write_bytes(gzip.compress(b"hello\n"))
    with open(path, "rb") as fh:
        assert inflate.gzip_reader(fh)._read.__self__._ng
    _, data, warnings = _read(path, InputLimits())
    assert data == b"hello\n" and warnings == []
