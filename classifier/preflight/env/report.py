"""What every env check writes into: a Report of Checks, and the helpers the sections share."""

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field

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


def int_var(env: dict, name: str) -> int | None:
    """The integer value of an environment variable, or None when unset or not a number."""
    try:
        return int(env[name])
    except (KeyError, ValueError):
        return None
