"""Where each rank ran: the rank <-> host map a job's log gives away, line by line.

A culprit found by rank needs its host (the node to drain), and one found by host (a dmesg
Xid, the OOM killer) needs its rank. Jobs print the pairing in many forms; each is read here:
a host label around a rank label (`node-3: [rank5]: ...`, normalize.py), NCCL's own
`host:pid:tid [dev] NCCL INFO` prefix and its `comm ... rank R nranks N ... busId B` line,
DeepSpeed's launcher (`WORLD INFO DICT`, `global_rank_mapping`, `node_rank=`, the command of
each spawned process with its `--local_rank`), torchelastic's failure blocks (`host :` then
`rank :`), Slurm's node list for `srun -l` task ids, and file names (`node-b.rank2.log`).
"""

import os
import re
from functools import lru_cache

from classifier.numbers import small_int
from classifier.precompiled import re_compile
from classifier.diagnosis.literals import bits

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.normalize import Line

# syslog / journald: `May  1 03:14:15 node-3 kernel: ...`, `2026-05-01T03:14:15+00:00 node-3 kernel:`
_SYSLOG_HOST = re_compile(r"(?:[A-Z][a-z]{2}\s+\d{1,2}\s\d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*)"
                          r"\s+(?P<host>[A-Za-z][\w.-]{0,253})\s+kernel:")
# NCCL prefixes every INFO/WARN line with `hostname:pid:tid [cudaDev]` (src/debug.cc).
_NCCL_PREFIX = re_compile(r"(?P<host>[A-Za-z][\w.-]{0,253}):(?P<pid>\d+):\d+\s+\[(?P<dev>\d+)\]\s+NCCL\s")
_B_NCCL = bits("NCCL")  # literals.py: a line whose mask lacks it has no NCCL prefix
# Searched from its literal tail (nccl_prefix()): from each letter of a long word the plain
# search scans to the word's end, quadratic (1.4 s on one line of 8 K letters and `NCCL`).
_NCCL_TAIL = re_compile(r":\d+:\d+\s+\[\d+\]\s+NCCL\s")
_HOST_RUN = re_compile(r"[\w.-]*")
_LETTER = re_compile(r"[A-Za-z]")
_NCCL_COMM = re_compile(r"\bcomm\s+0x[0-9a-f]+\s+rank\s+(?P<rank>\d+)\s+nranks\s+(?P<nranks>\d+)"
                        r"\s+cudaDev\s+\d+\s+(?:nvmlDev\s+\d+\s+)?busId\s+(?P<bus>[0-9a-f]+)")
# DeepSpeed launcher/launch.py and runner.py
_WORLD_INFO = re_compile(r"WORLD INFO DICT:\s*(?P<dict>\{.*\})")
_GLOBAL_MAP = re_compile(r"global_rank_mapping=(?:defaultdict\(<class 'list'>,\s*)?(?P<dict>\{.*?\})")
_NODE_RANK = re_compile(r"nnodes=(?P<nnodes>\d+),\s*num_local_procs=(?P<procs>\d+),\s*node_rank=(?P<node>\d+)")
_SPAWNED = re_compile(r"process\s+(?P<pid>\d+)\s+spawned with command:.*?--local_rank[= ](?P<local>\d+)")
_WORLD = re_compile(r"\b(?:dist_world_size|WORLD_SIZE|world_size)\s*[=:]\s*(?P<n>\d+)")
# torchelastic: `failed (exitcode: -9) local_rank: 3 (pid: 2001) of binary`, and its summary
# blocks, which print `host : node-3` and then `rank : 5 (local_rank: 5)`.
_ELASTIC_FAILED = re_compile(r"failed \(exitcode: -?\d+\) local_rank: (?P<local>\d+) \(pid: (?P<pid>\d+)\)")
_FIELD_HOST = re_compile(r"^host\s*:\s*(?P<host>[A-Za-z0-9][\w.-]{0,253})\s*$")
_FIELD_RANK = re_compile(r"^rank\s*:\s*(?P<rank>\d+)")
_FIELD_EXIT = re_compile(r"^exitcode\s*:\s*-?\d+\s*\(pid:\s*(?P<pid>\d+)\)")
# torchelastic's agent, once the rendezvous is done: `Rendezvous complete for workers. Result:
# restart_count=0 ... group_rank=1 ... global_ranks=[8, 9, ...] ... global_world_sizes=[16, ...]`
_RDZV_RANKS = re_compile(r"\bglobal_ranks=\[(?P<ranks>[\d, ]+)\]")
_RDZV_WORLD = re_compile(r"\bglobal_world_sizes=\[(?P<n>\d+)")
# Slurm's node list and layout, as a batch script's `env` or `scontrol show job` print them.
_NODELIST = re_compile(r"\b(?:SLURM_JOB_NODELIST|SLURM_NODELIST|NodeList)=(?P<list>\S+)")
_TASKS_PER_NODE = re_compile(r"\b(?:SLURM_TASKS_PER_NODE|SLURM_NTASKS_PER_NODE)=(?P<n>\d+)")
_HOSTLIKE = re_compile(r"^[a-z][a-z0-9-]{0,253}$")
_NOT_HOST = re_compile(r"^(?:rank|task|proc|slurm|job|log|logs|out|err|stdout|stderr|train|worker)\b|\d{4,}")
_RANK_PART = re_compile(r"^(?:rank|task|proc)[-_]?\d+$")
_LOG_KIND = frozenset({"dmesg", "syslog", "kern", "messages", "journal"})
_KINDS = r"(?:dmesg|syslog|kern|kernel|messages|journal)"
# a kernel log's host in the same dotted part: `node-3-dmesg`, `dmesg_node-3` (a rank file's
# host only as its own part, `node-3.rank5.log`: `exp-7_rank5.log` names a run, not a host)
_HOST_AND_KIND = (re_compile(r"^(?P<host>[a-z][a-z0-9-]*?)[_-]" + _KINDS + "$"),
                  re_compile(r"^" + _KINDS + r"[_-](?P<host>[a-z][a-z0-9-]*)$"))


MAX_HOSTS = 65536  # past any real allocation: a list that expands further is garbled


def _all_small(*texts):
    return all(small_int(t) is not None for t in texts)


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed host list, 'node-[01-03,07],gpu5' -> node-01 node-02 node-03 node-07 gpu5;
    [] for one that does not read or names more than MAX_HOSTS hosts."""
    out = []
    for item in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", text):
        m = re.fullmatch(r"(?P<pre>[^\[]*)\[(?P<ranges>[^\]]*)\](?P<post>.*)", item)
        if not m:
            out.append(item)
            continue
        for part in m["ranges"].split(","):
            lo, _, hi = part.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()) or len(lo) > 9 or len(hi) > 9 \
                    or len(out) + int(hi or lo) - int(lo) >= MAX_HOSTS:
                return []
            for n in range(int(lo), int(hi or lo) + 1):
                out.append(f"{m['pre']}{n:0{len(lo)}d}{m['post']}")
    return out


def host_from_path(path: str) -> str | None:
    """The host a per-host file names: `node-b.rank2.log`, `node-3.dmesg`, `dmesg.node-3.log`."""
    parts = os.path.basename(path).lower().split(".")
    while parts and parts[-1] in ("gz", "bz2", "xz", "zst", "log", "out", "err", "txt"):
        parts.pop()
    candidate = None
    if len(parts) >= 2 and (_RANK_PART.match(parts[1]) or parts[1] in _LOG_KIND):
        candidate = parts[0]
    elif len(parts) >= 2 and parts[0] in _LOG_KIND:
        candidate = parts[1]
    else:
        for pattern in _HOST_AND_KIND:
            m = pattern.match(parts[0]) if parts else None
            if m:
                candidate = m["host"]
                break
    if candidate is None:
        return None
    if _HOSTLIKE.match(candidate) and re.search(r"[\d-]", candidate) and not _NOT_HOST.match(candidate):
        return candidate
    return None


LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def nccl_prefix(msg: str) -> "re.Match | None":
    """`_NCCL_PREFIX.search(msg)`, in linear time: each place the tail matches, in order, with
    the host begun at the first letter of the word before its colon (the leftmost start)."""
    pos = 0
    while True:
        tail = _NCCL_TAIL.search(msg, pos)
        if tail is None:
            return None
        colon = tail.start()
        left = msg.rfind(":", 0, colon) + 1
        run = _HOST_RUN.match(msg[left:colon][::-1]).end()
        letter = _LETTER.search(msg, colon - run, colon)
        if letter:
            return _NCCL_PREFIX.match(msg, letter.start())
        pos = colon + 1


def line_host(line: "Line", file_host: str | None = None) -> str | None:
    """The host a line was written on: its host label, a syslog host, NCCL's prefix, its file.

    `localhost` (DeepSpeed's single-node pdsh label) names no machine: None.
    """
    if line.host:
        return None if line.host in LOOPBACK else line.host
    m = _SYSLOG_HOST.search(line.text) if " kernel:" in line.text else None
    if m:
        return m["host"]
    msg = line.msg
    if line.lits & _B_NCCL and "NCCL" in msg:
        host = _kept_nccl_host(msg) if len(msg) < 512 else _nccl_host(msg)
        if host is not None:
            return host
    return file_host


def _nccl_host(msg: str) -> str | None:
    m = nccl_prefix(msg)
    return m["host"] if m and m["host"] != "localhost" else None


# NCCL's lines repeat their prefix and often their whole message: the host read from a short
# message is kept for its next copies.
_kept_nccl_host = lru_cache(maxsize=4096)(_nccl_host)


# The literals feed() tests before its regexes (literals.py): without one, none is asked.
_B_FEED = bits("nranks", "orld_size", "WORLD_SIZE", "launch", "spawned", "rank_mapping", "exitcode",
               "global_ranks=")
_B_SLURM = bits("SLURM", "NodeList")


class Topology:
    """Collects every rank <-> host pairing a job prints, and answers which host a rank had."""

    def __init__(self) -> None:
        self.host_of: dict[int, str] = {}        # rank -> host, seen directly
        self.hosts: list[str] = []               # every host seen, in order
        self.world_size = 0
        self.bus: dict[tuple[str, str], int] = {}    # (host, busId) -> rank
        self.pid_local: dict[tuple[str | None, int], int] = {}  # (host, pid) -> local rank
        self.pid_rank: dict[tuple[str | None, int], int] = {}   # (host, pid) -> rank
        self.node_rank: dict[str, int] = {}      # host -> DeepSpeed node_rank
        self.local_procs = 0
        self.global_map: dict[str, list[int]] = {}  # host -> its global ranks (DeepSpeed)
        self.nodelist: list[str] = []
        self.tasks_per_node = 0
        self._comms: list[tuple[str, int, int, str]] = []
        self._field_host: tuple[str, int] | None = None
        self._field_rank: tuple[str, int, int] | None = None  # (host, rank, line) of a block

    def _add_host(self, host: str) -> None:
        if host not in self.hosts:
            self.hosts.append(host)

    def feed(self, line: "Line", host: str | None) -> None:
        """Read one normalised line, `host` being where it was written (line_host)."""
        msg, gist = line.msg, line.gist  # literal tests read the gist (normalize.gist)
        if host:
            self._add_host(host)
            if line.rank is not None:
                self.host_of.setdefault(line.rank, host)
        lits = line.lits  # one mask test spares the literal tests below on most lines
        if lits & _B_FEED:
            self._feed_literals(msg, gist, host)
        if msg[:1] in ("h", "r", "e"):  # torchelastic's `host :`, `rank :`, `exitcode :` fields
            self._feed_fields(line, msg)
        if lits & _B_SLURM and ("SLURM" in gist or "NodeList" in gist):
            m = _NODELIST.search(msg)
            if m:
                self.nodelist = expand_hostlist(m["list"]) or self.nodelist
            m = _TASKS_PER_NODE.search(msg)
            if m and small_int(m["n"]) is not None:
                self.tasks_per_node = int(m["n"])

    def _feed_literals(self, msg, gist, host):
        if "nranks" in gist and "NCCL" in gist:  # _NCCL_COMM needs its `nranks`
            m = _NCCL_COMM.search(msg)
            if m and host and small_int(m["rank"]) is not None and small_int(m["nranks"]) is not None:
                self._comms.append((host, int(m["rank"]), int(m["nranks"]), m["bus"]))
        m = _WORLD.search(msg) if "orld_size" in gist or "WORLD_SIZE" in gist else None
        if m and small_int(m["n"]) is not None:
            self.world_size = max(self.world_size, int(m["n"]))
        if "launch" in gist or "spawned" in gist or "rank_mapping" in gist:
            self._feed_launcher(msg, host)
        m = _ELASTIC_FAILED.search(msg) if "exitcode" in gist else None
        if m and _all_small(m["pid"], m["local"]):
            self.pid_local[(host, int(m["pid"]))] = int(m["local"])
        m = _RDZV_RANKS.search(msg) if host and "global_ranks=" in gist else None
        if m:
            for r in re.findall(r"\d+", m["ranks"]):
                if small_int(r) is not None:
                    self.host_of.setdefault(int(r), host)
            w = _RDZV_WORLD.search(msg)
            if w and small_int(w["n"]) is not None:
                self.world_size = max(self.world_size, int(w["n"]))

    def _feed_launcher(self, msg, host):
        m = _WORLD_INFO.search(msg) or _GLOBAL_MAP.search(msg)
        if m:
            import ast  # only a launcher's world-info line needs a literal read
            try:
                mapping = ast.literal_eval(m["dict"])
            except (ValueError, SyntaxError):
                mapping = None
            if isinstance(mapping, dict):
                self._set_world_map(mapping, global_ranks="global_rank_mapping" in msg)
        m = _NODE_RANK.search(msg)
        if m and host and _all_small(m["node"], m["procs"]):
            self.node_rank[host] = int(m["node"])
            self.local_procs = int(m["procs"])
        m = _SPAWNED.search(msg)
        if m and _all_small(m["pid"], m["local"]):
            self.pid_local[(host, int(m["pid"]))] = int(m["local"])

    def _set_world_map(self, mapping, global_ranks):
        offset, out = 0, {}
        for h, ranks in mapping.items():
            if not isinstance(ranks, list) or not all(isinstance(r, int) for r in ranks):
                return
            # WORLD INFO DICT lists each host's local ranks; DeepSpeed numbers them in its order.
            out[str(h)] = list(ranks) if global_ranks else [offset + i for i in range(len(ranks))]
            offset += len(ranks)
        if global_ranks or not self.global_map:
            self.global_map = out
        for h in out:
            self._add_host(h)
        self.world_size = max(self.world_size, sum(len(r) for r in out.values()))

    def _feed_fields(self, line, msg):
        m = _FIELD_HOST.match(msg)
        if m and m["host"] not in LOOPBACK:
            self._field_host = (m["host"], line.lineno)
            return
        m = _FIELD_RANK.match(msg)
        if m and small_int(m["rank"]) is not None and self._field_host and line.lineno - self._field_host[1] <= 3:
            self.host_of.setdefault(int(m["rank"]), self._field_host[0])
            self._add_host(self._field_host[0])
            self._field_rank = (self._field_host[0], int(m["rank"]), line.lineno)
            self._field_host = None
            return
        m = _FIELD_EXIT.match(msg)
        if m and small_int(m["pid"]) is not None and self._field_rank and line.lineno - self._field_rank[2] <= 3:
            host, rank, _ = self._field_rank
            self.pid_rank[(host, int(m["pid"]))] = rank
            self.pid_rank.setdefault((None, int(m["pid"])), rank)
            self._field_rank = None

    def finish(self) -> None:
        """Resolve what needs the whole log: NCCL comms of the world communicator."""
        if self._comms:
            world = max(n for _, _, n, _ in self._comms)
            self.world_size = max(self.world_size, world)
            for host, rank, nranks, bus in self._comms:
                if nranks == world:  # a sub-communicator numbers its ranks its own way
                    self.host_of.setdefault(rank, host)
                    self.bus[(host, bus.lstrip("0") or "0")] = rank

    def global_rank(self, host: str | None, local_rank: int) -> int | None:
        """The global rank of local rank `local_rank` on `host`, when the launcher said."""
        if host in self.global_map and local_rank < len(self.global_map[host]):
            return self.global_map[host][local_rank]
        if host in self.node_rank and self.local_procs:
            return self.node_rank[host] * self.local_procs + local_rank
        if host is None and len(self.hosts) <= 1 and not self.node_rank and not self.global_map:
            return local_rank  # a single node: local rank is the rank
        return None

    def rank_of_bus(self, host: str, pci: str) -> int | None:
        """The rank whose GPU sits on PCI bus `pci` ('0000:3b:00') of `host`, from NCCL's busId."""
        m = re.match(r"(?:[0-9a-fA-F]{4,8}:)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})", pci)
        if not m:
            return None
        bus = (m.group(1) + m.group(2) + "0").lower().lstrip("0") or "0"
        return self.bus.get((host, bus))

    def rank_of_pid(self, host: str | None, pid: int) -> int | None:
        """The global rank of process `pid` on `host`, from the launcher's lines."""
        for key in ((host, pid), (None, pid)):
            if key in self.pid_rank:
                return self.pid_rank[key]
        local = self.pid_local.get((host, pid))
        return None if local is None else self.global_rank(host, local)

    def local_procs_of(self, host: str) -> int:
        """How many ranks the launcher started on `host` (0 when it did not say)."""
        return len(self.global_map.get(host, ())) or self.local_procs

    def host_for(self, rank: int) -> tuple[str | None, bool]:
        """(host of `rank`, inferred?) — inferred when read from a block layout, not seen."""
        if rank in self.host_of:
            return self.host_of[rank], False
        for host, ranks in self.global_map.items():
            if rank in ranks:
                return host, False
        if self.local_procs:
            for host, node in self.node_rank.items():
                if node * self.local_procs <= rank < (node + 1) * self.local_procs:
                    return host, False
        per_node = self.tasks_per_node
        if self.nodelist and not per_node and self.world_size % len(self.nodelist) == 0:
            per_node = self.world_size // len(self.nodelist)  # srun's default: equal blocks
        if self.nodelist and per_node:
            i = rank // per_node
            if i < len(self.nodelist):
                return self.nodelist[i], True
        return self._block_host(rank), True

    def _block_host(self, rank):
        """Ranks placed in equal blocks per host (every launcher's default): the block's host."""
        hosts = sorted(set(self.host_of.values()))
        world = max(self.world_size, max(self.host_of, default=-1) + 1)
        if len(hosts) < 2 or world % len(hosts):
            return None
        size = world // len(hosts)
        block_host = {}
        for r, h in self.host_of.items():
            if block_host.setdefault(r // size, h) != h:
                return None  # the seen pairs do not follow blocks
        if len(set(block_host.values())) != len(block_host):
            return None
        return block_host.get(rank // size)
