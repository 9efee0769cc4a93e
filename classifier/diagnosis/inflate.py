"""Reading a gzip stream: the standard library's reader, with zlib-ng doing the inflating.

`gzip -dc | grep` is what a `.gz` log is measured against, and CPython's zlib inflates about
half as fast as zlib-ng (30 MB of log text: ~35 ms against ~15 ms here). zlib-ng is a fork of
zlib's own inflate: it hands back the same bytes at every point of a stream, a stream cut
short included, and raises the same messages. So only the decompressor is swapped, inside the
standard library's gzip reader, which keeps everything else as it was: member headers and
trailers, concatenated members, zero padding, the CRC and length checks, how much compressed
input is read at a time (what the ratio limit divides by) and every error. Without zlib-ng,
or on a Python whose gzip reader is built another way, it is the standard reader unchanged.
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
if not hasattr(gzip, "_GzipReader"):
    _NG_FACTORY = None

# The errors a gzip stream may raise while it is read, beside EOFError and OSError.
STREAM_ERRORS = (zlib.error,) + ((_NG.error,) if _NG else ())


if _NG_FACTORY is not None:
    class _NgGzipReader(gzip._GzipReader):
        """gzip._GzipReader with zlib-ng's decompressor and CRC (the same values, faster)."""

        def __init__(self, fp):
            super().__init__(fp)
            if self._decomp_factory is _STD_FACTORY:
                self._decomp_factory = _NG_FACTORY
                self._decompressor = _NG_FACTORY(**self._decomp_args)

        def _add_read_data(self, data):
            self._crc = _NG.crc32(data, self._crc)
            self._stream_size = self._stream_size + len(data)


def gzip_reader(stream: io.RawIOBase) -> io.IOBase:
    """A reader of the gzip stream `stream` whose read1 (or, for zlib-ng's, read) hands back
    the blocks gzip.GzipFile's read1 does."""
    if _NG_FACTORY is None:
        return gzip.GzipFile(fileobj=stream)
    # GzipFile(fileobj=...) in read mode is a BufferedReader over this reader, and its read1(n)
    # is one readinto of n bytes, which is this reader's read(n) copied into the buffer: the
    # reader alone gives the same blocks without that copy (~2% of a 30 MB .gz's instructions).
    return _NgGzipReader(stream)
