"""Reading a gzip stream: the standard library's reader, with zlib-ng doing the inflating.

`gzip -dc | grep` is what a `.gz` log is measured against, and CPython's zlib inflates about
half as fast as zlib-ng (30 MB of log text: ~35 ms against ~15 ms here). zlib-ng is a fork of
zlib's own inflate: it hands back the same bytes at every point of a stream, a stream cut
short included, and raises the same messages. So only the decompressor is swapped, inside the
standard library's gzip reader, which keeps everything else as it was: member headers and
trailers, concatenated members, zero padding, the CRC and length checks and every error.
The text is handed on in blocks of the size asked for, as a plain file's is (_Filled), and
inflated READ_IN compressed bytes at a time, so that a thread can inflate ahead of the scan
with few returns to the GIL (ahead.py). Without zlib-ng it is the same reader with zlib's
decompressor; on a Python without gzip._GzipReader, gzip.GzipFile.
"""

import gzip
import io
import zlib


def _zlib_ng():
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        return None
    return zlib_ng


_NG = _zlib_ng()
# What the standard reader calls to make each member's decompressor: zlib.decompressobj up
# to Python 3.11, zlib._ZlibDecompressor from 3.12; zlib-ng has both under the same names.
_STD_FACTORY = getattr(zlib, "_ZlibDecompressor", zlib.decompressobj)
_NG_FACTORY = getattr(_NG, _STD_FACTORY.__name__, None) if _NG else None

# The errors a gzip stream may raise while it is read, beside EOFError and OSError.
STREAM_ERRORS = (zlib.error,) + ((_NG.error,) if _NG else ())


# Compressed bytes per inflate call. Python 3.11's reader takes 8 KiB at a time (~100 KB of
# text), so a block of text cost ten rounds of its Python glue, each one taking the GIL back
# from the scan; 3.12's takes 128 KiB itself.
READ_IN = 128 * 1024


if hasattr(gzip, "_GzipReader"):
    class _Reader(gzip._GzipReader):
        """gzip._GzipReader with zlib-ng's decompressor and CRC where installed (the same
        values, faster), reading READ_IN compressed bytes at a time."""

        def __init__(self, fp):
            super().__init__(fp)
            self._ng = _NG_FACTORY is not None and self._decomp_factory is _STD_FACTORY
            if self._ng:
                self._decomp_factory = _NG_FACTORY
                self._decompressor = _NG_FACTORY(**self._decomp_args)

        def _add_read_data(self, data):
            self._crc = (_NG.crc32 if self._ng else zlib.crc32)(data, self._crc)
            self._stream_size = self._stream_size + len(data)

        if _STD_FACTORY is zlib.decompressobj:
            def read(self, size=-1):
                """Python 3.11's _GzipReader.read, READ_IN compressed bytes at a time."""
                if size < 0:
                    return self.readall()
                if not size:
                    return b""
                while True:
                    if self._decompressor.eof:
                        # A member ends: check its CRC and size, go on to the next one.
                        self._read_eof()
                        self._new_member = True
                        self._decompressor = self._decomp_factory(**self._decomp_args)
                    if self._new_member:
                        self._init_read()
                        if not self._read_gzip_header():
                            self._size = self._pos
                            return b""
                        self._new_member = False
                    buf = self._fp.read(READ_IN)
                    uncompress = self._decompressor.decompress(buf, size)
                    if self._decompressor.unconsumed_tail != b"":
                        self._fp.prepend(self._decompressor.unconsumed_tail)
                    elif self._decompressor.unused_data != b"":
                        self._fp.prepend(self._decompressor.unused_data)
                    if uncompress != b"":
                        break
                    if buf == b"":
                        raise EOFError("Compressed file ended before the "
                                       "end-of-stream marker was reached")
                self._add_read_data(uncompress)
                self._pos += len(uncompress)
                return uncompress


class _Filled:
    """A stream read in blocks of exactly the size asked for, as a file is: fewer bytes only
    at its end. What came before an error is handed on first; the error comes at the next read."""

    def __init__(self, read):
        self._read = read
        self._error = None

    def read(self, size: int) -> bytes:
        """The next `size` bytes (fewer at the end, b"" after it)."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        pieces, have = [], 0
        while have < size:
            try:
                piece = self._read(size - have)
            except Exception as exc:  # noqa: BLE001 - raised at the next read, as it came
                if not pieces:
                    raise
                self._error = exc
                break
            if not piece:
                break
            pieces.append(piece)
            have += len(piece)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def gzip_reader(stream: io.RawIOBase) -> _Filled:
    """A reader of the gzip stream `stream` whose read(n) hands back n bytes at a time, as a
    plain file's does: the chunks a log is cut into (prefilter.py) do not depend on whether
    it came compressed, nor on where its deflate blocks fell."""
    if not hasattr(gzip, "_GzipReader"):
        return _Filled(gzip.GzipFile(fileobj=stream).read1)
    # Not under GzipFile's BufferedReader, whose read1(n) copies what the reader's read(n)
    # returns (~2% of a 30 MB .gz's instructions).
    return _Filled(_Reader(stream).read)
