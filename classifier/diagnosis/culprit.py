"""Which rank and which host the failure started on: the `culprit` of the JSON contract.

The lines that prove a failure are often printed by its victims: in a collective timeout every
healthy rank reports the collective and the rank that hung says nothing. So the culprit is read
from what is missing or behind as much as from what is said: the ranks that never reported the
timed-out collective, the rank whose sequence number lags, the rank whose log stops first; the
host whose kernel logged the Xid or the OOM kill; the node that could not connect while the
others waited. A wrong host sends someone to drain a healthy node, so each kind of evidence
names a culprit only when it singles one out, and the confidence says how directly.
"""

from __future__ import annotations

import re

from classifier.numbers import small_int
from classifier.precompiled import re_compile
from classifier.diagnosis.events import (  # noqa: F401 (_STEP, _step, any_event: read from here too)
    _CONNECT_HINTS, _HW_HINTS, _STEP, _TIMEOUT_HINTS, EVENT_WORDS, _event, _kept_event, _kept_step,
    _step, _step_number, any_event)
from classifier.diagnosis.literals import bits
from classifier.diagnosis.topology import LOOPBACK, Topology, host_from_path, line_host

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any
    from classifier.diagnosis.normalize import Line

# ProcessGroupNCCL's watchdog, blocking wait and status lines; gloo's own timeouts.
_TIMEOUT = re_compile(r"collective operation timeout|timed out in blocking wait|Timeout at NCCL work"
                      r"|detected by watchdog at work|Timed out waiting \d+ms for (?:recv|send)"
                      r"|Connection closed by peer|Connection reset by peer|failed to pass monitoredBarrier")
_SEQ = re_compile(r"SeqNum=(?P<seq>\d+),\s*OpType=(?P<op>\w+)|Timeout at NCCL work: (?P<seq2>\d+)"
                  r"|work(?: sequence id)?: (?P<seq3>\d+)")
_ENQUEUED = re_compile(r"last enqueued (?:NCCL )?work: (?P<n>-?\d+)")
# `[Rank 5]` / `[PG ID 0 PG GUID 0(default_pg) Rank 5]` inside ProcessGroupNCCL's messages: the rank
# of a line no launcher labelled (torch < 2.2 printed no `[rank5]:` prefix)
# Only in the default group: a sub-group's messages number ranks within the group.
_MSG_RANK = re_compile(r"\[(?:PG (?:ID )?0 [^\]]*?)?Rank (?P<rank>\d+)\]")
# Hardware: NVRM's Xid line (krcReportXid), ECC and fell-off-the-bus messages.
_PCI = r"(?P<pci>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
_XID = re_compile(r"NVRM: Xid \(PCI:" + _PCI + r"[0-9a-fA-F.]*\): (?P<xid>\d+)(?:, pid=(?P<pid>\d+))?")
_HW = re_compile(r"fallen off the bus|uncorrectable ECC|ECC error|GPU is lost|NVRM: GPU at PCI:" + _PCI)
# Host memory: the kernel's OOM killer, DeepSpeed's launcher and torchelastic seeing SIGKILL.
_KERNEL_OOM = re_compile(r"(?:Out of memory|Memory cgroup out of memory): Killed process (?P<pid>\d+)"
                         r"|oom-kill:.*?\btask_memcg=\S*,task=\S+,pid=(?P<pid2>\d+)")
# DeepSpeed's launcher prints the command it spawned *last* with the failed process's code
# (launcher/launch.py sigkill_handler, 0.9 to 0.19): its --local_rank is not the dead rank's.
_LAUNCHER_KILL = re_compile(r"(?:--local_rank[= ](?P<local>\d+)\b.*)?exits with return code = -9\b")
_ELASTIC_KILL = re_compile(r"failed \(exitcode: -9\) local_rank: (?P<local>\d+) \(pid: (?P<pid>\d+)\)")
# A node that could not reach the rendezvous / store, against nodes that waited for it.
_CONNECT_FAIL = re_compile(r"failed to connect to|Connection refused|No route to host"
                           r"|timed out after \d+\S* while trying to connect|Name or service not known"
                           r"|RendezvousConnectionError|DistNetworkError|host not found", re.IGNORECASE)
_JOINED = re_compile(r"Init COMPLETE|Rendezvous complete|rendezvous'ing worker group|\bstep\b", re.IGNORECASE)
# Categories whose cause lives on one node or rank; a config or install error is everyone's.
_LOCAL = frozenset({"gpu_oom", "unknown", "nccl_network", "disk_full", "device_visibility"})
DIRECT, STRONG, LIKELY, WEAK = 0.9, 0.85, 0.75, 0.6
# The literals of the tests in feed() (literals.py); any_event needs an event word or `step`.
_B_RANK, _B_STEP = bits("Rank "), bits("tep", "ter")
_B_EVENT = bits(*EVENT_WORDS, "step", caseless=True)
INFERRED_HOST = 0.1  # taken off when the host is read from the block layout, not seen


class CulpritWitness:
    """Watches every line of a job for the evidence that points at one rank or host."""

    def __init__(self) -> None:
        self.topology = Topology()
        self.reporters: set[int] = set()           # ranks that printed a collective timeout
        self.position: dict[int, int] = {}         # rank -> furthest collective it reached
        self.op: str | None = None
        self.ops: set[str] = set()                 # every OpType / group the timeouts name
        self.seen: set[int] = set()
        self.last_ts: dict[int, float] = {}
        self.last_step: dict[int, int] = {}
        self.hardware: list[tuple[str | None, str | None, int | None, int | None]] = []
        self.kernel_oom: list[tuple[str | None, int]] = []
        self.kills: list[tuple[str | None, int, int | None]] = []
        self.connect_fail: dict[str, set[int]] = {}
        self.joined_after: set[str] = set()
        self._file_host: dict[str, str | None] = {}
        self.flight: dict[int, tuple[int, str]] = {}  # rank -> last collective its dump shows

    def feed(self, line: "Line") -> None:
        """Read one normalised line."""
        file_host = self._file_host.get(line.source, self._file_host)  # itself: not seen yet
        if file_host is self._file_host:
            file_host = self._file_host[line.source] = host_from_path(line.source)
        host = line_host(line, file_host)
        # Literal tests read the gist (long runs squeezed, normalize.gist); regexes the message.
        msg, gist, rank, lits = line.msg, line.gist, line.rank, line.lits
        if rank is None and lits & _B_RANK and "Rank " in gist:
            m = _MSG_RANK.search(msg)
            if m:
                rank = small_int(m["rank"])
                if host and rank is not None:
                    self.topology.host_of.setdefault(rank, host)
        self.topology.feed(line, host)
        if rank is not None:
            self.seen.add(rank)
            if line.ts is not None:
                self.last_ts[rank] = line.ts
            step = (_kept_step(msg) if len(msg) < 512 else _step_number(msg)) \
                if lits & _B_STEP and ("tep" in gist or "ter" in gist) else None
            if step is not None:
                self.last_step[rank] = step
        if not (lits & _B_EVENT and (_kept_event(gist) if len(gist) < 512 else _event(gist))):
            return
        low = gist.lower()
        # Each search below is behind a literal its pattern needs: most event lines are NCCL's
        # `Init COMPLETE` and connection chatter, which none of them matches.
        if rank is not None and _TIMEOUT_HINTS(low) and _TIMEOUT.search(msg):
            self.reporters.add(rank)
            m = _SEQ.search(msg)
            seq = small_int(m["seq"] or m["seq2"] or m["seq3"]) if m else None
            if seq is not None:
                self.position[rank] = max(self.position.get(rank, -1), seq)
                self.op = self.op or m["op"]
                if m["op"]:
                    self.ops.add(m["op"])
                pg = re.search(r"\bPG (?:ID )?(\d+)", msg)
                if pg:
                    self.ops.add(f"PG {pg.group(1)}" if pg.group(1) != "0" else "")
            m = _ENQUEUED.search(msg)
            enqueued = small_int(m["n"]) if m else None
            if enqueued is not None:
                self.position[rank] = max(self.position.get(rank, -1), enqueued)
        self._feed_node_events(msg, gist, low, rank, host)

    def _feed_node_events(self, msg, gist, low, rank, host):
        m = (_XID.search(msg) or _HW.search(msg)) if _HW_HINTS(gist) else None
        if m:
            groups = m.groupdict()
            pid = groups.get("pid")
            self.hardware.append((host, groups.get("pci"), small_int(pid) if pid else None, rank))
        m = _KERNEL_OOM.search(msg) if "Killed process" in gist or "oom-kill:" in gist else None
        if m and small_int(m["pid"] or m["pid2"]) is not None:
            self.kernel_oom.append((host, small_int(m["pid"] or m["pid2"])))
        m = _LAUNCHER_KILL.search(msg) if "exits with return code = -9" in gist else None
        if m:
            self.kills.append((host, small_int(m["local"]) if m["local"] else None, -1))
        m = _ELASTIC_KILL.search(msg) if "failed (exitcode: -9)" in gist else None
        if m and small_int(m["local"]) is not None and small_int(m["pid"]) is not None:
            self.kills.append((host, small_int(m["local"]), small_int(m["pid"])))
        if host:
            if _CONNECT_HINTS(low) and _CONNECT_FAIL.search(msg):
                self.connect_fail.setdefault(host, set())
                if rank is not None:
                    self.connect_fail[host].add(rank)
                self.joined_after.discard(host)
            elif host in self.connect_fail and _JOINED.search(msg):  # rare: no gate needed
                self.joined_after.add(host)

    def culprit(self, category: str, first_rank: int | None = None, raised: frozenset[int] = frozenset(),
                root_rank: int | None = None, world_size: int = 0) -> dict[str, Any] | None:
        """The culprit of a diagnosis of `category`, or None when the log cannot say.

        `first_rank` is the rank of the first evidence line, `raised` every rank that printed
        the evidence, `root_rank` torchelastic's first observed failure.
        """
        self.topology.finish()
        self.topology.world_size = max(self.topology.world_size, world_size)
        if category == "nccl_timeout":
            return self._timeout(root_rank)
        if category == "gpu_hardware":
            return self._hardware(raised)
        if category == "host_oom":
            return self._host_oom(root_rank)
        if category == "connection_failure":  # a node off the rendezvous, or a peer lost mid-job
            return self._unreachable() or self._silent_peer()
        if category in _LOCAL:
            return self._silent_peer() or self._minority(first_rank, raised)
        return None

    def _named(self, ranks, reason, confidence, hosts=None):
        """The JSON object: hosts read from the ranks when not given."""
        inferred = False
        if hosts is None:
            hosts = []
            for r in ranks:
                h, guess = self.topology.host_for(r)
                if h is None:
                    continue
                inferred = inferred or guess
                if h not in hosts:
                    hosts.append(h)
        hosts = [h for h in hosts if h not in LOOPBACK]  # DeepSpeed's single-node `localhost`
        if not ranks and not hosts:
            return None
        if inferred:
            confidence -= INFERRED_HOST
        return {"ranks": sorted(ranks), "hosts": hosts, "reason": reason,
                "confidence": round(confidence, 2)}

    def _world(self):
        return max(self.topology.world_size, max(self.seen, default=-1) + 1)

    def _launched(self):
        """Ranks known to have run: seen on a line, or placed by a launcher whose output is here."""
        return self.seen | {r for ranks in self.topology.global_map.values() for r in ranks}

    def _missing(self):
        """(ranks that reported no timeout or lost peer, whether they are few enough to blame)."""
        world = self._world()
        missing = [r for r in range(world) if r not in self.reporters]
        return missing, 0 < len(missing) <= max(1, world // 4) and len(self.reporters) >= world / 2

    def _silent_peer(self):
        """The few ranks, known to have run, that did not report losing a peer: the lost peer."""
        missing, few = self._missing()
        if few and all(r in self._launched() for r in missing):
            return self._named(missing, f"the other {len(self.reporters)} ranks lost their "
                               "connection to it or timed out waiting for it", LIKELY)
        return None

    def _flight_recorder(self):
        """The rank(s) whose flight-recorder dump stops before the others' (flightrec.py)."""
        if len(self.flight) < 2:
            return None
        top = max(seq for seq, _ in self.flight.values())
        low = min(seq for seq, _ in self.flight.values())
        behind = [r for r, (seq, _) in self.flight.items() if seq == low]
        if low == top or len(behind) >= len(self.flight) / 2:
            return None
        name = next(n for seq, n in self.flight.values() if seq == top)
        return self._named(behind, f"its flight recorder stops at collective #{low}: it never "
                           f"entered {name} #{top}, which the other {len(self.flight) - len(behind)} "
                           "ranks did", DIRECT)

    def _timeout(self, root_rank):
        found = self._flight_recorder()
        if found:
            return found
        op = self.op or "collective"
        missing, few = self._missing()
        if few and all(r in self._launched() for r in missing):
            return self._named(missing, self._stopped(missing) + f"it never reached the {op} the other "
                               f"{len(self.reporters)} ranks timed out on", STRONG)
        # Sequence numbers compare only within one group and one collective, and a straggler
        # shows as a few ranks one step behind a crowd that agrees (not ranks spread out).
        if len(set(self.position.values())) == 2 and len(self.ops - {""}) <= 1:
            low = min(self.position.values())
            behind = [r for r, p in self.position.items() if p == low]
            if len(behind) < len(self.position) / 2:
                top = max(self.position.values())
                return self._named(behind, f"its last collective was #{low} while the others had "
                                   f"reached #{top}", LIKELY)
        if few and len(self.reporters) >= 2:
            return self._named(missing, f"it printed nothing while the other {len(self.reporters)} "
                               f"ranks timed out on the {op}", WEAK)
        early = self._stops_first()
        if early is not None:
            return self._named([early], self._stopped([early]) + "the others went on until the "
                               "timeout", WEAK)
        if root_rank is not None and self.reporters and root_rank not in self.reporters:
            return self._named([root_rank], "torchelastic names it the first failure and it "
                               "reported no timeout itself", WEAK)
        return None

    def _stopped(self, ranks):
        steps = {self.last_step[r] for r in ranks if r in self.last_step}
        return f"its log stops at step {steps.pop()}; " if len(steps) == 1 else ""

    def _stops_first(self):
        """The one rank whose log ends well before every other rank's, by timestamps."""
        if len(self.last_ts) < 3:
            return None
        order = sorted(self.last_ts, key=self.last_ts.get)
        gap = self.last_ts[order[1]] - self.last_ts[order[0]]
        span = self.last_ts[order[-1]] - self.last_ts[order[1]]
        return order[0] if gap >= 10 and gap > 2 * span else None

    def _hardware(self, raised):
        events = [e for e in self.hardware if e[0] is not None]
        hosts = sorted({e[0] for e in events})
        if len(hosts) == 1:
            host = hosts[0]
            ranks = set()
            pci = None
            for _, bus, pid, rank in (e for e in events if e[0] == host):
                pci = pci or bus
                for r in (rank, bus and self.topology.rank_of_bus(host, bus),
                          pid and self.topology.rank_of_pid(host, pid)):
                    if isinstance(r, int):
                        ranks.add(r)
            if not ranks:  # the rank on that host that printed the failure
                ranks = {r for r in raised if self.topology.host_for(r) == (host, False)}
            gpu = f" (GPU at PCI {pci})" if pci else ""
            return self._named(sorted(ranks), f"its kernel logged the GPU fault{gpu}", DIRECT,
                               hosts=[host])
        ranks = sorted(raised)
        if len(ranks) == 1 and not hosts:
            return self._named(ranks, "it is the rank that reported the GPU fault", LIKELY)
        return None

    def _host_oom(self, root_rank):
        killed = sorted({h for h, _ in self.kernel_oom if h})
        if len(killed) == 1:
            host = killed[0]
            ranks = {self.topology.rank_of_pid(host, pid) for h, pid in self.kernel_oom if h == host}
            ranks |= self._killed_ranks(host)
            return self._named(sorted(r for r in ranks if r is not None),
                               "the kernel's OOM killer ended its process", DIRECT, hosts=[host])
        hosts = sorted({h for h, _, _ in self.kills if h})
        if len(hosts) == 1:
            host = hosts[0]
            return self._named(sorted(self._killed_ranks(host)),
                               "its launcher saw a worker killed by SIGKILL (-9), the OOM "
                               "killer's signal", STRONG, hosts=[host])
        if not hosts and not killed and root_rank is not None and self.kills:
            return self._named([root_rank], "torchelastic names it the first failure, killed "
                               "by SIGKILL (-9)", LIKELY)
        return None

    def _killed_ranks(self, host):
        """The ranks on `host` a SIGKILL is known to have ended: torchelastic's local rank, or the
        one rank the host ran that did not report losing a peer."""
        ranks = {self.topology.global_rank(host, local) for h, local, pid in self.kills
                 if h == host and local is not None and self._trust_local(host, local, pid)} - {None}
        if not ranks:
            placed = self.topology.global_map.get(host) or [r for r, h in self.topology.host_of.items()
                                                             if h == host]
            silent = [r for r in placed if r not in self.reporters]
            if len(silent) == 1 and len(placed) > 1:
                ranks = set(silent)
        return ranks

    def _trust_local(self, host, local, pid):
        """torchelastic's local rank is the dead process's; DeepSpeed's -9 line (pid -1) shows
        its last spawned command, so only a local rank other than the last one can be the dead
        rank's (a launcher that prints the failed command itself)."""
        if pid != -1:
            return True
        procs = self.topology.local_procs_of(host)
        return bool(procs) and local != procs - 1

    def _unreachable(self):
        failing = sorted(h for h in self.connect_fail if h not in self.joined_after)
        others = [h for h in self.topology.hosts if h not in self.connect_fail]
        if failing and others:
            ranks = sorted({r for h in failing for r in self.connect_fail[h]})
            return self._named(ranks, f"it could not connect to the rendezvous while "
                               f"{len(others)} other node(s) waited for it", STRONG, hosts=failing)
        return None

    def _minority(self, first, raised):
        """A failure printed by a few ranks of many: the first of them started it."""
        world = self._world()
        if first is None or world < 2 or len(raised | {first}) > world / 2:
            return None
        return self._named([first], f"it raised the error first ({len(raised | {first})} of "
                           f"{world} ranks raised it)", LIKELY)


def culprit_line(culprit: dict[str, Any] | None) -> str | None:
    """One line for humans: 'rank 5 on node-3: <reason>'."""
    if not culprit:
        return None
    ranks, hosts = culprit.get("ranks") or [], culprit.get("hosts") or []
    who = []
    if ranks:
        who.append(("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks)))
    if hosts:
        who.append(("on " if ranks else "") + ", ".join(hosts))
    return f"{' '.join(who)}: {culprit['reason']}"
