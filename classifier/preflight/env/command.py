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
import sys
from collections.abc import Collection, Mapping
from dataclasses import asdict
from typing import TextIO

from classifier.preflight.env.environment import check_environment
from classifier.preflight.env.report import DEFAULT_HOSTFILE, DEFAULT_PORT, SECTIONS, Report, run_command
from classifier.preflight.finding import EXIT_CLEAN, EXIT_ERROR, EXIT_PROBLEMS
from classifier.taxonomy import layer_of


def collect(sections: Collection[str], env: Mapping[str, str] | None = None,
            args: argparse.Namespace | None = None, timeout: float = 10.0) -> Report:
    """Run the chosen sections in the chapter's order; return the Report."""
    env = dict(os.environ if env is None else env)
    args = args or argparse.Namespace(hostfile=None, master_addr=None, master_port=None)
    report = Report(timeout)
    if "install" in sections:
        from classifier.preflight.env.install import check_install
        check_install(report)
    elif "environment" in sections or "launch" in sections:
        _gpus_without_torch(report)
    if "environment" in sections:
        check_environment(report, env)
    if "launch" in sections:
        from classifier.preflight.env.launch import check_launch
        check_launch(report, env, args)
    return report


def _gpus_without_torch(report):
    """GPU list for the environment/launch sections when install (and torch) is skipped."""
    query = run_command(["nvidia-smi", "--query-gpu=index,uuid,name,memory.total,driver_version",
                         "--format=csv,noheader"], report.timeout)
    if query is not None and query[0] == 0:
        from classifier.preflight.env.install import parse_nvidia_smi
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


def render_text(report: Report, out: TextIO) -> None:
    """Write the report as text, section by section, with a summary line."""
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


def render_json(report: Report, out: TextIO) -> None:
    """Write the report as one JSON document (schema_version 1)."""
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


def main(argv: list[str]) -> int:
    """`dsdiag env`: run the sections, print the report; return the exit code."""
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
