"""Stage 1: turn raw bytes (files, stdin, compressed streams) into numbered text lines.

Logs from crashed jobs are hostile input: cut mid-line, binary tails, NUL padding, invalid
UTF-8, tqdm's `\\r` rewrites, lines of megabytes. The reader never stops early and holds at
most one chunk plus one (capped) line in memory.
"""

import bz2
import codecs
import gzip
import lzma
import os
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

CHUNK = 1 << 20
MAX_LINE = 64 * 1024

# Magic bytes decide the decompressor, not the file name: logs get renamed and piped.
_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
)


class InputError(Exception):
    """An input that cannot be opened or read at all (exit code 2)."""


class Warnings:
    """Collects reader warnings once per code, with a count, for the JSON `warnings` list."""

    def __init__(self) -> None:
        self._items = {}

    def add(self, code: str, message: str) -> None:
        """Record one occurrence of a warning code."""
        if code in self._items:
            self._items[code][1] += 1
        else:
            self._items[code] = [message, 1]

    def as_list(self) -> list[dict[str, str]]:
        """Return the warnings as [{code, message}] in first-seen order."""
        out = []
        for code, (message, count) in self._items.items():
            suffix = f" ({count} times)" if count > 1 else ""
            out.append({"code": code, "message": message + suffix})
        return out


@dataclass(slots=True, eq=False)
class RawLine:
    """One physical line of one input, 1-based, decoded with replacement characters."""

    source: str
    lineno: int
    text: str


def display_name(path: str) -> str:
    """Name an input the way the user gave it; stdin is shown as `<stdin>`."""
    return "<stdin>" if path == "-" else path


def check_readable(path: str) -> None:
    """Raise InputError with a one-line reason if `path` cannot be read as a log."""
    if path == "-":
        return
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory")
    try:
        if stat.S_ISREG(os.stat(path).st_mode):
            with open(path, "rb"):
                pass
        elif not os.access(path, os.R_OK):
            # Opening a FIFO to test it would block, and consume its writer's only connection.
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None


def _open_binary(path):
    if path == "-":
        return sys.stdin.buffer
    return open(path, "rb")


def _sniff(head):
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf16"
    return None


class _Peeked:
    """A binary stream with its first bytes already read (stdin cannot seek back)."""

    def __init__(self, head, stream):
        self._head = head
        self._stream = stream

    def read(self, n=-1):
        if self._head:
            if n < 0:
                out, self._head = self._head, b""
                return out + self._stream.read()
            out, self._head = self._head[:n], self._head[n:]
            return out
        return self._stream.read(n)


def byte_chunks(path: str, warnings: Warnings,
                chunk_size: int = CHUNK) -> Iterator[bytes]:
    """Yield decompressed byte chunks of one input, warning (not failing) on a cut stream."""
    try:
        raw = _open_binary(path)
        head = raw.read(6)
    except OSError as exc:
        # Opened but unreadable (EIO, a vanished mount): nothing to diagnose at all.
        raise InputError(f"{display_name(path)}: {exc.strerror or exc}") from None
    try:
        kind = _sniff(head)
        stream = _Peeked(head, raw)
        if kind == "gzip":
            stream = gzip.GzipFile(fileobj=stream)
        elif kind == "bz2":
            stream = bz2.BZ2File(stream)
        elif kind == "xz":
            stream = lzma.LZMAFile(stream)
        if kind == "utf16":
            # Re-encode to UTF-8 so the line splitter below stays byte-based.
            decoder = codecs.getincrementaldecoder("utf-16")(errors="replace")
            while True:
                block = stream.read(chunk_size)
                text = decoder.decode(block, final=not block)
                if text:
                    yield text.encode("utf-8")
                if not block:
                    return
        # read1 hands over each decompressed piece as it comes, so a stream cut short
        # loses only its last piece, not the whole chunk being assembled.
        read = getattr(stream, "read1", stream.read)
        while True:
            try:
                block = read(chunk_size)
            except (EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
                what = "compressed stream ends early" if kind else "read failed"
                warnings.add("truncated_input",
                             f"{display_name(path)}: {what} ({exc}); diagnosed what could be read")
                return
            if not block:
                return
            yield block
    finally:
        if raw is not sys.stdin.buffer:
            raw.close()


def decode_line(line_bytes: bytes, source: str, warnings: Warnings) -> str:
    """Return one line's bytes as text: NULs dropped, invalid UTF-8 replaced, trailing CRs cut."""
    if b"\x00" in line_bytes:
        warnings.add("nul_bytes", f"{source}: NUL bytes ignored")
        line_bytes = line_bytes.replace(b"\x00", b"")
    text = line_bytes.decode("utf-8", errors="replace")
    if text.endswith("\r"):
        text = text.rstrip("\r")
    return text


def split_lines(chunks: Iterable[bytes], source: str,
                warnings: Warnings) -> Iterator[RawLine]:
    """Yield RawLines from byte chunks; where the chunks are cut never changes the lines."""
    pending = bytearray()
    skipping = False  # inside the remainder of an over-long line
    lineno = 0
    for block in chunks:
        start = 0
        while True:
            nl = block.find(b"\n", start)
            piece = block[start:] if nl < 0 else block[start:nl]
            if not skipping:
                room = MAX_LINE - len(pending)
                if len(piece) > room:
                    pending += piece[:room]
                    skipping = True
                    warnings.add("line_truncated",
                                 f"{source}: lines over {MAX_LINE // 1024} KiB truncated")
                else:
                    pending += piece
            if nl < 0:
                break
            lineno += 1
            yield RawLine(source, lineno, decode_line(bytes(pending), source, warnings))
            pending.clear()
            skipping = False
            start = nl + 1
    if pending or skipping:
        lineno += 1
        yield RawLine(source, lineno, decode_line(bytes(pending), source, warnings))


def read_lines(path: str, warnings: Warnings,
               chunk_size: int = CHUNK) -> Iterator[RawLine]:
    """Yield RawLine for every line of `path` ('-' is stdin); bytes never stop the scan."""
    return split_lines(byte_chunks(path, warnings, chunk_size), display_name(path), warnings)
