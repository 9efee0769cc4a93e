"""Which rank a log file belongs to, from its path: the one rule every product uses.

Path forms, first match wins:
* torchrun `--log-dir` (torch/distributed/elastic/multiprocessing/api.py, DefaultLogsSpecs):
  `.../attempt_<N>/<local rank>/{stdout,stderr}.log`;
* a rank, task or process number in the file name: `rank3.log`, `log_rank_3.txt`,
  `node1.rank12.err`, `task-5.out`, `proc_2.log`;
* Slurm per-task output (`--output=job.%t.log`, `--output=slurm-%j.%t.out`): `job.3.log`,
  `slurm-123.3.out` (the task id of a one-task-per-rank step is the global rank).
  `slurm-123.out` (`%j` alone) names the job, not a task: no rank. Nor does `slurm-123_3.out`:
  that is Slurm's default name for array task 3 of array job 123 (`slurm-%A_%a.out`), a job of
  its own; `--output=slurm-%j_%t.out` writes the same shape, so name per-task files `%j.%t` or
  `%j_task%t` to have them read as ranks.

Each form may end in `.gz`, `.bz2` or `.xz`. A rank printed inside the lines (`[rank3]:`,
`srun -l`'s `3: `) is read by classifier.diagnosis.normalize and wins over the file's.
"""

import os
import re

from classifier.precompiled import re_compile

COMPRESSED = r"(?:\.(?:gz|bz2|xz|zst))?"
# `<rank>/stdout.log` alone too: an attempt directory copied out of the log dir.
_LOGDIR = re_compile(r"(?:^|/)(\d+)/(?:stdout|stderr)\.log" + COMPRESSED + r"$")
_NAMED = re_compile(r"(?:^|[^a-z])(?:rank|task|proc)[-_.]?(\d+)(?:\D|$)", re.IGNORECASE)
_DOTTED_TASK = re_compile(r"^[^.]+(?:\.[^.]+)*?\.(\d+)\.(?:log|out|err|txt)" + COMPRESSED + r"$")


def rank_from_path(path: str) -> int | None:
    """The rank a per-rank log file's path names (see the module docstring), else None."""
    if path == "-":
        return None
    m = _LOGDIR.search(path.replace(os.sep, "/"))
    if m:
        return int(m.group(1))
    m = _name_rank(os.path.basename(path))
    return int(m.group(1)) if m else None


def _name_rank(name):
    return _NAMED.search(name) or _DOTTED_TASK.match(name)


def mask_rank(name: str) -> str:
    """A file name with the rank it names replaced by `*` (`rank3.log` -> `rank*.log`)."""
    m = _name_rank(name)
    return name[:m.start(1)] + "*" + name[m.end(1):] if m else name
