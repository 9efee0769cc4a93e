"""What every env check writes into: a Report of Checks, and the helpers the sections share."""

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

SECTIONS = ("install", "environment", "launch")
DEFAULT_PORT = 29500  # deepspeed/constants.py TORCH_DISTRIBUTED_DEFAULT_PORT; torchrun's too
DEFAULT_HOSTFILE = "/job/hostfile"  # deepspeed/launcher/runner.py DLTS_HOSTFILE
DIST_VARS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")


@dataclass(slots=True)
class Check:
    section: str
    name: str
    status: str  # ok | error | warning | skipped | info
    summary: str
    category: str | None = None
    fix: str = ""
    facts: dict[str, object] = field(default_factory=dict)

    @property
    def is_problem(self) -> bool:
        """Whether the status is error or warning (ok, skipped and info are not problems)."""
        return self.status in ("error", "warning")


@dataclass(slots=True, eq=False)
class Report:
    timeout: float = 10.0
    checks: list[Check] = field(init=False, default_factory=list)
    # GPUs nvidia-smi lists: [{index, uuid, name, memory}], None if unknown
    gpus: list[dict[str, int | str]] | None = field(init=False, default=None)
    # torch.cuda.device_count(), None if unknown
    torch_gpus: int | None = field(init=False, default=None)

    def add(self, section: str, name: str, status: str, summary: str, category: str | None = None,
            fix: str = "", **facts: object) -> None:
        """Append a Check to the report."""
        self.checks.append(Check(section, name, status, summary, category, fix, facts))


def run_command(argv: Sequence[str], timeout: float) -> tuple[int, str] | None:
    """(returncode, output) of a command, or None when it is not installed or hangs."""
    if shutil.which(argv[0]) is None and not os.path.isfile(argv[0]):
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.returncode, proc.stdout + proc.stderr


def major_minor(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of a version string such as '12.1' or '2.3.0+cu121', or None."""
    match = re.match(r"(\d+)\.(\d+)", str(version or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def int_var(env: dict, name: str) -> int | None:
    """The integer value of an environment variable, or None when unset or not a number."""
    try:
        return int(env[name])
    except (KeyError, ValueError):
        return None
