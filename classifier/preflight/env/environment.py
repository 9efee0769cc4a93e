"""The environment section of `dsdiag env`: distributed variables, visible devices, the NCCL
socket interface and InfiniBand devices, checked against what this machine has."""

import os
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

from classifier.preflight.env.report import DIST_VARS, int_var

if TYPE_CHECKING:
    from classifier.preflight.env.report import Report


def check_environment(report: "Report", env: dict[str, str]) -> None:
    """Run the environment section's checks into the report."""
    _check_dist_vars(report, env)
    _check_visible_devices(report, env)
    _check_socket_ifname(report, env)
    _check_infiniband(report, env)


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
        if name in env and env[name] != "" and int_var(env, name) is None:
            problems.append(f"{name}={env[name]!r} is not an integer")
    rank, world, local = (int_var(env, n) for n in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    local_world = int_var(env, "LOCAL_WORLD_SIZE")
    port = int_var(env, "MASTER_PORT")
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


def interface_names() -> list[str]:
    """This host's network interface names, sorted ([] when they cannot be listed)."""
    try:
        return sorted(name for _, name in socket.if_nameindex())
    except OSError:
        return []


def match_ifname(spec: str, names: Sequence[str]) -> tuple[list[str], list[str]]:
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


def infiniband_devices(root: str = "/sys/class/infiniband") -> list[str]:
    """The InfiniBand device names under root, sorted ([] when there are none)."""
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
