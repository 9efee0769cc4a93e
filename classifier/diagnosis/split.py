"""Both cores on a big log file: a forked process scans the file's second half meanwhile.

Hyperscan lets go of the GIL while it scans, but every match it reports is a Python call that
takes the GIL back, so a scanner thread and the reader share one core's worth of Python (the
keyword-dense 1 GB log: CPU time about equal to wall time). A forked process has a GIL of its
own. For a regular file of at least SPLIT_MIN bytes, the file is cut into chunks by a rule both
processes can apply on their own — chunk k ends after the last newline of the k-th block of
`chunk_bytes` — and a child process scans the chunks from the middle on, sending each one's
matches and newline count through a pipe, while this process scans the first half and walks
every chunk in order as before. A chunk the child did not send (it stopped, or died) is scanned
here, so the lines selected are the same in every case (tests/diagnosis/test_split.py).
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Iterator

from classifier.diagnosis.chunking import newlines, use_numpy

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any

SPLIT_MIN = 256 << 20   # below this a fork, its pipe and a second scratch cost more than they save
# The child's part of the chunks: this process also walks all of them, and the reports of the
# ones it scans cost its walk the GIL. Keyword-dense 1 GB log, best of 4: 0.6 1.35 s, 0.8 1.29 s,
# 0.9 1.32 s (one process: 1.42 s).
CHILD_SHARE = 0.75
_PIPE_BYTES = 1 << 20   # the child's results may run this far ahead of the reader
_F_SETPIPE_SZ = 1031    # Linux fcntl
_HEADER = 4             # a message's length, little-endian, before its body (no struct: ~0.4 ms a start)
_LOOK = 64 * 1024       # bytes at a block's end searched for its last newline first


def big_file(path: str | None, chunk_bytes: int) -> int:
    """The size of a regular, uncompressed file of at least SPLIT_MIN bytes, else 0."""
    if path is None or path == "-" or not hasattr(os, "fork"):
        return 0
    try:
        import stat
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size < max(SPLIT_MIN, 4 * chunk_bytes):
            return 0
        from classifier.diagnosis.read import _sniff
        with open(path, "rb") as fh:
            if _sniff(fh.read(6)) is not None:  # compressed, UTF-16 or an archive: one reader
                return 0
    except OSError:
        return 0
    return info.st_size


def can_fork(finder: Any) -> bool:
    """Whether a child may scan: Hyperscan's finder, a second CPU, no thread but this one (a
    fork copies only the thread that calls it)."""
    import threading  # here, not at the top: a small input never asks (~1 ms a start)
    return getattr(finder, "parallel", False) and (os.cpu_count() or 1) > 1 \
        and threading.active_count() == 1


def file_chunks(fd: int, size: int, chunk_bytes: int, first: int = 0) -> Iterator[tuple]:
    """Yield (k, chunk, last) from chunk `first` on: chunk k runs from the end of chunk k-1 to
    the last newline of block k (bytes [k * chunk_bytes, (k + 1) * chunk_bytes)), the last one
    to the end of the file. Stops early, yielding (k, None, offset), at a block with no newline
    (a line longer than a block: the line-chunker's truncation takes over from `offset`)."""
    blocks = -(-size // chunk_bytes)
    start = 0
    if first:
        prev = os.pread(fd, chunk_bytes, (first - 1) * chunk_bytes)
        nl = prev.rfind(b"\n")
        if nl < 0:
            yield first, None, (first - 1) * chunk_bytes
            return
        start = (first - 1) * chunk_bytes + nl + 1
    for k in range(first, blocks):
        end = min((k + 1) * chunk_bytes, size)
        last = k == blocks - 1
        if not last:
            # The block's last newline, looked for in its end first: one small extra read.
            look = min(_LOOK, end - k * chunk_bytes)
            nl = os.pread(fd, look, end - look).rfind(b"\n")
            if nl < 0 and look < end - k * chunk_bytes:
                look = end - k * chunk_bytes
                nl = os.pread(fd, look, end - look).rfind(b"\n")
            if nl < 0:
                yield k, None, start
                return
            end = end - look + nl + 1
        chunk = os.pread(fd, end - start, start)
        if len(chunk) < end - start:  # the file shrank: what is there ends it
            last = True
        if last and chunk and not chunk.endswith(b"\n"):
            chunk += b"\n"
        yield k, chunk, last
        if last:
            return
        start = end


class Child:
    """A forked process scanning chunks first..end of a file; their results, read in order."""

    def __init__(self, path: str, size: int, chunk_bytes: int, finder: Any) -> None:
        blocks = -(-size // chunk_bytes)
        self.first = blocks - int(blocks * CHILD_SHARE)
        read_end, write_end = os.pipe()
        try:
            import fcntl
            fcntl.fcntl(write_end, _F_SETPIPE_SZ, _PIPE_BYTES)
        except (ImportError, OSError):
            pass  # a smaller pipe only lets the child run less far ahead
        self.pid = os.fork()
        if self.pid == 0:  # the child: scan, send, and leave without running anything of ours
            code = 1
            try:
                os.close(read_end)
                _scan_part(path, size, chunk_bytes, self.first, finder, write_end)
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        self._pipe = os.fdopen(read_end, "rb")
        self._next = self.first

    def result(self, k: int) -> tuple | None:
        """(found, newline count) of chunk k as the child scanned it, or None (not sent)."""
        if k < self._next or self._pipe is None:
            return None
        while True:
            head = self._pipe.read(_HEADER)
            if len(head) < _HEADER:
                self._pipe = None  # the child stopped: the rest is scanned here
                return None
            body = self._pipe.read(int.from_bytes(head, "little"))
            index, starts, reaches, count = marshal.loads(body)
            self._next = index + 1
            if index == k:
                return dict(zip(starts, reaches)), count
            if index > k:
                return None

    def close(self) -> None:
        """Stop the child (it may still be scanning) and reap it."""
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None
        try:
            os.kill(self.pid, 9)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _scan_part(path: str, size: int, chunk_bytes: int, first: int, finder: Any, out: int) -> None:
    if -(-size // chunk_bytes) - first > 128:
        use_numpy()
    fd = os.open(path, os.O_RDONLY)
    with os.fdopen(out, "wb", buffering=0) as pipe:
        for k, chunk, last in file_chunks(fd, size, chunk_bytes, first):
            if chunk is None:
                return
            found = finder.scan(chunk)
            body = marshal.dumps((k, list(found), list(found.values()), newlines(chunk)))
            pipe.write(len(body).to_bytes(_HEADER, "little") + body)


def parent_pieces(path: str, size: int, chunk_bytes: int, source: str, warnings: Any) -> Iterator[tuple]:
    """(k, chunk, last) of the whole file as file_chunks cuts it; past a block with no newline,
    (None, chunk, last) as the line-chunker cuts the rest (no child result matches those)."""
    fd = os.open(path, os.O_RDONLY)
    done = False
    try:
        for k, chunk, last in file_chunks(fd, size, chunk_bytes):
            if chunk is not None:
                yield k, chunk, last
                done = last
                continue
            from classifier.diagnosis.chunking import line_chunks

            def rest(at=last):
                while at < size:
                    block = os.pread(fd, min(chunk_bytes, size - at), at)
                    if not block:
                        return
                    at += len(block)
                    yield block
            for piece, end in line_chunks(rest(), source, warnings, chunk_bytes):
                yield None, piece, end
            done = True
    finally:
        if done:  # read to its size at the start: say so if it went on growing (as _Capped does)
            from classifier.diagnosis.follow import still_growing
            now = os.fstat(fd).st_size
            if now > size:
                still_growing(warnings, source, size, now)
        os.close(fd)


class ChildBox:
    """A chunk's scan as a Scanners box: the child's result, or a scan here when it sent none."""

    def __init__(self, child: Child, k: int, finder: Any, chunk: bytes) -> None:
        self._args = child, k, finder, chunk

    def get(self) -> tuple:
        """(True, (found, newline count)), as a scanner thread's box holds it."""
        child, k, finder, chunk = self._args
        got = child.result(k)
        return True, got if got is not None else (finder.scan(chunk), newlines(chunk))
