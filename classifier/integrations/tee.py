"""`dsdiag --tee`: pass the job's log through untouched and diagnose it when it ends.

    deepspeed train.py 2>&1 | dsdiag --tee > train.log

The log is copied from fd 0 to fd 1 with `os.read` / `os.write`: no decoding, no buffering,
every byte forwarded as soon as it arrives (finer than line buffering: tqdm's `\\r` updates
show live too), invalid UTF-8, NUL bytes and a missing final newline included. The same bytes
go to an anonymous temporary file (`tempfile.TemporaryFile`: already unlinked, so nothing is
left behind even if dsdiag is killed; honours TMPDIR; its disk space is returned when dsdiag
exits). When the writer closes the pipe, that file is diagnosed by the same
`diagnose_job` a plain `dsdiag` run uses, and reported as `<stdin>`.

Nothing of the log is lost: if the reader of stdout goes away (`| head`), reading goes on so
the writer is not killed by SIGPIPE and the diagnosis still sees every byte; if the temporary
disk fills, the pass-through goes on and the diagnosis warns `truncated_input`. The first
Ctrl-C / SIGTERM (sent to the whole pipeline, the writer included) keeps draining what the
dying writer still prints, for up to DRAIN_SECONDS; a second one stops at once.
"""

import os
import select
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import HasFileno

    from classifier.rules.model import RuleSet

CHUNK = 1 << 16
DRAIN_SECONDS = 10.0


@dataclass(slots=True, eq=False)
class TeeStats:
    """What happened to the stream: bytes copied, where it stopped, what failed."""

    bytes_in: int = 0
    bytes_out: int = 0
    stdout_error: str | None = None   # e.g. "Broken pipe": the reader closed early
    spill_error: str | None = None    # e.g. "No space left on device"
    read_error: str | None = None     # e.g. "Input/output error": stdin failed, not ended
    spilled: int = 0
    signum: int | None = None         # the first SIGINT / SIGTERM, if any
    reached_eof: bool = False


class _Stop(Exception):
    """Raised by the second signal: stop reading now."""


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def copy_stream(in_fd: int, out_fd: int, spill: "HasFileno", stats: TeeStats | None = None,
                chunk: int = CHUNK, drain_seconds: float = DRAIN_SECONDS) -> TeeStats:
    """Copy in_fd to out_fd and to the `spill` file (anything with fileno()) until EOF."""
    stats = stats or TeeStats()
    deadline = None
    out_ok = True
    while True:
        if stats.signum is not None:
            if deadline is None:
                deadline = _monotonic() + drain_seconds
            remaining = deadline - _monotonic()
            if remaining <= 0 or not select.select([in_fd], [], [], remaining)[0]:
                return stats  # the writer did not finish in time
        try:
            block = os.read(in_fd, chunk)
        except OSError as exc:  # EIO from a dead terminal, EBADF: end of input, say why
            stats.read_error = exc.strerror or str(exc)
            return stats
        if not block:
            stats.reached_eof = True
            return stats
        stats.bytes_in += len(block)
        if out_ok:
            try:
                _write_all(out_fd, block)
                stats.bytes_out += len(block)
            except OSError as exc:  # EPIPE, EIO...: stop writing, never stop reading
                out_ok = False
                stats.stdout_error = exc.strerror or str(exc)
        if stats.spill_error is None:
            try:
                _write_all(spill.fileno(), block)
                stats.spilled += len(block)
            except OSError as exc:  # ENOSPC: the diagnosis sees a prefix and says so
                stats.spill_error = exc.strerror or str(exc)


def _monotonic():
    return time.monotonic()


class _SpillAsStdin:
    """Stands in for sys.stdin while diagnose_job reads '-' (where /proc/self/fd is missing)."""

    def __init__(self, binary):
        self.buffer = binary

    def isatty(self):
        return False


def _rename_source(result, old, new):
    """Name the spill as the input it stands for: evidence `file` and warning messages."""
    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "file" and item == old:
                    value[key] = new
                elif key == "message" and isinstance(item, str):
                    value[key] = item.replace(old, new)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
    walk(result)
    return result


def diagnose_spill(spill: IO[bytes], rules: "RuleSet",
                   diagnose_job: Callable[[list[str], "RuleSet"], dict[str, Any]]) -> dict[str, Any]:
    """Diagnose the spilled bytes as `<stdin>`.

    On Linux the anonymous file is reopened by its /proc/self/fd path, so big logs take
    diagnose_job's file path (the keyword prefilter over 32 MB: 200 MB in about a second
    instead of a minute and a half line by line); elsewhere it is read through the stdin path.
    """
    spill.seek(0)
    proc_path = f"/proc/self/fd/{spill.fileno()}"
    if os.path.exists(proc_path):
        try:
            return _rename_source(diagnose_job([proc_path], rules), proc_path, "<stdin>")
        except Exception as exc:  # an input error (an archive piped in) names the input too
            if proc_path in str(exc):
                raise type(exc)(str(exc).replace(proc_path, "<stdin>")) from None
            raise
    saved = sys.stdin
    sys.stdin = _SpillAsStdin(spill)
    try:
        return diagnose_job(["-"], rules)
    finally:
        sys.stdin = saved


def tee_and_diagnose(rules: "RuleSet | None",
                     diagnose_job: Callable[[list[str], "RuleSet"], dict[str, Any]],
                     in_fd: int = 0, out_fd: int = 1) -> tuple[dict[str, Any] | None, TeeStats]:
    """Pass fd 0 through to fd 1, then diagnose everything read; return (result, stats).

    `rules` may be None when they failed to load: the log is still passed through (a broken
    rules directory must never eat a training log), and no diagnosis is made.
    """
    stats = TeeStats()
    reading = [True]

    def on_signal(signum, frame):
        if stats.signum is None:
            stats.signum = signum
        elif reading[0]:
            raise _Stop()

    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, on_signal) for s in handled}
    try:
        # Unbuffered: the bytes are on disk (or the error is known) when each write returns.
        with tempfile.TemporaryFile(prefix="dsdiag-tee-", buffering=0) as spill:
            try:
                copy_stream(in_fd, out_fd, spill, stats)
            except _Stop:
                pass
            reading[0] = False
            for s, handler in previous.items():
                signal.signal(s, handler)
            previous = {}
            if rules is None:
                return None, stats
            result = diagnose_spill(spill, rules, diagnose_job)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if stats.spill_error:
        result["warnings"].append({
            "code": "truncated_input",
            "message": f"--tee could keep only the first {stats.spilled} of {stats.bytes_in} bytes "
                       f"for the diagnosis ({stats.spill_error}); the pass-through was complete"})
    return result, stats
