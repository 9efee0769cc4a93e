"""Job directories: find the per-rank log files of one job, and the jobs of an archive.

A job's logs come in a few layouts, all recognised here:

* rank files side by side: `rank3.log`, `log_rank_3.txt`, `node1.rank12.err`;
* Slurm per-task outputs (`--output=job.%t.log`, `slurm-%j.%t.out`): `job.3.log`,
  `slurm-123.3.out` (`slurm-123_3.out` is Slurm's default array-task name: its own job, see
  classifier.ranks);
* torchrun `--log-dir` (torch/distributed/elastic/multiprocessing/api.py, DefaultLogsSpecs):
  `<log-dir>/<run_id>_<8 random chars>/attempt_<N>/<local rank>/{stdout,stderr}.log`, one
  `attempt_N` per restart — only the latest attempt is read (earlier ones are the failures the
  agent already restarted from);
* any other `*.log`, `*.out`, `*.err`, `*.txt`, each optionally compressed (`.gz`, `.bz2`, `.xz`).

`job_files(DIR)` returns the log files of a directory, the rank-less ones (launcher output)
first, then by rank. `split_jobs(FILES)` decides from the names alone which of them are one job:

* files whose names differ only in the rank they name (`rank*.log`, `job.*.log`), in the stream
  (`x.out` / `x.err`) or in compression are one job, and so are the files of one torchrun
  attempt; groups of rank files whose names differ only in other numbers (`node1.rank*.err`,
  `node2.rank*.err`) are one job too when no rank repeats;
* when exactly one such job has several ranks, everything else beside it (the launcher's or
  the batch script's output, `slurm-123.out`) is its launcher output and joins it — unless
  that includes the outputs of two Slurm jobs (`slurm-1001.out`, `slurm-1002.out`);
* otherwise each group is a job of its own: `slurm-1001.out` and `slurm-1002.out` are two jobs,
  `slurm-77_1.out` and `slurm-77_2.out` (array tasks) too, a folder of unrelated logs is a job
  per file.

`discover_jobs(PATH)` is the rule `dsdiag triage` uses to cut an archive into jobs:

1. a file is one job;
2. a directory that holds log files of its own, or a torchrun `--log-dir` layout (an
   `attempt_N` directory, a torchrun run directory `<run_id>_xxxxxxxx/attempt_N`, or the
   `<rank>/stdout.log` directories of one attempt), is cut by split_jobs: one job named after
   the directory, or several named after their files;
3. any other directory is an archive: each of its sub-directories is looked at by the same
   rule (at most MAX_DEPTH levels down); sub-directories without logs are skipped.

So `archive/<job>/rank*.log` and `archive/<job>/<run_id>_xxxxxxxx/attempt_N/...` are both read
as one job per `<job>`; files lying directly in a directory are never split from it into the
jobs of its sub-directories.
"""

import os
import re

from classifier.precompiled import re_compile
from classifier.ranks import COMPRESSED, mask_rank, rank_from_path

MAX_DEPTH = 6
LOG_NAME = re_compile(r"^[^.].*\.(?:log|out|err|txt)" + COMPRESSED + r"$", re.IGNORECASE)
_ATTEMPT = re_compile(r"^attempt_(\d+)$")
_RANK_DIR = re_compile(r"^\d+$")
_STREAM_NAME = re_compile(r"^(?:stdout|stderr)\.log" + COMPRESSED + r"$")
# tempfile.mkdtemp(prefix=f"{run_id}_") appends 8 characters of [a-z0-9_].
_TORCHRUN_RUN_DIR = re_compile(r"^.+_[a-z0-9_]{8}$")
_DIGITS = re_compile(r"(\d+)")
_LOG_SUFFIX = re_compile(r"\.(?:log|out|err|txt)" + COMPRESSED + r"$", re.IGNORECASE)
_SLURM_JOB_KEY = re_compile(r"^slurm-\d+(?:_\d+)?$")  # slurm-%j / slurm-%A_%a, suffix dropped
_TORCHRUN_FILE = re_compile(r"(?:^|/)\d+/(?:stdout|stderr)\.log" + COMPRESSED + r"$")


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


def _name_key(path):
    """What the files of one job share in their path: the rank masked, the suffix dropped."""
    unix = path.replace(os.sep, "/")
    if _TORCHRUN_FILE.search(unix):  # <attempt>/<rank>/stdout.log: one job per attempt dir
        return "torchrun:" + unix.rsplit("/", 2)[0]
    return _LOG_SUFFIX.sub("", mask_rank(os.path.basename(path)))


def _ranks(files):
    return {r for r in map(rank_from_path, files) if r is not None}


def split_jobs(files: list[str]) -> list[list[str]]:
    """Cut one directory's (or one command line's) log files into jobs, by the rules in the
    module docstring; each job's files keep their order in `files`."""
    groups = {}
    for f in files:
        groups.setdefault(_name_key(f), []).append(f)
    # Rank groups that differ only in other numbers (node1.rank*, node2.rank*) and share no
    # rank are the nodes of one job.
    ranked = {}
    for key, members in groups.items():
        if _ranks(members):
            ranked.setdefault(_DIGITS.sub("#", key), []).append(key)
    for keys in ranked.values():
        seen, merged = set(), []
        for key in keys:
            ranks = _ranks(groups[key])
            if merged and not ranks & seen:
                groups[merged[0]] += groups.pop(key)
            else:
                merged.append(key)
            seen |= ranks
    multi = [key for key, members in groups.items() if len(_ranks(members)) > 1]
    slurm_jobs = [key for key in groups if _SLURM_JOB_KEY.match(key)]
    if len(groups) == 1 or (len(multi) == 1 and len(slurm_jobs) < 2):
        return [list(files)]
    order = {f: i for i, f in enumerate(files)}
    return sorted((sorted(g, key=order.get) for g in groups.values()), key=lambda g: order[g[0]])


def grouping_of(files: list[str]) -> str:
    """How a job's files were put together: `file`, `torchrun`, `ranks` or `streams`."""
    if len(files) == 1:
        return "file"
    if any(_TORCHRUN_FILE.search(f.replace(os.sep, "/")) for f in files):
        return "torchrun"
    return "ranks" if len(_ranks(files)) > 1 else "streams"


def _job_name(directory, files):
    """A job cut out of a directory is named by its file, or a pattern its files match."""
    if len(files) == 1:
        return files[0]
    key = _name_key(files[-1])
    if key.startswith("torchrun:"):  # the attempt directory
        return key[len("torchrun:"):]
    names = {mask_rank(os.path.basename(f)) for f in files}
    return os.path.join(directory, names.pop() if len(names) == 1 else key + ".*")


def discover_jobs(path: str, max_depth: int = MAX_DEPTH, notes: list[tuple[str, str, bool]] | None = None,
                  _seen: set[tuple[int, int]] | None = None) -> list[tuple[str, list[str]]]:
    """[(job path, [files])] for one command-line PATH, by the rule in the module docstring.

    `notes` collects (directory, reason, unreadable) for what was not read: a directory that
    cannot be listed, and one reached again through a symbolic link (a loop is followed once).
    """
    if not os.path.isdir(path):
        return [(path, [path])]
    notes = [] if notes is None else notes
    _seen = set() if _seen is None else _seen
    try:
        info = os.stat(path)
        with os.scandir(path):
            pass
    except OSError as exc:
        notes.append((path, f"cannot read the directory: {exc.strerror or exc}", True))
        return []
    if (info.st_dev, info.st_ino) in _seen:
        notes.append((path, "a directory already read (a symbolic link loop, or named twice); not read again", False))
        return []
    _seen.add((info.st_dev, info.st_ino))
    files = job_files(path)
    if files:
        jobs = split_jobs(files)
        if len(jobs) == 1:
            return [(path, files)]
        return [(_job_name(path, job), job) for job in jobs]
    if max_depth <= 0:
        return []
    jobs = []
    for name in _entries(path)[1]:
        jobs += discover_jobs(os.path.join(path, name), max_depth - 1, notes, _seen)
    return jobs
