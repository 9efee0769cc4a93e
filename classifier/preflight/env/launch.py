"""`dsdiag env`, launch section: the master address resolves, the master port is free and
bindable on the master, the hostfile parses (DeepSpeed's grammar) and its slots exist.

Name lookups run in a daemon thread with a time limit, so a dead DNS server cannot hang the check.
"""

import os
import re
import socket
import threading
from typing import TYPE_CHECKING, Literal

from classifier.preflight.env.report import DEFAULT_HOSTFILE, DEFAULT_PORT, int_var

if TYPE_CHECKING:
    import argparse

    from classifier.preflight.env.report import Report


def resolve(host: str, timeout: float) -> list[str] | Literal["timeout"] | None:
    """Addresses of a host name, None if it does not resolve, 'timeout' if the lookup hangs."""
    result = {}

    def lookup():
        try:
            result["addrs"] = sorted({i[4][0] for i in socket.getaddrinfo(host, None)})
        except (socket.gaierror, UnicodeError, OSError):
            result["addrs"] = None
    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(timeout)
    return result.get("addrs", "timeout")


def is_local_address(addr: str) -> bool:
    """Whether this host owns the address (binding to it succeeds)."""
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((addr, 0))
        return True
    except OSError:
        return False


def port_owner(port: int) -> dict[str, int | str] | None:
    """pid and command of the process listening on a TCP port, from /proc (Linux), or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as fh:
                next(fh)
                for line in fh:
                    parts = line.split()
                    if int(parts[1].split(":")[1], 16) == port and parts[3] == "0A":  # LISTEN
                        inodes.add(parts[9])
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    if not inodes:
        return None
    targets = {f"socket:[{i}]" for i in inodes}
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int)[:20000]:
        fd_dir = f"/proc/{pid}/fd"
        try:
            for fd in os.listdir(fd_dir):
                if os.readlink(os.path.join(fd_dir, fd)) in targets:
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
                    cmd = " ".join(cmd.split())
                    return {"pid": int(pid), "command": cmd[:80] + ("..." if len(cmd) > 80 else "")}
        except OSError:
            continue
    return None


def probe_port(port: int) -> str | None:
    """None if the port can be bound on all interfaces (as the master's TCPStore does), else
    the errno name."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as c10d's TCPStore
        try:
            s.bind(("", port))
            s.listen(1)
        except OSError as exc:
            import errno
            return errno.errorcode.get(exc.errno, str(exc))
    return None


def parse_hostfile(text: str) -> tuple[dict[str, tuple[int, int]], list[tuple[int, str]]]:
    """DeepSpeed's hostfile grammar (launcher/runner.py, _parse_hostfile): `host slots=N` per line,
    '#' comments. Returns ({host: (slots, line)}, [(line, problem)])."""
    hosts, problems = {}, []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = re.search(r"^(\S+)\s+slots=(\d+)", line)
        if not match:
            problems.append((number, f"bad entry {line!r}: expected 'hostname slots=N'"))
        elif match.group(1) in hosts:
            problems.append((number, f"{match.group(1)} is listed twice (first on line "
                                     f"{hosts[match.group(1)][1]})"))
        else:
            hosts[match.group(1)] = (int(match.group(2)), number)
    if not hosts and not problems:
        problems.append((1, "the hostfile lists no host"))
    return hosts, problems


def check_launch(report: "Report", env: dict[str, str], args: "argparse.Namespace") -> None:
    """Run the launch section's checks (hostfile, master address and port) into the report."""
    hostfile_hosts = _check_hostfile(report, args)
    addr = args.master_addr or env.get("MASTER_ADDR")
    origin = "--master-addr" if args.master_addr else "MASTER_ADDR" if addr else None
    if not addr and hostfile_hosts:
        addr, origin = next(iter(hostfile_hosts)), "the first hostfile host"
    if not addr:
        addr, origin = "127.0.0.1", "the single-node default"
    port_text = args.master_port or env.get("MASTER_PORT") or DEFAULT_PORT
    try:
        port = int(port_text)
    except ValueError:
        report.add("launch", "master port", "error", f"master port {port_text!r} is not a number",
                   "port_conflict", "use a free port number, e.g. 29500")
        return
    addrs = resolve(addr, min(report.timeout, 3.0))
    if addrs is None or addrs == "timeout":
        report.add("launch", "master address", "error",
                   f"{addr} ({origin}) does not resolve" + (" within 3 s" if addrs else "") +
                   ": the workers cannot find the master and the rendezvous times out",
                   "connection_failure", "use an IP address or a name every node resolves "
                   "(check /etc/hosts and DNS)")
        return
    local = any(is_local_address(a) for a in addrs)
    world, local_world = int_var(env, "WORLD_SIZE"), int_var(env, "LOCAL_WORLD_SIZE")
    multi_node = len(hostfile_hosts) > 1 or (world and local_world and world > local_world)
    loopback = all(a.startswith("127.") or a == "::1" for a in addrs)
    # Without an explicit address the deepspeed launcher asks the first host for its own IP
    # (ssh host hostname -I), so only an explicit loopback address is wrong.
    if loopback and multi_node and origin in ("--master-addr", "MASTER_ADDR"):
        report.add("launch", "master address", "error",
                   f"{addr} ({origin}) is a loopback address but the job spans several nodes: "
                   "the other nodes cannot reach it", "connection_failure",
                   "set MASTER_ADDR / --master_addr to rank 0's address on the cluster network")
    else:
        report.add("launch", "master address", "ok", f"{addr} ({origin}) resolves to "
                   f"{', '.join(addrs)}{' - this host' if local else ''}", addresses=addrs,
                   local=local)
    if not local:
        report.add("launch", "master port", "skipped",
                   f"the master {addr} is another host: port {port} can only be tested there "
                   "(run dsdiag env on it)")
        return
    error = probe_port(port)
    if error is None:
        report.add("launch", "master port", "ok", f"port {port} is free and bindable on this host",
                   port=port)
        return
    owner = port_owner(port) if error == "EADDRINUSE" else None
    inside_job = env.get("RANK") not in (None, "")
    if error == "EADDRINUSE" and inside_job:
        report.add("launch", "master port", "info",
                   f"port {port} is in use - expected inside a running job, where the launcher's "
                   "rendezvous store already listens on it" +
                   (f" (pid {owner['pid']}: {owner['command']})" if owner else ""), port=port)
        return
    why = {"EADDRINUSE": "is already in use" + (f" by pid {owner['pid']} ({owner['command']})"
                                                if owner else " by another process"),
           "EACCES": "needs root (ports below 1024 are privileged)"}.get(error, f"fails ({error})")
    report.add("launch", "master port", "error",
               f"port {port} {why}: rank 0 cannot start its TCPStore ('address already in use') "
               "and the other ranks cannot connect", "port_conflict",
               "pick a free port (--master_port / MASTER_PORT), or stop the old job"
               + (f" (kill {owner['pid']})" if owner else ""), port=port, errno=error,
               **({"pid": owner["pid"]} if owner else {}))


def _check_hostfile(report, args):
    path = args.hostfile
    if path is None:
        if not os.path.isfile(DEFAULT_HOSTFILE):
            report.add("launch", "hostfile", "info", f"no --hostfile and no {DEFAULT_HOSTFILE}: "
                       "the deepspeed launcher runs on this node only")
            return {}
        path = DEFAULT_HOSTFILE
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    hosts, problems = parse_hostfile(text)
    for line, problem in problems:
        report.add("launch", "hostfile", "error", f"{path}:{line}: {problem}: the deepspeed "
                   "launcher refuses the file (ValueError)", "device_visibility",
                   "list each host once" if "twice" in problem else
                   "one 'hostname slots=N' per line; '#' starts a comment")
    if problems:
        return hosts
    gpus = len(report.gpus) if report.gpus else report.torch_gpus
    me = {socket.gethostname(), socket.getfqdn(), "localhost"}
    unresolved = []
    for host, (slots, line) in list(hosts.items())[:64]:
        if slots == 0:
            report.add("launch", "hostfile", "error", f"{path}:{line}: {host} has slots=0",
                       "device_visibility", "give every host its number of GPUs")
        addrs = resolve(host, min(report.timeout, 2.0))
        if addrs is None or addrs == "timeout":
            unresolved.append(host)
            report.add("launch", "hostfile", "error", f"{path}:{line}: {host} does not resolve: "
                       "the launcher cannot ssh to it", "connection_failure",
                       "use names every node resolves, and check passwordless ssh to each")
            continue
        local = host in me or any(is_local_address(a) for a in addrs)
        if local and gpus is not None and gpus > 0 and slots > gpus:
            report.add("launch", "hostfile", "error",
                       f"{path}:{line}: {host} (this node) has slots={slots} but {gpus} GPU(s): "
                       "the extra ranks get a LOCAL_RANK with no GPU", "device_visibility",
                       f"set slots={gpus}")
        elif local and not gpus:
            report.add("launch", "hostfile", "skipped",
                       f"{path}:{line}: {host} is this node, but no GPUs are visible here, so "
                       f"slots={slots} was not compared with the GPUs present")
    if not unresolved:
        total = sum(s for s, _ in hosts.values())
        report.add("launch", "hostfile", "ok", f"{path}: {len(hosts)} host(s), {total} slot(s)",
                   hosts={h: s for h, (s, _) in hosts.items()})
    return hosts


