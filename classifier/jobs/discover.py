"""Job directories: find the per-rank log files of one job, and the jobs of an archive.

A job's logs come in a few layouts, all recognised here:

* rank files side by side: `rank3.log`, `log_rank_3.txt`, `node1.rank12.err`;
* Slurm per-task outputs (`--output=job.%t.log`, `slurm-%j_%t.out`): `job.3.log`,
  `slurm-123_3.out`;
* torchrun `--log-dir` (torch/distributed/elastic/multiprocessing/api.py, DefaultLogsSpecs):
  `<log-dir>/<run_id>_<8 random chars>/attempt_<N>/<local rank>/{stdout,stderr}.log`, one
  `attempt_N` per restart — only the latest attempt is read (earlier ones are the failures the
  agent already restarted from);
* any other `*.log`, `*.out`, `*.err`, `*.txt`, each optionally compressed (`.gz`, `.bz2`, `.xz`).

`job_files(DIR)` returns one job's files, the rank-less ones (launcher output) first, then by
rank. `discover_jobs(PATH)` is the rule `dsdiag triage` uses to cut an archive into jobs:

1. a file is one job;
2. a directory that holds log files of its own, or a torchrun `--log-dir` layout (an
   `attempt_N` directory, a torchrun run directory `<run_id>_xxxxxxxx/attempt_N`, or the
   `<rank>/stdout.log` directories of one attempt), is one job;
3. any other directory is an archive: each of its sub-directories is looked at by the same
   rule (at most MAX_DEPTH levels down); sub-directories without logs are skipped.

So `archive/<job>/rank*.log` and `archive/<job>/<run_id>_xxxxxxxx/attempt_N/...` are both read
as one job per `<job>`; files lying directly in a directory always belong to that directory's
job, never to jobs of their own (name single-file jobs on the command line instead).
"""

import os
import re

from classifier.ranks import COMPRESSED, rank_from_path

MAX_DEPTH = 6
LOG_NAME = re.compile(r"^[^.].*\.(?:log|out|err|txt)" + COMPRESSED + r"$", re.IGNORECASE)
_ATTEMPT = re.compile(r"^attempt_(\d+)$")
_RANK_DIR = re.compile(r"^\d+$")
_STREAM_NAME = re.compile(r"^(?:stdout|stderr)\.log" + COMPRESSED + r"$")
# tempfile.mkdtemp(prefix=f"{run_id}_") appends 8 characters of [a-z0-9_].
_TORCHRUN_RUN_DIR = re.compile(r"^.+_[a-z0-9_]{8}$")
_DIGITS = re.compile(r"(\d+)")


def is_log_name(name: str) -> bool:
    """Does a file name look like a log (`*.log|out|err|txt`, maybe compressed, not hidden)?"""
    return bool(LOG_NAME.match(name))


def _natural(text):
    return [int(part) if part.isdigit() else part for part in _DIGITS.split(text)]


def _order_key(path):
    rank = rank_from_path(path)
    return (rank is not None, rank if rank is not None else -1, _natural(path))


def _entries(directory):
    """(files, sub-directories) of a directory, by name; unreadable directories are empty."""
    files, dirs = [], []
    try:
        with os.scandir(directory) as it:
            for entry in it:
                if entry.name.startswith("."):
                    continue
                try:
                    if entry.is_dir():
                        dirs.append(entry.name)
                    elif entry.is_file():
                        files.append(entry.name)
                except OSError:
                    continue
    except OSError:
        return [], []
    return sorted(files), sorted(dirs)


def _attempt_files(attempt_dir):
    """The `<rank>/{stdout,stderr}.log` files of one torchrun attempt directory."""
    out = []
    for rank in _entries(attempt_dir)[1]:
        if _RANK_DIR.match(rank):
            rank_dir = os.path.join(attempt_dir, rank)
            out += [os.path.join(rank_dir, f) for f in _entries(rank_dir)[0] if _STREAM_NAME.match(f)]
    return out


def _attempts(directory, dirs):
    """{N: files} for the `attempt_N` directories directly in `directory` that hold logs."""
    found = {}
    for name in dirs:
        m = _ATTEMPT.match(name)
        if m:
            files = _attempt_files(os.path.join(directory, name))
            if files:
                found.setdefault(int(m.group(1)), []).extend(files)
    return found


def torchrun_files(directory: str) -> list[str]:
    """The latest attempt's files of a torchrun `--log-dir` layout in `directory`, or [].

    `directory` may be the log dir, one run directory, or one attempt directory. With several
    run directories (one per node on a shared filesystem, or one per agent restart) the highest
    attempt number seen in any of them is read, from all of them.
    """
    files, dirs = _entries(directory)
    if _ATTEMPT.match(os.path.basename(os.path.normpath(directory))):
        return _attempt_files(directory)
    attempts = _attempts(directory, dirs)
    for name in dirs:
        if _TORCHRUN_RUN_DIR.match(name) and not _ATTEMPT.match(name):
            run_dir = os.path.join(directory, name)
            for n, more in _attempts(run_dir, _entries(run_dir)[1]).items():
                attempts.setdefault(n, []).extend(more)
    if attempts:
        return attempts[max(attempts)]
    # An attempt directory under another name (copied out of the log dir): <rank>/stdout.log.
    if dirs and all(_RANK_DIR.match(d) for d in dirs):
        return _attempt_files(directory)
    return []


def job_files(directory: str) -> list[str]:
    """One job's log files in `directory`, launcher output first, then by rank; [] if none."""
    files, _ = _entries(directory)
    found = [os.path.join(directory, f) for f in files if is_log_name(f)]
    found += torchrun_files(directory)
    return sorted(set(found), key=_order_key)


def discover_jobs(path: str, max_depth: int = MAX_DEPTH) -> list[tuple[str, list[str]]]:
    """[(job path, [files])] for one command-line PATH, by the rule in the module docstring."""
    if not os.path.isdir(path):
        return [(path, [path])]
    files = job_files(path)
    if files:
        return [(path, files)]
    if max_depth <= 0:
        return []
    jobs = []
    for name in _entries(path)[1]:
        jobs += discover_jobs(os.path.join(path, name), max_depth - 1)
    return jobs
