"""Stage 1: turn raw bytes (files, stdin, compressed streams) into numbered text lines.

Logs from crashed jobs are hostile input: cut mid-line, binary tails, NUL padding, invalid
UTF-8, tqdm's `\\r` rewrites, lines of megabytes. The reader never stops early and holds at
most one chunk plus one (capped) line in memory.
"""

import codecs
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from collections import namedtuple

from classifier.precompiled import re_compile
from classifier.diagnosis.follow import Follow, open_log

CHUNK = 1 << 20
MAX_LINE = 64 * 1024

# Magic bytes decide the decompressor, not the file name: logs get renamed and piped.
_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),      # an empty zip
    (b"7z\xbc\xaf\x27\x1c", "7z"),
)
# Archives hold many files with their names; which one is the log is the user's call, so they
# are refused (exit 2) rather than guessed at or read as bytes.
ARCHIVES = ("zip", "7z")

# Text-likeness is judged on the first SAMPLE_CHARS characters a job's inputs decode to (NULs
# dropped: crashed nodes pad logs with them): above NOT_TEXT_SHARE of replacement or control
# characters, it is not a log. Random or compressed bytes score about half.
SAMPLE_CHARS = 256 * 1024
NOT_TEXT_SHARE = 0.3
_CONTROL = re_compile(r"[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd]")  # tab, LF, FF, CR, ESC are text


# Decompression bounds. Real job logs compress 5-20x (a log of nothing but NCCL INFO lines
# reaches 18x with gzip -9, 30x with xz, 43x with bz2); a stream that inflates past MAX_RATIO
# times the compressed bytes consumed is a bomb, not a log. The ratio is judged only past
# RATIO_FLOOR, so a small, very repetitive log is read whole. MAX_DECOMPRESSED caps any one
# compressed file whatever its ratio. Both are settable (--max-ratio / --max-decompressed,
# DSDIAG_MAX_RATIO / DSDIAG_MAX_DECOMPRESSED).
MAX_RATIO = 100
RATIO_FLOOR = 64 << 20
MAX_DECOMPRESSED = 16 << 30
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class InputLimits(namedtuple("InputLimits", "max_ratio max_decompressed follow",
                             defaults=(MAX_RATIO, MAX_DECOMPRESSED, None))):
    """How far the reader goes: how far a compressed input may inflate before it stops with a
    warning, and whether a growing file is read to its size at open or followed (--follow)."""

    __slots__ = ()

    @classmethod
    def from_env(cls, ratio: str | None = None, size: str | None = None) -> "InputLimits":
        """Limits from the given values, else DSDIAG_MAX_RATIO / DSDIAG_MAX_DECOMPRESSED, else defaults.

        A bad value raises ValueError with a one-line reason.
        """
        ratio = ratio if ratio is not None else os.environ.get("DSDIAG_MAX_RATIO") or None
        size = size if size is not None else os.environ.get("DSDIAG_MAX_DECOMPRESSED") or None
        return cls(parse_ratio(ratio) if ratio is not None else MAX_RATIO,
                   parse_size(size) if size is not None else MAX_DECOMPRESSED)


def parse_ratio(value: str) -> float:
    """A decompression ratio limit (a number >= 1); ValueError naming the bad value."""
    try:
        ratio = float(value)
    except ValueError:
        ratio = float("nan")
    if not ratio >= 1 or ratio == float("inf"):
        raise ValueError(f"max ratio {value!r} is not a number >= 1")
    return ratio


def parse_size(value: str) -> int:
    """A byte count such as 512M or 16G (binary units); ValueError naming the bad value."""
    m = re.fullmatch(r"\s*(\d{1,15})\s*([KMGT]?)i?B?\s*", value, re.IGNORECASE)
    if m is None or int(m.group(1)) == 0:
        raise ValueError(f"size {value!r} is not a positive byte count (e.g. 512M, 16G)")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).upper()]


def human_size(n: float) -> str:
    """A byte count for messages: 64 MiB, 1.5 GiB."""
    unit = next((u for u in ("B", "KiB", "MiB") if n < 1024 ** (1 + "BKM".index(u[0]))), "GiB")
    n /= 1024 ** ("BKMG".index(unit[0]))
    return f"{n:.0f} {unit}" if n == int(n) else f"{n:.1f} {unit}"


class InputError(Exception):
    """An input that cannot be opened or read at all (exit code 2)."""


class Warnings:
    """Collects reader warnings once per code, with a count, for the JSON `warnings` list."""

    def __init__(self) -> None:
        self._items = {}
        # The reader's sample of the text it decoded: does the input read as text at all?
        self.sampled_chars = 0
        self.odd_chars = 0

    def add(self, code: str, message: str) -> None:
        """Record one occurrence of a warning code."""
        if code in self._items:
            self._items[code][1] += 1
        else:
            self._items[code] = [message, 1]

    def looks_binary(self) -> bool:
        """True when the sampled text is mostly replacement and control characters."""
        return self.sampled_chars > 0 and self.odd_chars > NOT_TEXT_SHARE * self.sampled_chars

    def as_list(self) -> list[dict[str, str]]:
        """Return the warnings as [{code, message}] in first-seen order."""
        out = []
        for code, (message, count) in self._items.items():
            suffix = f" ({count} times)" if count > 1 else ""
            out.append({"code": code, "message": message + suffix})
        return out


class RawLine:
    """One physical line of one input, 1-based, decoded with replacement characters."""

    __slots__ = ("source", "lineno", "text")

    def __init__(self, source: str, lineno: int, text: str) -> None:
        self.source, self.lineno, self.text = source, lineno, text


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


def _sniff(head):
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf16"
    return None


def is_compressed(path: str) -> bool:
    """Is the regular file at `path` compressed (by its magic bytes)? stdin is never peeked."""
    if path == "-":
        return False
    try:
        with open(path, "rb") as fh:
            kind = _sniff(fh.read(6))
    except OSError:
        return False  # byte_chunks reports it
    return kind is not None and kind not in ARCHIVES and kind != "utf16"


class _Peeked:
    """A binary stream with its first bytes already read (stdin cannot seek back); it counts
    the bytes handed on, which for a compressed input is what the ratio limit divides by."""

    def __init__(self, head, stream):
        self._head = head
        self._stream = stream
        self.consumed = len(head)

    def read(self, n=-1):
        if self._head:
            if n < 0:
                out, self._head = self._head, b""
                rest = self._stream.read()
                self.consumed += len(rest)
                return out + rest
            out, self._head = self._head[:n], self._head[n:]
            return out
        out = self._stream.read(n)
        self.consumed += len(out)
        return out


def _over_limit(kind, total, consumed, limits):
    """Why a compressed input must stop here (a warning's text), or None."""
    if total > limits.max_decompressed:
        return (f"stopped after {human_size(limits.max_decompressed)} decompressed (the limit "
                f"per {kind} file, --max-decompressed)")
    if total > RATIO_FLOOR and total > limits.max_ratio * consumed:
        return (f"stopped after {human_size(total)} decompressed from {human_size(consumed)}: "
                f"over {limits.max_ratio:g}x is a decompression bomb, not a log (--max-ratio)")
    return None


def byte_chunks(path: str, warnings: Warnings, chunk_size: int = CHUNK,
                limits: InputLimits | None = None) -> Iterator[bytes]:
    """Yield decompressed byte chunks of one input, warning (not failing) on a cut stream or
    on one that inflates past `limits` (then the bytes before the limit are what is read)."""
    limits = limits or InputLimits()
    try:
        raw = sys.stdin.buffer if path == "-" else open_log(path, warnings, limits.follow)
        head = raw.read(6)
    except OSError as exc:
        # Opened but unreadable (EIO, a vanished mount): nothing to diagnose at all.
        raise InputError(f"{display_name(path)}: {exc.strerror or exc}") from None
    try:
        kind = _sniff(head)
        if kind in ARCHIVES:
            raise InputError(f"{display_name(path)}: a {kind} archive, not a log: unpack it and "
                             f"give dsdiag the log files or their directory")
        stream = peeked = _Peeked(head, raw)
        stream_errors = (EOFError, OSError)
        # The codec modules are imported only for input that needs them: most logs are text.
        if kind == "zstd":
            from classifier.diagnosis.zstd import ZstdReader
            try:
                stream = ZstdReader(stream, CHUNK)
            except ImportError:
                raise InputError(f"{display_name(path)}: zstd-compressed, and the zstandard "
                                 f"package is missing (pip install zstandard)") from None
        elif kind == "gzip":
            from classifier.diagnosis.inflate import STREAM_ERRORS, gzip_reader
            stream = gzip_reader(stream)
            stream_errors += STREAM_ERRORS
        elif kind == "bz2":
            import bz2
            stream = bz2.BZ2File(stream)
        elif kind == "xz":
            import lzma
            stream = lzma.LZMAFile(stream)
            stream_errors += (lzma.LZMAError,)
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
        blocks = _blocks(getattr(stream, "read1", stream.read), kind, peeked, limits,
                         display_name(path), stream_errors, chunk_size)
        if kind == "gzip" and limits.follow is None:
            # Inflated in a thread ahead of the scan (ahead.py); the same blocks, in order.
            from classifier.diagnosis.ahead import read_ahead
            blocks = read_ahead(blocks)
        # A log printed as one string past MAX_LINE is decoded into its lines (escaped.py).
        from classifier.diagnosis.escaped import unescaped
        blocks = unescaped(blocks, MAX_LINE)
        for block in blocks:
            if block.__class__ is tuple:  # a warning, added here so the order stays the reader's
                warnings.add(*block)
            else:
                yield block
    finally:
        if raw is not getattr(sys.stdin, "buffer", None):  # stdin may be closed (None)
            raw.close()


def _blocks(read, kind, peeked, limits, name, stream_errors, chunk_size):
    """byte_chunks' blocks from `read`, and each warning as its (code, message) in its place."""
    total = 0
    while True:
        try:
            block = read(chunk_size)
        except stream_errors as exc:
            what = "compressed stream ends early" if kind else "read failed"
            yield "truncated_input", f"{name}: {what} ({exc}); diagnosed what could be read"
            return
        if not block:
            return
        if kind is not None:
            total += len(block)
            why = _over_limit(kind, total, peeked.consumed, limits)
            if why:
                if total > limits.max_decompressed:
                    block = block[:len(block) - (total - limits.max_decompressed)]
                yield "input_limit", f"{name}: {why}; diagnosed what was read"
                yield block
                return
        yield block


def decode_line(line_bytes: bytes, source: str, warnings: Warnings) -> str:
    """Return one line's bytes as text: NULs dropped, invalid UTF-8 replaced, trailing CRs cut."""
    if b"\x00" in line_bytes:
        warnings.add("nul_bytes", f"{source}: NUL bytes ignored")
        line_bytes = line_bytes.replace(b"\x00", b"")
    text = line_bytes.decode("utf-8", errors="replace")
    if warnings.sampled_chars < SAMPLE_CHARS:
        warnings.sampled_chars += len(text)
        # A printable line holds no control character (_CONTROL's but U+FFFD are all category
        # Cc): one C pass instead of the regex's (~0.5 us of ~1 us a line).
        if not text.isprintable() or "\ufffd" in text:
            warnings.odd_chars += len(_CONTROL.findall(text))
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


def read_lines(path: str, warnings: Warnings, chunk_size: int = CHUNK,
               limits: InputLimits | None = None) -> Iterator[RawLine]:
    """Yield RawLine for every line of `path` ('-' is stdin); bytes never stop the scan."""
    return split_lines(byte_chunks(path, warnings, chunk_size, limits), display_name(path),
                       warnings)
