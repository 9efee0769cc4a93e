"""Retry or fix first? One verdict per category, and the exit codes schedulers act on.

A scheduler that restarts every failed job burns GPU hours on a typo in ds_config.json; one
that restarts none gives up on a flaky InfiniBand link. The verdict splits the categories:
*retryable* failures come from the machine or the network of this run (an NCCL link, a GPU
Xid, a rendezvous that was not up yet) and a fresh attempt, ideally on other nodes, usually
passes; *fix first* failures come from the install, the config or the job's own resource
request, and the same job fails the same way again.

`K8S_EXIT_CODES` is the per-category exit-code table that `--k8s-termination-log` exits with,
so a Job's `podFailurePolicy` can `FailJob` on the fix-first band and `Count` (retry) the
retryable band (docs/integrations.md). The codes stay clear of 126/127 (shell errors) and
128+N (killed by signal N), which the container runtime reports for other reasons.
"""

from classifier import taxonomy

# category -> (retryable, one-line reason). Every taxonomy category has an entry (tested).
VERDICTS = {
    # install: the binaries do not change between attempts
    "version_mismatch": (False, "the installed torch / CUDA / DeepSpeed binaries do not fit together; "
                                "every attempt loads the same ones"),
    "op_build_error": (False, "the DeepSpeed op fails to build or load from this image; "
                              "a retry rebuilds it the same way"),
    # config: the same config fails the same way
    "config_json_syntax": (False, "the DeepSpeed config does not parse; fix the file before resubmitting"),
    "config_field_error": (False, "a config field is wrong; the next attempt reads the same config"),
    "batch_size_mismatch": (False, "the batch-size arithmetic is wrong for this world size; "
                                   "a retry repeats it"),
    "precision_conflict": (False, "the mixed-precision settings contradict each other in the config"),
    "scheduler_config": (False, "the LR scheduler section of the config is invalid"),
    "gpu_oom": (False, "the model, batch and ZeRO settings do not fit in GPU memory; "
                       "the same settings run out again"),
    "fp16_overflow": (False, "the fp16 loss scale collapses for this model and config; "
                             "change precision or scaling first"),
    # env, but owned by the job's own spec: a new pod / allocation inherits it unchanged
    "env_var_missing": (False, "the launch environment lacks a distributed variable; "
                               "the job spec must set it"),
    "device_visibility": (False, "the process is not given the GPU it expects; "
                                 "fix the GPU request or CUDA_VISIBLE_DEVICES"),
    "host_oom": (False, "the job needs more host memory than its limit; raise the limit or "
                        "trim workers / offload first"),
    "disk_full": (False, "the filesystem the job writes to is full; free space or move the output first"),
    # transient: this run's machines or network
    "port_conflict": (True, "another process held the master port on this node; "
                            "a fresh attempt usually finds it free"),
    "connection_failure": (True, "a worker could not reach the rendezvous in time; "
                                 "usually the master was not up yet or the network blinked"),
    "nccl_timeout": (True, "a collective stalled on this run's links or peers; retry, and "
                           "fix first only if it hangs at the same step again"),
    "nccl_network": (True, "an NCCL transport / network failure on this run's links; "
                           "retry, preferably on other nodes"),
    "gpu_hardware": (True, "a GPU hardware fault on this node; retry on another node "
                           "and drain this one"),
}

_NOT_DECIDED = {
    taxonomy.UNKNOWN: "no rule explains the failure, so whether a retry helps is unknown",
    taxonomy.NONE: "no failure found in the log",
}

# Exit codes for `--k8s-termination-log`: 0 none, 1 unknown, 2 dsdiag's own errors,
# 80-89 retryable, 100-119 fix first. The values are a contract like the category ids.
K8S_EXIT_CODES = {
    taxonomy.NONE: 0,
    taxonomy.UNKNOWN: 1,
    "port_conflict": 80,
    "connection_failure": 81,
    "nccl_timeout": 82,
    "nccl_network": 83,
    "gpu_hardware": 84,
    "version_mismatch": 100,
    "op_build_error": 101,
    "config_json_syntax": 102,
    "config_field_error": 103,
    "batch_size_mismatch": 104,
    "precision_conflict": 105,
    "scheduler_config": 106,
    "gpu_oom": 107,
    "fp16_overflow": 108,
    "env_var_missing": 109,
    "device_visibility": 110,
    "host_oom": 111,
    "disk_full": 112,
}
RETRYABLE_BAND = range(80, 90)
FIX_FIRST_BAND = range(100, 120)


def retry_verdict(category):
    """Return the JSON fields {retryable: bool or None, retry_reason: str} for a category."""
    if category in VERDICTS:
        retryable, reason = VERDICTS[category]
        return {"retryable": retryable, "retry_reason": reason}
    return {"retryable": None, "retry_reason": _NOT_DECIDED.get(category, "unrecognised category")}


def k8s_exit_code(category):
    """The exit code `--k8s-termination-log` ends with for this category (1 if unlisted)."""
    return K8S_EXIT_CODES.get(category, 1)
