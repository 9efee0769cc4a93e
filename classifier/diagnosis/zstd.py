"""Reading a zstd stream, as gzip.GzipFile reads a gzip one (read.byte_chunks' zstd input)."""

ZSTD_READ = 1 << 16  # compressed bytes read at a time
ZSTD_FEED = 256      # compressed bytes per decompress call: at most ~8 MiB out (zstd's limit)


class ZstdReader:
    """A zstd stream read like GzipFile: frames one after another (`cat a.zst b.zst`), and a
    stream that stops inside a frame raises EOFError (zstandard's own reader says nothing)."""

    def __init__(self, raw, chunk):
        # read.py passes its chunk size (importing read here would make a cycle) and turns the
        # ImportError of a missing zstandard into its one-line input error
        import zstandard
        self._zstd = zstandard
        self._chunk = chunk
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
            while self._pos < len(self._block) and size < self._chunk:
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
