"""The category table: every fact about a category in one row, and the outcomes beside them.

A row holds the id (the JSON contract's `category`), the layer, a short title, the retry
verdict with its reason, and the exit code `--k8s-termination-log` ends with.

Layers follow the source chapter's troubleshooting order: env, then launch, then config;
install problems come before all of them (nothing runs until the stack is consistent).

The verdict splits the categories. A scheduler that restarts every failed job burns GPU hours
on a typo in ds_config.json; one that restarts none gives up on a flaky InfiniBand link.
*Retryable* failures come from the machine or the network of this run (an NCCL link, a GPU
Xid, a rendezvous that was not up yet): a fresh attempt, ideally on other nodes, usually
passes. A job the scheduler ended (time limit, preemption, eviction) is retryable too: it
resumes from its last checkpoint. *Fix first* failures come from the install, the config or
the job's own resource request: the same job fails the same way again.

A *terminal* category is how the job was ended from outside (a scheduler's time limit, a
cancel, an eviction): it is the answer only when nothing failed before it, since a job that hit
a real error and was then cancelled died of that error (classifier/diagnosis/rootcause.py).

Exit codes: 0 none, 1 unknown, 2 dsdiag's own errors, 80-89 retryable, 100-119 fix first, so
a Job's `podFailurePolicy` can `FailJob` on one band and `Count` (retry) the other
(docs/integrations.md). They stay clear of 126/127 (shell errors) and 128+N (killed by signal
N), which the container runtime reports for other reasons. The values are a contract like the
ids.
"""

from collections import namedtuple

LAYERS = ("install", "env", "launch", "config")
UNKNOWN = "unknown"
NONE = "none"
RETRYABLE_BAND = range(80, 90)
FIX_FIRST_BAND = range(100, 120)


class Category(namedtuple("Category", "id layer title retryable retry_reason exit_code terminal",
                          defaults=(False,))):
    """One row of the table; `layer` and `retryable` are None for the outcomes none/unknown.

    A named tuple, not a dataclass: `dataclasses` imports `inspect`, a few ms of every run."""

    __slots__ = ()


_ROWS = (
    # install: the binaries do not change between attempts
    Category("version_mismatch", "install", "torch / CUDA / driver / DeepSpeed binaries do not fit together",
             False, "the installed torch / CUDA / DeepSpeed binaries do not fit together; every "
                    "attempt loads the same ones", 100),
    Category("op_build_error", "install", "a DeepSpeed op failed to build or load",
             False, "the DeepSpeed op fails to build or load from this image; a retry rebuilds it "
                    "the same way", 101),
    # config: the same config fails the same way
    Category("config_json_syntax", "config", "the DeepSpeed config file does not parse",
             False, "the DeepSpeed config does not parse; fix the file before resubmitting", 102),
    Category("config_field_error", "config", "a config field is misspelled, unknown or of the wrong type",
             False, "a config field is wrong; the next attempt reads the same config", 103),
    Category("batch_size_mismatch", "config", "the batch-size arithmetic does not add up",
             False, "the batch-size arithmetic is wrong for this world size; a retry repeats it", 104),
    Category("precision_conflict", "config", "mixed-precision settings contradict each other",
             False, "the mixed-precision settings contradict each other in the config", 105),
    Category("scheduler_config", "config", "the LR scheduler is misconfigured",
             False, "the LR scheduler section of the config is invalid", 106),
    Category("gpu_oom", "config", "CUDA out of memory",
             False, "the model, batch and ZeRO settings do not fit in GPU memory; the same "
                    "settings run out again", 107),
    Category("fp16_overflow", "config", "fp16 loss scale collapsed",
             False, "the fp16 loss scale collapses for this model and config; change precision or "
                    "scaling first", 108),
    # env, but owned by the job's own spec: a new pod / allocation inherits it unchanged
    Category("env_var_missing", "env", "a distributed environment variable is missing",
             False, "the launch environment lacks a distributed variable; the job spec must set it", 109),
    Category("device_visibility", "env", "the process cannot see the GPU it was given",
             False, "the process is not given the GPU it expects; fix the GPU request or "
                    "CUDA_VISIBLE_DEVICES", 110),
    Category("host_oom", "env", "host memory exhausted",
             False, "the job needs more host memory than its limit; raise the limit or trim "
                    "workers / offload first", 111),
    Category("disk_full", "env", "no space left on device",
             False, "the filesystem the job writes to is full; free space or move the output first", 112),
    # transient: this run's machines or network
    Category("port_conflict", "launch", "the master port is already in use",
             True, "another process held the master port on this node; a fresh attempt usually "
                   "finds it free", 80),
    Category("connection_failure", "launch", "workers cannot reach the master / rendezvous",
             True, "a worker could not reach the rendezvous in time; usually the master was not "
                   "up yet or the network blinked", 81),
    Category("nccl_timeout", "env", "a collective ran past its timeout",
             True, "a collective stalled on this run's links or peers; retry, and fix first only "
                   "if it hangs at the same step again", 82),
    Category("nccl_network", "env", "NCCL transport or network failure",
             True, "an NCCL transport / network failure on this run's links; retry, preferably on "
                   "other nodes", 83),
    Category("gpu_hardware", "env", "GPU hardware fault",
             True, "a GPU hardware fault on this node; retry on another node and drain this one", 84),
    Category("job_cancelled", "launch", "the scheduler ended the job (time limit, cancel, preemption, eviction)",
             True, "the scheduler or the cluster ended the job from outside; resubmit and resume "
                   "from the last checkpoint", 85, terminal=True),
)
_OUTCOMES = (
    Category(NONE, None, "no failure found", None, "no failure found in the log", 0),
    Category(UNKNOWN, None, "a failure no rule explains", None,
             "no rule explains the failure, so whether a retry helps is unknown", 1),
)

# id -> row, in the table's order. These ids are the public contract of the JSON output.
CATEGORIES = {row.id: row for row in _ROWS}
OUTCOMES = {row.id: row for row in _OUTCOMES}
ALL_IDS = tuple(CATEGORIES) + (UNKNOWN, NONE)


TERMINAL = frozenset(row.id for row in _ROWS if row.terminal)


def layer_of(category: str) -> str | None:
    """Return the layer of a category id, or None for unknown/none."""
    row = CATEGORIES.get(category)
    return row.layer if row else None


def retry_verdict(category: str, sure: bool = True) -> dict:
    """Return the JSON fields {retryable: bool or None, retry_reason: str} for a category.

    `sure` False (not a rule's whole cause, see confidence.FIX_FIRST) withholds a fix-first
    verdict: giving up on a job for good needs proof, a retry does not.
    """
    row = CATEGORIES.get(category) or OUTCOMES.get(category)
    if row is None:
        return {"retryable": None, "retry_reason": "unrecognised category"}
    if row.retryable is False and not sure:
        return {"retryable": None,
                "retry_reason": "fix first if this diagnosis holds, but it rests on a symptom, a cut "
                                "message or the text model, not on a rule's whole cause: the exit "
                                "code stays the generic failure code"}
    return {"retryable": row.retryable, "retry_reason": row.retry_reason}


def k8s_exit_code(category: str) -> int:
    """The exit code of a category's row (1 if unlisted)."""
    row = CATEGORIES.get(category) or OUTCOMES.get(category)
    return row.exit_code if row else OUTCOMES[UNKNOWN].exit_code


def diagnosis_exit_code(diagnosis: dict) -> int:
    """The code `--k8s-termination-log` ends with: the category's, but the generic failure
    code (unknown's 1) for a fix-first category whose verdict was withheld (retryable null)."""
    row = CATEGORIES.get(diagnosis["category"])
    if row is not None and row.retryable is False and diagnosis.get("retryable") is not False:
        return OUTCOMES[UNKNOWN].exit_code
    return k8s_exit_code(diagnosis["category"])
