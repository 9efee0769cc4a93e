"""Flight-recorder dumps next to a job's logs: which rank never entered the collective.

ProcessGroupNCCL's watchdog writes each rank's recent collectives to
`$TORCH_FR_DUMP_TEMP_FILE<rank>` (`nccl_trace_rank_<rank>` by default) when a collective times
out: a pickle (or JSON) of `{"entries": [{"collective_seq_id", "profiling_name",
"process_group", "state", ...}], "pg_status": ...}`. Every rank dumps at the same moment, so the
rank whose last entry in a process group is behind the others' never entered the collective
they are stuck in. torch 2.13 records gloo collectives too but writes no file on a gloo timeout
(README, "The culprit"); a dump taken by hand in the same format is read the same way.

Pickles are read with an unpickler that refuses every class: a dump holds only dicts, lists,
strings and numbers, and a crafted file cannot run code.
"""

import io
import os
from collections.abc import Iterable

from classifier.precompiled import re_compile

DUMP_NAME = re_compile(r"^(?:[\w.-]*_)?trace_rank_(?P<rank>\d+)(?:\.(?:json|pkl|pickle))?$")
MAX_DUMP_BYTES = 64 << 20
MAX_DUMPS = 4096


def _unpickle_data(data: bytes):
    """A pickle's plain data; any class in it is refused (UnpicklingError)."""
    import pickle  # only a job with flight-recorder dumps needs it

    class DataOnly(pickle.Unpickler):
        def find_class(self, module, name):
            raise pickle.UnpicklingError(f"refusing {module}.{name} in a flight-recorder dump")

    try:
        return DataOnly(io.BytesIO(data)).load()
    except pickle.UnpicklingError:
        return None


def _load(path):
    try:
        if os.path.getsize(path) > MAX_DUMP_BYTES:
            return None
        with open(path, "rb") as fh:
            data = fh.read()
        if data[:1] in (b"{", b"["):
            import json  # here, not at the top: most runs find no dump, and json costs ~1 ms
            return json.loads(data)
        return _unpickle_data(data)
    except (OSError, ValueError, EOFError, IndexError, TypeError, MemoryError, RecursionError):
        return None


def dump_files(paths: Iterable[str]) -> dict[int, str]:
    """{rank: dump path} for the flight-recorder dumps in the directories of `paths`."""
    found = {}
    dirs = dict.fromkeys(os.path.dirname(os.path.abspath(p)) for p in paths if p != "-")
    for directory in dirs:
        try:
            names = sorted(os.listdir(directory))[:100_000]
        except OSError:
            continue
        for name in names:
            # A log beside thousands of files (a home or /tmp): the substring test first.
            m = DUMP_NAME.match(name) if "trace_rank_" in name else None
            if m and len(found) < MAX_DUMPS:
                found.setdefault(int(m["rank"]), os.path.join(directory, name))
    return found


def last_entered(dumps: dict[int, str]) -> dict[int, tuple[int, str]]:
    """{rank: (last collective_seq_id, its name)} in the default process group, per readable dump."""
    out = {}
    for rank, path in dumps.items():
        data = _load(path)
        entries = data.get("entries") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            continue
        best = (-1, "")
        for e in entries:
            if not isinstance(e, dict) or e.get("is_p2p"):
                continue
            pg = e.get("process_group")
            if isinstance(pg, (list, tuple)) and pg and str(pg[0]) not in ("0", "default_pg"):
                continue  # sub-groups number their collectives their own way
            seq = e.get("collective_seq_id")
            if isinstance(seq, int) and seq > best[0]:
                best = (seq, str(e.get("profiling_name") or "collective"))
        out[rank] = best
    return out
