"""`dsdiag env`: a ds_report for failures, in the chapter's order - install, environment, launch.

install      torch and torch.version.cuda, nvcc, the driver (nvidia-smi), NCCL, DeepSpeed and
             its ops; versions that do not fit together are flagged
environment  MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE / LOCAL_RANK, CUDA_VISIBLE_DEVICES
             against the GPUs present, NCCL_SOCKET_IFNAME against the interfaces, NCCL_IB_* against
             the InfiniBand devices
launch       the master port is free and bindable, the master address resolves, the hostfile
             parses and its slots exist

Runs anywhere, GPU or not: what it cannot check here it reports as "skipped", with the reason.
Exit 0 no problems, 1 problems, 2 usage error or unreadable hostfile. Every external command and
name lookup is bounded in time. The install section imports torch and deepspeed (lazily).
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass, field

from classifier.preflight import EXIT_CLEAN, EXIT_ERROR, EXIT_PROBLEMS
from classifier.taxonomy import layer_of

SECTIONS = ("install", "environment", "launch")
DEFAULT_PORT = 29500  # deepspeed/constants.py TORCH_DISTRIBUTED_DEFAULT_PORT; torchrun's too
DEFAULT_HOSTFILE = "/job/hostfile"  # deepspeed/launcher/runner.py DLTS_HOSTFILE
DIST_VARS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")


@dataclass
class Check:
    section: str
    name: str
    status: str  # ok | error | warning | skipped | info
    summary: str
    category: str | None = None
    fix: str = ""
    facts: dict = field(default_factory=dict)

    @property
    def is_problem(self):
        return self.status in ("error", "warning")


class Report:
    def __init__(self, timeout=10.0):
        self.checks = []
        self.timeout = timeout
        self.gpus = None  # GPUs nvidia-smi lists: [{index, uuid, name, memory}], None if unknown
        self.torch_gpus = None  # torch.cuda.device_count(), None if unknown

    def add(self, section, name, status, summary, category=None, fix="", **facts):
        self.checks.append(Check(section, name, status, summary, category, fix, facts))


def run_command(argv, timeout):
    """(returncode, output) of a command, or None when it is not installed or hangs."""
    if shutil.which(argv[0]) is None and not os.path.isfile(argv[0]):
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.returncode, proc.stdout + proc.stderr


def major_minor(version):
    match = re.match(r"(\d+)\.(\d+)", str(version or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


# --- environment ------------------------------------------------------------------------------
def check_environment(report, env):
    _check_dist_vars(report, env)
    _check_visible_devices(report, env)
    _check_socket_ifname(report, env)
    _check_infiniband(report, env)


def _int_var(env, name):
    try:
        return int(env[name])
    except (KeyError, ValueError):
        return None


def _check_dist_vars(report, env):
    present = [v for v in DIST_VARS if env.get(v) not in (None, "")]
    if not present:
        report.add("environment", "distributed vars", "info",
                   "MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK are not set: normal "
                   "outside a launched job (the deepspeed launcher and torchrun set them per "
                   "process); call `dsdiag env` first thing in the training script to check them "
                   "there")
        return
    missing = [v for v in DIST_VARS if v not in present]
    if missing:
        report.add("environment", "distributed vars", "error",
                   f"{', '.join(present)} set but {', '.join(missing)} not: torch.distributed's "
                   "env:// rendezvous stops with 'environment variable ... expected, but not set' "
                   "(a variable set in the shell but not exported does not reach the workers)",
                   "env_var_missing", f"export {' '.join(m + '=...' for m in missing)} in the "
                   "launch script, or start through the deepspeed/torchrun launcher",
                   missing=missing)
    problems = []
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT", "LOCAL_WORLD_SIZE"):
        if name in env and env[name] != "" and _int_var(env, name) is None:
            problems.append(f"{name}={env[name]!r} is not an integer")
    rank, world, local = (_int_var(env, n) for n in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    local_world = _int_var(env, "LOCAL_WORLD_SIZE")
    port = _int_var(env, "MASTER_PORT")
    if world is not None and world < 1:
        problems.append(f"WORLD_SIZE={world} must be at least 1")
    if rank is not None and world is not None and not 0 <= rank < world:
        problems.append(f"RANK={rank} is outside 0..WORLD_SIZE-1 ({world - 1})")
    if local is not None and local_world is not None and not 0 <= local < local_world:
        problems.append(f"LOCAL_RANK={local} is outside 0..LOCAL_WORLD_SIZE-1")
    if local is not None and rank is not None and local > rank:
        problems.append(f"LOCAL_RANK={local} is larger than RANK={rank}")
    if port is not None and not 0 < port < 65536:
        problems.append(f"MASTER_PORT={port} is not a TCP port (1-65535)")
    gpus = report.torch_gpus if report.torch_gpus else (len(report.gpus) if report.gpus else None)
    if local is not None and gpus and local >= gpus:
        report.add("environment", "LOCAL_RANK", "error",
                   f"LOCAL_RANK={local} but this process sees {gpus} GPU(s): "
                   "torch.cuda.set_device(local_rank) fails with 'invalid device ordinal'",
                   "device_visibility", "launch at most as many processes per node as GPUs "
                   "(--num_gpus / --nproc_per_node), and check CUDA_VISIBLE_DEVICES")
    if problems:
        report.add("environment", "distributed vars", "error", "; ".join(problems),
                   "env_var_missing", "fix the values the launcher or launch script exports")
    elif not missing:
        report.add("environment", "distributed vars", "ok",
                   " ".join(f"{v}={env[v]}" for v in DIST_VARS))


def _check_visible_devices(report, env):
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        report.add("environment", "CUDA_VISIBLE_DEVICES", "info",
                   "not set: every GPU of the node is visible")
        return
    entries = [e.strip() for e in value.split(",") if e.strip() != ""]
    if not entries or entries[0] in ("-1", "NoDevFiles"):
        present = len(report.gpus) if report.gpus else 0
        status = "warning" if present else "info"
        report.add("environment", "CUDA_VISIBLE_DEVICES", status,
                   f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU" +
                   (f" ({present} present): torch.cuda.is_available() is False and DeepSpeed "
                    "falls back to the cpu accelerator" if present else ""),
                   "device_visibility" if present else None,
                   "unset it, or list the GPUs this job should use (e.g. 0,1,2,3)" if present else "")
        return
    if report.gpus is None:
        bad = [e for e in entries if not (e.isdigit() or e.startswith(("GPU-", "MIG-")))]
        report.add("environment", "CUDA_VISIBLE_DEVICES", "error" if bad else "skipped",
                   f"{value!r}: " + (f"{', '.join(bad)} is neither an index nor a GPU-/MIG- UUID"
                                     if bad else "no nvidia-smi here, so the entries were not "
                                     "compared with the GPUs present"),
                   "device_visibility" if bad else None, "list indices or UUIDs" if bad else "")
        return
    indices = {str(g["index"]) for g in report.gpus}
    uuids = {g["uuid"] for g in report.gpus}
    valid, invalid = [], None
    for entry in entries:  # CUDA stops at the first invalid entry and ignores the rest
        if entry in indices or any(u.startswith(entry) for u in uuids if entry.startswith("GPU-")):
            valid.append(entry)
        else:
            invalid = entry
            break
    dups = sorted({e for e in entries if entries.count(e) > 1})
    if invalid is not None:
        dropped = entries[entries.index(invalid):]
        report.add("environment", "CUDA_VISIBLE_DEVICES", "error",
                   f"CUDA_VISIBLE_DEVICES={value!r}: {invalid} is not a GPU of this node "
                   f"(GPUs {', '.join(sorted(indices, key=int))}); CUDA stops at the first invalid "
                   f"entry, so {', '.join(dropped)} are dropped and only {len(valid)} GPU(s) are "
                   "visible", "device_visibility",
                   f"list only existing GPUs (0..{len(report.gpus) - 1})", visible=valid)
    elif dups:
        report.add("environment", "CUDA_VISIBLE_DEVICES", "error",
                   f"CUDA_VISIBLE_DEVICES={value!r} lists {', '.join(dups)} twice: CUDA rejects "
                   "duplicate devices", "device_visibility", "list each GPU once")
    else:
        report.add("environment", "CUDA_VISIBLE_DEVICES", "ok",
                   f"{value!r}: {len(valid)} of {len(report.gpus)} GPU(s) visible")
    if report.torch_gpus is not None and invalid is None and not dups and \
            report.torch_gpus != len(valid):
        report.add("environment", "CUDA_VISIBLE_DEVICES vs torch", "warning",
                   f"{len(valid)} GPU(s) listed but torch sees {report.torch_gpus}",
                   "device_visibility", "check that the variable is set before torch starts CUDA")


def interface_names():
    try:
        return sorted(name for _, name in socket.if_nameindex())
    except OSError:
        return []


def match_ifname(spec, names):
    """NCCL_SOCKET_IFNAME semantics: comma list of prefixes; '=' exact names; '^' excludes.
    Returns (interfaces NCCL may use, list entries that match nothing)."""
    exclude = spec.startswith("^")
    body = spec[1:] if exclude else spec
    exact = body.startswith("=")
    body = body[1:] if exact else body
    entries = [e.strip() for e in body.split(",") if e.strip()]

    def hit(entry, name):
        return name == entry if exact else name.startswith(entry)
    unmatched = [e for e in entries if not any(hit(e, n) for n in names)]
    if exclude:
        usable = [n for n in names if not any(hit(e, n) for e in entries)]
    else:
        usable = [n for n in names if any(hit(e, n) for e in entries)]
    return usable, unmatched


def _check_socket_ifname(report, env):
    names = interface_names()
    spec = env.get("NCCL_SOCKET_IFNAME")
    if not spec:
        report.add("environment", "NCCL_SOCKET_IFNAME", "info",
                   f"not set: NCCL picks an interface itself (not lo or docker*); interfaces here: "
                   f"{', '.join(names) or 'unknown'}. Set it when nodes have several NICs",
                   interfaces=names)
        return
    usable, unmatched = match_ifname(spec, names)
    if not usable:
        report.add("environment", "NCCL_SOCKET_IFNAME", "error",
                   f"NCCL_SOCKET_IFNAME={spec!r} leaves no interface to use (interfaces here: "
                   f"{', '.join(names)}): NCCL fails at init ('no socket interface found' / "
                   "'Bootstrap : no socket interface found')", "nccl_network",
                   "name an interface that exists on every node (ip -br addr)",
                   interfaces=names)
    elif unmatched and not spec.startswith("^"):
        report.add("environment", "NCCL_SOCKET_IFNAME", "warning",
                   f"NCCL_SOCKET_IFNAME={spec!r}: {', '.join(unmatched)} matches no interface "
                   f"here; NCCL uses {', '.join(usable)}", "nccl_network",
                   "check the interface names on every node", interfaces=names)
    else:
        report.add("environment", "NCCL_SOCKET_IFNAME", "ok",
                   f"{spec!r} -> NCCL may use {', '.join(usable)}", interfaces=usable)


def infiniband_devices(root="/sys/class/infiniband"):
    try:
        return sorted(os.listdir(root))
    except OSError:
        return []


def _check_infiniband(report, env):
    devices = infiniband_devices(env.get("DSDIAG_IB_ROOT", "/sys/class/infiniband"))
    disable = env.get("NCCL_IB_DISABLE")
    disabled = disable not in (None, "", "0")
    if devices and disabled:
        report.add("environment", "NCCL_IB_DISABLE", "warning",
                   f"NCCL_IB_DISABLE={disable} but InfiniBand devices are present "
                   f"({', '.join(devices)}): NCCL falls back to TCP sockets, far slower across nodes",
                   "nccl_network", "unset NCCL_IB_DISABLE (or set it to 0) unless IB is known broken")
    elif devices:
        report.add("environment", "NCCL_IB_DISABLE", "ok",
                   f"InfiniBand devices {', '.join(devices)}; NCCL_IB_DISABLE "
                   f"{'unset' if disable is None else '=' + disable}: NCCL may use them")
    else:
        report.add("environment", "NCCL_IB_DISABLE", "info",
                   "no InfiniBand devices (/sys/class/infiniband is empty or absent): NCCL uses "
                   "TCP sockets" + (" whatever NCCL_IB_DISABLE says" if disable else "") +
                   "; set NCCL_SOCKET_IFNAME to the right NIC on multi-node jobs")
    hca = env.get("NCCL_IB_HCA")
    if hca and devices:
        names = [e.split(":")[0].lstrip("^=") for e in hca.lstrip("^=").split(",") if e]
        missing = [n for n in names if not any(d.startswith(n) for d in devices)]
        if missing and not hca.startswith("^"):
            report.add("environment", "NCCL_IB_HCA", "error",
                       f"NCCL_IB_HCA={hca!r}: {', '.join(missing)} is not an InfiniBand device "
                       f"here ({', '.join(devices)})", "nccl_network",
                       "name devices from `ibv_devices` / /sys/class/infiniband")


# --- command line -----------------------------------------------------------------------------
def collect(sections, env=None, args=None, timeout=10.0):
    """Run the chosen sections in the chapter's order; return the Report."""
    env = dict(os.environ if env is None else env)
    args = args or argparse.Namespace(hostfile=None, master_addr=None, master_port=None)
    report = Report(timeout)
    if "install" in sections:
        from classifier.env_install import check_install
        check_install(report)
    elif "environment" in sections or "launch" in sections:
        _gpus_without_torch(report)
    if "environment" in sections:
        check_environment(report, env)
    if "launch" in sections:
        from classifier.env_launch import check_launch
        check_launch(report, env, args)
    return report


def _gpus_without_torch(report):
    """GPU list for the environment/launch sections when install (and torch) is skipped."""
    query = run_command(["nvidia-smi", "--query-gpu=index,uuid,name,memory.total,driver_version",
                         "--format=csv,noheader"], report.timeout)
    if query is not None and query[0] == 0:
        from classifier.env_install import parse_nvidia_smi
        report.gpus = parse_nvidia_smi(query[1], "")[0]


def _parser():
    p = argparse.ArgumentParser(
        prog="dsdiag env",
        description="Check the install, the environment and the launch settings of a "
                    "DeepSpeed job, in that order (a ds_report for failures).",
        epilog="Exit codes: 0 no problems, 1 problems found, 2 usage error or unreadable "
               "hostfile.")
    p.add_argument("--section", action="append", choices=SECTIONS + ("env",),
                   help="run only this section (repeatable; default all)")
    p.add_argument("--hostfile", metavar="PATH",
                   help=f"DeepSpeed hostfile to check (default {DEFAULT_HOSTFILE} if present)")
    p.add_argument("--master-addr", metavar="ADDR", help="master address (default MASTER_ADDR)")
    p.add_argument("--master-port", metavar="PORT",
                   help=f"master port (default MASTER_PORT, else {DEFAULT_PORT})")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="limit for each external command (nvcc, nvidia-smi), default 10 s")
    p.add_argument("-f", "--format", choices=("text", "json"), default="text")
    return p


def render_text(report, out):
    current = None
    for check in report.checks:
        if check.section != current:
            current = check.section
            out.write(f"== {current}\n")
        label = check.status.upper() if check.is_problem else check.status
        category = f"{check.category}: " if check.category and check.is_problem else ""
        out.write(f"  {label:<8} {check.name:<22} {category}{check.summary}\n")
        if check.fix and check.is_problem:
            out.write(f"  {'':<8} {'':<22} fix: {check.fix}\n")
    out.write(_summary(report) + "\n")


def _summary(report):
    errors = sum(c.status == "error" for c in report.checks)
    warnings = sum(c.status == "warning" for c in report.checks)
    skipped = sum(c.status == "skipped" for c in report.checks)
    head = "no problems" if not errors + warnings else \
        f"{errors + warnings} problem(s) ({errors} error(s), {warnings} warning(s))"
    return head + (f"; {skipped} check(s) could not run here (skipped)" if skipped else "")


def render_json(report, out):
    checks = []
    for check in report.checks:
        item = asdict(check)
        item["layer"] = layer_of(check.category) if check.category else None
        checks.append(item)
    doc = {"schema_version": 1, "sections": [s for s in SECTIONS
                                             if any(c.section == s for c in report.checks)],
           "checks": checks, "problems": sum(c.is_problem for c in report.checks),
           "skipped": [f"{c.section}/{c.name}: {c.summary}" for c in report.checks
                       if c.status == "skipped"],
           "summary": _summary(report)}
    json.dump(doc, out, indent=2, default=str)
    out.write("\n")


def main(argv):
    args = _parser().parse_args(argv)
    sections = [("environment" if s == "env" else s) for s in (args.section or SECTIONS)]
    if args.hostfile and not os.path.isfile(args.hostfile):
        sys.stderr.write(f"dsdiag env: error: cannot read hostfile {args.hostfile}\n")
        return EXIT_ERROR
    try:
        report = collect(sections, args=args, timeout=args.timeout)
    except OSError as exc:
        sys.stderr.write(f"dsdiag env: error: {exc}\n")
        return EXIT_ERROR
    (render_json if args.format == "json" else render_text)(report, sys.stdout)
    sys.stdout.flush()
    return EXIT_PROBLEMS if any(c.is_problem for c in report.checks) else EXIT_CLEAN
