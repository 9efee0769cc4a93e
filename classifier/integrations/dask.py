"""`dsdiag triage --dask ADDRESS`: the same per-job triage, run on a Dask distributed cluster.

For archives larger than one machine. The unit of work is classifier.jobs.run.triage_batch (a
few jobs each), the same function the local process pool runs, so a job's JSON is the same
either way. Requirements on the cluster: every worker can import `classifier` (install dsdiag
there: `pip install 'dsdiag[scale]'`) and sees the log files, and any --rules-dir, at the same
paths (a shared filesystem). Files are sent as absolute paths for that reason, and the
evidence is named back as given, so the JSON equals that of a local run.

Dask is imported here only, when --dask is used: `dsdiag` itself never needs it.
"""

import os
from collections.abc import Iterable, Iterator
from typing import Any

from classifier.jobs.run import make_batches, triage_batch

CONNECT_TIMEOUT_S = 20


class DaskError(Exception):
    """Dask is not installed, or the scheduler cannot be reached (a usage error, exit 2)."""


def _absolute(jobs):
    """The jobs with absolute file paths, and {absolute: as given} to map evidence back."""
    given = {}
    out = []
    for job, files in jobs:
        absolute = [os.path.abspath(f) for f in files]
        given.update(zip(absolute, files))
        out.append((job, absolute))
    return out, given


def _restore_paths(results, given):
    """Name evidence files as the user gave them, so the JSON equals a local run's."""
    for result in results:
        for finding in [result] + list(result.get("secondary") or ()):
            for item in finding.get("evidence") or ():
                item["file"] = given.get(item.get("file"), item.get("file"))
    return results


def run_on_dask(
    address: str, jobs: Iterable[tuple[str, list[str]]], rules_dirs: Iterable[str] = (),
    redact: bool = True, timeout: float = CONNECT_TIMEOUT_S,
) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """Connect to the scheduler now; return an iterator of (batch index, results) as they finish.

    Raises DaskError when `distributed` is missing or the scheduler does not answer within
    `timeout` seconds. The client is closed when the iterator is exhausted or closed.
    """
    try:
        from distributed import Client
    except ImportError:
        raise DaskError("--dask needs Dask distributed: pip install 'dsdiag[scale]'") from None
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise DaskError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        client.close()
        raise DaskError(f"the Dask scheduler at {address} has no workers: {exc}") from None
    return _results(client, jobs, tuple(os.path.abspath(d) for d in rules_dirs), redact)


def _results(client, jobs, rules_dirs, redact):
    from distributed import as_completed
    try:
        threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
        absolute, given = _absolute(jobs)
        batches = make_batches(absolute, max(1, threads))
        futures = [client.submit(triage_batch, batch, rules_dirs, redact, pure=False)
                   for batch in batches]
        index = {future.key: i for i, future in enumerate(futures)}
        for future in as_completed(futures, loop=client.loop):
            yield index[future.key], _restore_paths(future.result(), given)
    finally:
        client.close()
