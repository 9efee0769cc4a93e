"""Stage 1a: open a log file that may still be growing.

A live log (a job still running, a node still flushing its output) must not keep dsdiag
reading forever: a regular file is read up to the size it had when it was opened, and a line
cut there is read as the last line. `--follow` asks for the opposite, as `tail -f` does: read
on as the files grow, and stop once none of the job's files has grown for `idle` seconds,
once the process `pid` has exited (`tail --pid`), or at Ctrl-C / SIGTERM; then diagnose.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import BinaryIO
    from classifier.diagnosis.read import Warnings

IDLE = 10.0   # default quiet period of --follow, in seconds
POLL = 0.2    # seconds between looks at a followed file that has not grown
# /proc and /sys files report a size of 0 whatever they hold, and so does a log that is still
# empty when opened: such a file is read up to this many bytes, never without a bound.
ZERO_SIZE_CAP = 1 << 20
READ_ALL = 1 << 20  # bytes one read(-1) of a followed file returns at most


def pid_alive(pid: int) -> bool:
    """Is process `pid` running (a zombie, exited but not yet reaped, is not)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rpartition(b")")[2].split()[:1] != [b"Z"]
    except OSError:
        return True  # no /proc (or it just went): kill(0) said it exists


class Follow:
    """When following the growing files of one job stops: after `idle` quiet seconds (0: never),
    when process `pid` exits, or when stop() is called (a signal)."""

    def __init__(self, idle: float = IDLE, pid: int | None = None, watch: Sequence[str] = (),
                 poll: float = POLL) -> None:
        self.idle = idle
        self.pid = pid
        self.poll = poll
        self.stopped = False
        self.reason = None
        self._quiet_since = time.monotonic()
        # The job's other files: growth in any of them means the job is still talking, even
        # while the file being read is quiet (a rank that hung says nothing).
        self._sizes = {path: _size(path) for path in watch}

    def stop(self, reason: str) -> None:
        """Stop following: each file is read on only up to its size at this moment."""
        if not self.stopped:
            self.stopped, self.reason = True, reason

    def grew(self) -> None:
        """A followed file grew: the quiet period starts again."""
        self._quiet_since = time.monotonic()

    def wait(self) -> None:
        """The followed file is quiet: stop if the job looks finished, else sleep one poll."""
        for path, old in self._sizes.items():
            new = _size(path)
            if new != old:
                self._sizes[path] = new
                self.grew()
        if self.pid is not None and not pid_alive(self.pid):
            self.stop(f"process {self.pid} exited")
        elif self.idle and time.monotonic() - self._quiet_since >= self.idle:
            self.stop(f"no file grew for {self.idle:g} s")
        if not self.stopped:
            time.sleep(self.poll)

    def on_signals(self):
        """Ctrl-C or SIGTERM stops the follow, and the diagnosis of what was read comes out;
        a second one acts as it would without --follow. A context manager."""
        from contextlib import contextmanager  # only --follow needs it: not on every start
        import signal
        import threading

        @contextmanager
        def handled() -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield  # only the main thread may set handlers
                return
            previous = {}

            def handler(signum, _frame):
                self.stop(f"stopped by {signal.Signals(signum).name}")
                for sig, old in previous.items():
                    signal.signal(sig, old)

            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, handler)
            try:
                yield
            finally:
                for sig, old in previous.items():
                    signal.signal(sig, old)

        return handled()


def _size(path):
    try:
        return os.stat(path).st_size
    except OSError:
        return None


class _Reader:
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class _Capped(_Reader):
    """A regular file read up to its size at open; closing it says whether it went on growing."""

    def __init__(self, fh, opened, name, warnings):
        self._fh, self._opened, self._name, self._warnings = fh, opened, name, warnings
        self._cap = opened or ZERO_SIZE_CAP
        self._pos = 0

    def read(self, n: int = -1) -> bytes:
        left = self._cap - self._pos
        if left <= 0:
            return b""
        data = self._fh.read(left if n is None or n < 0 else min(n, left))
        self._pos += len(data)
        return data

    def close(self) -> None:
        try:
            now = os.fstat(self._fh.fileno()).st_size
        except OSError:
            now = 0  # what was read stands; only the note about growth is lost
        if self._pos >= self._cap and now > self._cap and self._warnings is not None:
            still_growing(self._warnings, self._name, self._opened, now)
        self._fh.close()


def still_growing(warnings: "Warnings", name: str, opened: int, now: int) -> None:
    """Warn that a file read up to its size at open (`opened`) has grown to `now` since."""
    warnings.add("still_growing", f"{name}: still being written: read up to its size when "
                 f"opened ({opened:,} bytes; {now:,} now); --follow reads on as it grows")


class _Followed(_Reader):
    """A regular file read as it grows until `follow` stops, then up to its size at that moment."""

    def __init__(self, fh, name, warnings, follow):
        self._fh, self._name, self._warnings, self._follow = fh, name, warnings, follow
        self._pos = 0
        self._cap = None

    def read(self, n: int = -1) -> bytes:
        n = READ_ALL if n is None or n < 0 else n
        while True:
            if self._cap is None and self._follow.stopped:
                # Stopped while the file may still grow fast: what it holds now is the end.
                self._cap = os.fstat(self._fh.fileno()).st_size
            want = n if self._cap is None else min(n, self._cap - self._pos)
            if want <= 0:
                return b""
            data = self._fh.read(want)
            if data:
                self._pos += len(data)
                self._follow.grew()
                return data
            if self._cap is not None:
                return b""
            if os.fstat(self._fh.fileno()).st_size < self._pos:
                # Truncated in place (logrotate's copytruncate): what follows is another text.
                self._cap = self._pos
                if self._warnings is not None:
                    self._warnings.add("truncated_while_followed", f"{self._name}: truncated "
                                       f"while followed; diagnosed what was read before")
                return b""
            self._follow.wait()

    def close(self) -> None:
        self._fh.close()


def open_log(path: str, warnings: "Warnings | None" = None,
             follow: Follow | None = None) -> BinaryIO:
    """Open a log file for reading bytes: a regular file up to its size now, or followed as it
    grows (`follow`); a FIFO or device as it comes (it ends when its writer closes it)."""
    fh = open(path, "rb")
    try:
        info = os.fstat(fh.fileno())
    except OSError:
        fh.close()
        raise
    if not stat.S_ISREG(info.st_mode):
        return fh
    if follow is not None and not follow.stopped:
        return _Followed(fh, path, warnings, follow)
    return _Capped(fh, info.st_size, path, warnings)
