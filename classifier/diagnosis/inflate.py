"""Compressed inputs: zstd's frames read like a GzipFile, and inflating ahead on a thread.

zlib, bz2, lzma and zstd release the GIL while they decompress, so a thread that inflates a
few blocks ahead overlaps the work instead of taking turns with it: a 30 MB `.gz` costs the
inflation or the diagnosis, whichever is longer, not both.
"""

import queue
import threading
from collections.abc import Callable

DEPTH = 4            # blocks inflated ahead: memory stays within DEPTH chunks
OUT = 1 << 20        # decompressed bytes a zstd read hands back (about, at most)
ZSTD_READ = 1 << 16  # compressed bytes read at a time
ZSTD_FEED = 256      # compressed bytes per decompress call: at most ~8 MiB out (zstd's limit)


class ReadAhead:
    """Calls `read(size)` on a thread, up to DEPTH blocks ahead; its errors come back in order."""

    def __init__(self, read: Callable[[int], bytes], size: int, depth: int = DEPTH) -> None:
        self._blocks: queue.Queue = queue.Queue(depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(read, size), daemon=True,
                                        name="dsdiag-read-ahead")
        self._thread.start()

    def _run(self, read, size):
        while not self._stop.is_set():
            try:
                item = (read(size), None)
            except Exception as exc:  # handed to the reader, which decides what it means
                item = (b"", exc)
            while not self._stop.is_set():
                try:
                    self._blocks.put(item, timeout=0.05)
                    break
                except queue.Full:
                    continue
            if item[1] is not None or not item[0]:
                return  # the end of the stream, or an error: nothing follows

    def __call__(self, _size: int = 0) -> bytes:
        """The next block (b"" at the end), or the exception reading it raised."""
        block, exc = self._blocks.get()
        if exc is not None:
            raise exc
        return block

    def close(self) -> None:
        """Stop reading ahead; the thread is gone (or stuck in one last read) on return."""
        self._stop.set()
        self._thread.join(timeout=5)


class Zstd:
    """A zstd stream read like GzipFile: frames one after another (`cat a.zst b.zst`), and a
    stream that stops inside a frame raises EOFError (zstandard's own reader says nothing).
    Without the zstandard package it raises `missing` (read.py's InputError) with the reason."""

    def __init__(self, raw, name, missing=ImportError):
        try:
            import zstandard
        except ImportError:
            raise missing(f"{name}: zstd-compressed, and the zstandard package is missing "
                          f"(pip install zstandard)") from None
        self._zstd = zstandard
        self._raw = raw
        self._obj = zstandard.ZstdDecompressor().decompressobj()
        self._in_frame = False
        self._block = b""
        self._pos = 0

    def read(self, n=-1):
        # The decompressor hands back all the output of what it is fed, and a zstd block of
        # 4 bytes can stand for 128 KiB: fed ZSTD_FEED bytes at a time, one step's output stays
        # within a few MiB however far the stream inflates.
        while True:
            if self._pos >= len(self._block):
                self._block, self._pos = self._raw.read(ZSTD_READ), 0
                if not self._block:
                    if self._in_frame:
                        raise EOFError("the last zstd frame is cut")
                    return b""
            out, size = [], 0
            while self._pos < len(self._block) and size < OUT:
                piece = self._block[self._pos:self._pos + ZSTD_FEED]
                self._pos += len(piece)
                try:
                    data = self._feed(piece)
                except self._zstd.ZstdError as exc:
                    raise EOFError(str(exc)) from None
                out.append(data)
                size += len(data)
            if size:
                return b"".join(out)

    read1 = read

    def _feed(self, block):
        out = []
        while block:
            if self._obj.eof:
                self._obj = self._zstd.ZstdDecompressor().decompressobj()
            out.append(self._obj.decompress(block))
            block = self._obj.unused_data if self._obj.eof else b""
        self._in_frame = not self._obj.eof
        return b"".join(out)
