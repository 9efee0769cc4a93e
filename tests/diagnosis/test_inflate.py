"""Reading a compressed input ahead on a thread: same blocks, same errors, and it stops."""

import gzip
import itertools
import threading

import pytest

from classifier.diagnosis.inflate import ReadAhead
from classifier.diagnosis.read import Warnings, byte_chunks


def test_blocks_come_back_in_order_then_the_error_the_read_raised():
    blocks = iter([b"a" * 10, b"b" * 10])

    def read(_size):
        block = next(blocks, None)
        if block is None:
            raise EOFError("Compressed file ended before the end-of-stream marker was reached")
        return block

    ahead = ReadAhead(read, 10)
    assert ahead() == b"a" * 10 and ahead() == b"b" * 10
    with pytest.raises(EOFError, match="end-of-stream"):
        ahead()
    ahead.close()


def test_close_stops_an_endless_stream_with_the_queue_full():
    calls = itertools.count()
    ahead = ReadAhead(lambda size: (next(calls), b"x" * size)[1], 1024, depth=2)
    assert ahead() == b"x" * 1024
    ahead.close()
    assert not any(t.name == "dsdiag-read-ahead" and t.is_alive() for t in threading.enumerate())
    assert next(calls) < 10  # it read a few blocks ahead, not on and on


def test_a_cut_gzip_read_ahead_gives_what_inflated_and_a_warning(tmp_path):
    text = b"".join(b"step %d loss 0.5\n" % i for i in range(200_000))
    whole = gzip.compress(text)
    path = tmp_path / "cut.log.gz"
    path.write_bytes(whole[: len(whole) // 2])
    warnings = Warnings()
    got = b"".join(byte_chunks(str(path), warnings, chunk_size=1 << 16))
    assert got and text.startswith(got)
    assert [w["code"] for w in warnings.as_list()] == ["truncated_input"]
