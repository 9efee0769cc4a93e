"""The per-job work of a triage, the same in a local process pool and on Dask workers."""

import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from classifier.jobs.discover import grouping_of
from classifier.jobs.group import group_key
from classifier.sanitize import escape_name, strip_controls

if TYPE_CHECKING:
    from classifier.rules.model import RuleSet

_RULES_CACHE = {}


def rules_for(rules_dirs: Iterable[str]) -> "RuleSet":
    """The rule set for these extra rule directories, loaded once per process."""
    key = tuple(rules_dirs)
    if key not in _RULES_CACHE:
        from classifier.rules.load import default_rules, load_rules
        _RULES_CACHE[key] = load_rules(list(key)) if key else default_rules()
    return _RULES_CACHE[key]


def triage_job(job: str, files: Iterable[str], rules_dirs: Iterable[str] = (),
               redact: bool = True) -> dict[str, Any]:
    """Diagnose one job; return `{"job", "files", "grouping", "group", **contract}` or
    `{"job", ..., "error"}`."""
    from classifier.diagnosis.diagnose import SCHEMA_VERSION, diagnose_job
    from classifier.diagnosis.read import InputError
    files = list(files)
    if not files:  # discovery could not list this job's directory
        return {"job": escape_name(job), "schema_version": SCHEMA_VERSION,
                "error": strip_controls(f"cannot read {_listing_error(job)}")}
    job = escape_name(job)
    try:
        result = diagnose_job(files, rules_for(rules_dirs), redact=redact)
    except InputError as exc:
        return {"job": job, "schema_version": SCHEMA_VERSION,
                "error": strip_controls(f"cannot read {exc}")}
    except Exception as exc:  # one broken job must not stop the triage of thousands
        return {"job": job, "schema_version": SCHEMA_VERSION,
                "error": strip_controls(f"internal error: {type(exc).__name__}: {exc}")}
    from classifier.jobs.hosts import last_modified
    out = {"job": job, "files": len(files), "grouping": grouping_of(files),
           "group": group_key(result), "last_seen": last_modified(files)}
    out.update(result)
    return out


def _listing_error(directory):
    try:
        os.listdir(directory)
    except OSError as exc:
        return f"{directory}: {exc.strerror or exc}"
    return f"{directory}: the directory could not be read"


def triage_batch(batch: Iterable[tuple[str, list[str]]], rules_dirs: Iterable[str] = (),
                 redact: bool = True) -> list[dict[str, Any]]:
    """triage_job over a list of (job, files); a batch is the unit sent to a worker."""
    return [triage_job(job, files, rules_dirs, redact) for job, files in batch]


def make_batches(jobs: list[tuple[str, list[str]]],
                 workers: int) -> list[list[tuple[str, list[str]]]]:
    """Cut the jobs into batches: about 32 per worker, so the last ones leave no core idle for
    long, and at most 16 jobs each; a batch costs one round trip to a worker."""
    size = max(1, min(16, -(-len(jobs) // (max(1, workers) * 32))))
    return [jobs[i:i + size] for i in range(0, len(jobs), size)]


def _init_worker(rules_dirs):
    # Ctrl-C is the parent's to handle (it cancels what is queued); workers finish their batch
    # instead of each printing a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    rules_for(rules_dirs).keyword_index()  # a no-op when forked from the parent that built them


def run_local(batches: Sequence[list[tuple[str, list[str]]]], workers: int,
              rules_dirs: Iterable[str], redact: bool) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """Yield (batch index, results) as batches finish, in this process or a process pool."""
    if workers <= 1 or len(batches) <= 1:
        for i, batch in enumerate(batches):
            yield i, triage_batch(batch, rules_dirs, redact)
        return
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    # Built once here, the rules and their keyword index (~40 ms of regex compiling) are
    # inherited by forked workers instead of being built again in each of them.
    rules_for(rules_dirs).keyword_index()
    pool = ProcessPoolExecutor(max_workers=min(workers, len(batches)), initializer=_init_worker,
                               initargs=(tuple(rules_dirs),))
    try:
        pending = {pool.submit(triage_batch, b, tuple(rules_dirs), redact): i
                   for i, b in enumerate(batches)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield pending.pop(future), future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def in_job_order(finished: Iterable[tuple[int, list[dict[str, Any]]]],
                 on_done: Callable[[int], object] | None = None) -> Iterator[dict[str, Any]]:
    """Yield results in job order from (batch index, results) pairs arriving in any order."""
    waiting, next_index = {}, 0
    for index, results in finished:
        if on_done:
            on_done(len(results))
        waiting[index] = results
        while next_index in waiting:
            yield from waiting.pop(next_index)
            next_index += 1
