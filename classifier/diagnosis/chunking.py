"""The prefilter's input side: line-aligned chunks of an input, and the threads that scan them.

Split out of prefilter.py, which chooses the lines; these only cut and search.
"""

from __future__ import annotations

from classifier.diagnosis.read import MAX_LINE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any


def line_chunks(chunks, source, warnings, chunk_bytes):
    """Yield (chunk, last): pieces of about chunk_bytes that end with a newline, in order.

    One piece is held back until the next is cut, so the last is known as the last; a short
    remainder joins the piece before it, so the tail is rarely split.
    """
    held = None
    pending = b""      # the start of a line the next block goes on with
    parts, size = [], 0
    overlong = False   # dropping the rest of a line past MAX_LINE
    for block in chunks:
        if overlong:
            nl = block.find(b"\n")
            if nl < 0:
                continue
            block = block[nl:]   # keep the newline: it ends the truncated line
            overlong = False
        parts.append(block)
        size += len(block)
        if size < chunk_bytes:
            if size > MAX_LINE and block.find(b"\n") < 0 and b"\n" not in pending \
                    and not any(b"\n" in part for part in parts[:-1]):
                pending = (pending + b"".join(parts))[:MAX_LINE]
                parts, size, overlong = [], 0, True
                warnings.add("line_truncated", f"{source}: lines over {MAX_LINE // 1024} KiB truncated")
            continue
        last = parts[-1]
        cut = last.rfind(b"\n") + 1
        if cut:
            # Up to the last part's last newline, joined in one copy (not the whole, then a cut).
            if pending or len(parts) > 1 or cut < len(last):
                chunk = b"".join([pending, *parts[:-1], memoryview(last)[:cut]])
            else:
                chunk = last
            pending = last[cut:]
            parts, size = [], 0
            if held is not None:
                yield held, False
            held = chunk
            continue
        data = pending + b"".join(parts) if pending or len(parts) > 1 else parts[0]
        parts, size = [], 0
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            pending, overlong = data[:MAX_LINE], True
            warnings.add("line_truncated", f"{source}: lines over {MAX_LINE // 1024} KiB truncated")
            continue
        pending = data[cut:]
        chunk = data if cut == len(data) else data[:cut]
        if held is not None:
            yield held, False
        held = chunk
    rest = pending + b"".join(parts)
    if rest:
        if not rest.endswith(b"\n"):
            rest += b"\n"
        held = (held or b"") + rest
    if held:
        yield held, True


def _scan_and_count(finder, chunk, count=True):
    # In a scanner thread: the count overlaps the reader's I/O and the other scan.
    return finder.scan(chunk), newlines(chunk) if count else None


_numpy = None  # numpy once a big input asked for it; False: not installed


def use_numpy() -> bool:
    """Count newlines with numpy from now on, where it is installed (for big inputs: its
    import costs ~0.1 s, and it counts ~3x as fast as bytes.count, without the GIL)."""
    global _numpy
    if _numpy is None:
        import os
        # One thread for its BLAS: none is used here, and its idle workers spin and take memory.
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
            os.environ.setdefault(name, "1")
        try:
            import numpy
            _numpy = numpy
        except (ImportError, OSError):  # not installed, or not readable past a privilege drop
            _numpy = False
    return bool(_numpy)


# glibc's mallopt parameters: allocations above M_MMAP_THRESHOLD get their own mapping, and a
# free heap top above M_TRIM_THRESHOLD goes back to the kernel.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_HEAP_STEADY = 4 << 20
_steady = False


def steady_heap() -> None:
    """Keep freed chunk-sized blocks for reuse from now on (glibc only; once per process).

    A big input allocates a new 1 MB chunk (and numpy's 1 MB count buffer) per MB read; past
    glibc's default thresholds each comes as a fresh mapping whose pages the kernel faults in
    and zeroes, ~0.15 s of system time per GB. With both thresholds at 4 MB the freed blocks
    are reused; peak memory does not grow (a few chunks are in flight at any time)."""
    global _steady
    if _steady:
        return
    _steady = True
    import sys
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        if hasattr(libc, "gnu_get_libc_version"):  # glibc: not musl, whose mallopt does nothing
            libc.mallopt(_M_MMAP_THRESHOLD, _HEAP_STEADY)
            libc.mallopt(_M_TRIM_THRESHOLD, _HEAP_STEADY)
    except (ImportError, OSError, AttributeError):
        pass


def numpy_counts() -> bool:
    """Whether newlines() counts with numpy now (without holding the GIL)."""
    return bool(_numpy)


def newlines(chunk: bytes) -> int:
    """How many newlines `chunk` holds."""
    np = _numpy
    if np:
        return int(np.count_nonzero(np.frombuffer(chunk, np.uint8) == 10))
    return count_lines(chunk)


# bytes.count of one byte is a plain loop (~5 instructions a byte in CPython 3.11); deleting
# the byte with bytes.replace finds each one with memchr and copies the rest with memcpy, about
# a quarter of that where lines average over ~30 bytes. Where they are shorter, the per-line
# calls cost more than the loop: replace stops after DENSE_AT of them and count takes over.
BY_REPLACE = 16 * 1024     # shorter spans: one count call is cheaper than a copy
DENSE_AT = 32              # bytes per newline below which replace gives way to count


def count_lines(data: bytes, start: int = 0, end: int | None = None) -> int:
    """How many newlines data[start:end] holds (the same number as bytes.count, faster)."""
    end = len(data) if end is None else min(end, len(data))
    if end - start < BY_REPLACE:
        return data.count(b"\n", start, end)
    part = data if start == 0 and end == len(data) else data[start:end]
    cap = len(part) // DENSE_AT
    found = len(part) - len(part.replace(b"\n", b"", cap))
    return found if found < cap else part.count(b"\n")


class Scanners:
    """Threads that scan chunks ahead of the reader, each answer in its own one-slot queue.

    Not concurrent.futures: importing it (and the logging it imports) cost a 30 MB log's run
    about 8 ms, a tenth of its diagnosis."""

    def __init__(self, count: int, finder: Any) -> None:
        import queue
        import threading
        self._finder = finder
        self._inbox = queue.SimpleQueue()
        self._new_box = queue.SimpleQueue
        self._threads = [threading.Thread(target=self._work, name=f"dsdiag-scan-{i}", daemon=True)
                         for i in range(count)]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        while True:
            task = self._inbox.get()
            if task is None:
                return
            chunk, box, count = task
            try:
                box.put((True, _scan_and_count(self._finder, chunk, count)))
            except BaseException as exc:  # noqa: BLE001 - handed to the reader, who raises it
                box.put((False, exc))

    def submit(self, chunk: bytes, count: bool = True) -> Any:
        """Queue `chunk` for a scan; the returned box gets its (found, newline count or None
        when not `count`)."""
        box = self._new_box()
        self._inbox.put((chunk, box, count))
        return box

    @staticmethod
    def result(box: Any) -> tuple:
        """Wait for a submitted chunk's (found, newline count); a scanner's error is raised here."""
        ok, value = box.get()
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Let the threads go once the chunks in flight are done, and wait for them: a file
        after this one may fork a scanning process only where no other thread runs (split.py)."""
        for _ in self._threads:
            self._inbox.put(None)
        for thread in self._threads:
            thread.join()
