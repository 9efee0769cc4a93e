"""Grouping: the key that puts jobs failing the same way in one row of the summary.

The key is the winning rule's id followed by its captured values, `name=value` sorted by name,
leaving out the values that differ from one run to the next by nature (sizes, durations,
counters, hosts, pids, ranks, positions, paths: VOLATILE_FACTS) and those derived after the
match (ranks, world size, corrected batch sizes); a value that is a file path is shortened to
its last component. So fifty jobs that found port 29500 taken fall in one group
(`port_conflict.tcpstore_bind_errno port=29500`) whatever their hosts, and two missing symbols
make two groups. Jobs no rule explains are grouped by the exception type of their evidence
(`unknown KeyError`), jobs judged by the fallback model by `<category> (model)`.
"""

import re
from typing import Any

from classifier.facts import fact_text
from classifier.vocabulary import EXCEPTION_TYPE

# Captured values that differ between runs of the same failure; never part of a grouping key.
VOLATILE_FACTS = frozenset({
    # derived after the match
    "ranks", "ranks_summary", "world_size", "expected_train_batch_size", "suggested_grad_acc",
    "model_probability",
    # where it happened: hosts, processes, ranks, devices, positions, paths
    "host", "peer", "peer_port", "pid", "process", "rank", "rank_a", "rank_b", "local_rank",
    "gpu", "pci", "device", "slot", "line", "column", "pos", "expected_pos", "entry", "path",
    "source", "where", "hostfile", "segment", "config", "step", "seq",
    # which scheduler job, node, pod and when (job_cancelled)
    "job_id", "node", "pod", "cancelled_at",
    # how much: sizes, durations, counters
    "requested", "free", "total", "allocated", "reserved", "reserved_unallocated", "used",
    "needed", "size", "limit", "anon_rss", "total_vm", "elapsed_ms", "timeout", "timeout_ms",
    "timeout_s", "heartbeat_s", "count", "joined", "skipped", "last_completed", "last_enqueued",
    "scale", "available_tokens", "steps_taken", "total_steps",
    # the stack around the failure, not the failure (versions that ARE the failure, like
    # torch_cuda vs system_cuda, stay)
    "nccl_version",
})
_SPACES = re.compile(r"\s+")
MAX_KEY_VALUE = 60


def _key_value(value):
    text = _SPACES.sub(" ", fact_text(value)).strip()
    if "/" in text and " " not in text:
        text = text.rstrip("/").rsplit("/", 1)[-1] or text
    return text if len(text) <= MAX_KEY_VALUE else text[:MAX_KEY_VALUE - 1] + "…"


def group_key(result: dict[str, Any]) -> str:
    """The summary's grouping key of one job's result (see the module docstring)."""
    if "error" in result:
        return "error"
    category = result.get("category")
    if result.get("source") == "model":
        return f"{category} (model)"
    rule = result.get("rule")
    if rule is None:
        if category == "unknown":
            for item in result.get("evidence") or ():
                m = EXCEPTION_TYPE.search(item.get("text", ""))
                if m:
                    return f"unknown {m.group(1).rsplit('.', 1)[-1]}"
        return str(category)
    parts = [rule]
    for name, value in sorted((result.get("facts") or {}).items()):
        if name not in VOLATILE_FACTS and isinstance(value, (str, int, float)) and str(value).strip():
            parts.append(f"{name}={_key_value(value)}")
    return " ".join(parts)
