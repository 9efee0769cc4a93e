"""`dsdiag slurm-annotate`: diagnose a Slurm job from its epilog and leave the verdict on it.

Two places in slurm.conf run it (docs/integrations.md has the lines):

* `TaskEpilog` runs as the job's user right after the batch script exits, while the job is
  still RUNNING: `scontrol update JobId=N Comment=...` works there, so the verdict shows in
  `squeue -o %k`, `scontrol show job` and sacct's Comment.
* `Epilog` (slurmd, as root, on each node) and `EpilogSlurmctld` (the controller) run after
  the job has finished, when scontrol refuses updates ("Job has already finished"): there a
  sidecar `<StdOut>.dsdiag.json` is written next to the job's output.

Facts about that environment this module is built on (observed with Slurm 22.05):
* Epilogs get no PATH: scontrol is looked up in the usual install directories.
* `SLURM_JOB_STDOUT` keeps the `%j`-style pattern unexpanded; `scontrol show job` gives the
  expanded `StdOut=`, so it is asked first and the pattern expanded here only as a fallback.
* A TaskEpilog runs after every task of every step; only the batch step's run annotates.
* An Epilog that fails drains the node: this command always exits 0, within a time budget
  (`--budget`, default 20 s), whatever happens; what it did goes to stderr (slurmd's log) -
  except in a TaskEpilog, whose stdout and stderr are the job's own output file: there it is
  silent unless `--verbose`, so the user's log stays exactly what the job wrote.
* As root (Epilog), logs are read and the sidecar written with the job user's rights, so a
  job cannot make root read or overwrite files the user could not.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from classifier.sanitize import strip_controls
from classifier.diagnosis.culprit import culprit_line

SCONTROL_DIRS = ("/usr/bin", "/usr/local/bin", "/opt/slurm/bin", "/usr/sbin", "/usr/local/sbin",
                 "/bin", "/sbin")
DEFAULT_BUDGET = 20.0
COMMENT_MAX = 400
SIDECAR_SUFFIX = ".dsdiag.json"
BATCH_STEP_IDS = ("", "batch", "4294967294")
RUNNING_STATES = ("RUNNING", "SUSPENDED")  # scontrol still accepts a Comment update
FINISHED_CONTEXTS = ("epilog_slurmd", "epilog_slurmctld")  # job done: scontrol refuses updates
# Values that run to the end of their line in `scontrol show job` (they may hold spaces).
_WHOLE_LINE_KEYS = ("Comment", "AdminComment", "SystemComment", "Command", "WorkDir", "StdErr",
                    "StdIn", "StdOut", "Reason")
_TOKEN = re.compile(r"(?:^|\s)([A-Za-z][\w/:]*)=(\S*)")
_PATTERN = re.compile(r"%(\d*)([%AajJNnstux])")


class _OutOfTime(Exception):
    pass


def _log(message, quiet=False):
    if not quiet:
        sys.stderr.write(f"dsdiag slurm-annotate: {message}\n")
        sys.stderr.flush()


def find_scontrol(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """Absolute path of scontrol: explicit, DSDIAG_SCONTROL, PATH, then the usual dirs."""
    env = os.environ if env is None else env
    import shutil
    for candidate in (explicit, env.get("DSDIAG_SCONTROL")):
        if candidate:
            return candidate
    dirs = [d for d in env.get("PATH", "").split(os.pathsep) if d] + list(SCONTROL_DIRS)
    return shutil.which("scontrol", path=os.pathsep.join(dirs))


def parse_show_job(text: str) -> dict[str, str]:
    """Parse `scontrol show job` (one job, multi-line) into {Key: value}."""
    info = {}
    for line in text.splitlines():
        stripped = line.strip()
        key = stripped.split("=", 1)[0]
        if key in _WHOLE_LINE_KEYS and "=" in stripped:
            info[key] = stripped.split("=", 1)[1].rstrip()
            continue
        for m in _TOKEN.finditer(line):
            info.setdefault(m.group(1), m.group(2))
    return info


def _run(argv, timeout):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def show_job(scontrol: str, job_id: str | int, timeout: float) -> dict[str, str]:
    """Return the parsed `scontrol show job ID`, or raise RuntimeError with scontrol's words."""
    proc = _run([scontrol, "show", "job", str(job_id)], timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"scontrol show job {job_id}: {(proc.stderr or proc.stdout).strip()}")
    return parse_show_job(proc.stdout)


def expand_pattern(pattern: str, env: Mapping[str, str], info: Mapping[str, str] | None = None) -> str:
    """Expand sbatch's filename pattern (`%j`, `%A_%a`, `%x`...) the way slurmstepd does."""
    info = info or {}
    job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or info.get("JobId", "")
    values = {
        "%": "%", "j": job_id, "J": job_id,
        "A": env.get("SLURM_ARRAY_JOB_ID") or info.get("ArrayJobId") or job_id,
        "a": env.get("SLURM_ARRAY_TASK_ID") or info.get("ArrayTaskId") or "4294967294",
        "x": env.get("SLURM_JOB_NAME") or info.get("JobName", ""),
        "u": env.get("SLURM_JOB_USER", ""),
        "N": (env.get("SLURM_JOB_NODELIST") or info.get("BatchHost") or "").split(",")[0],
        "n": "0", "s": "batch", "t": "0",
    }

    def sub(m):
        width, letter = m.groups()
        value = values[letter]
        if letter == "%":
            return "%"
        if width and value.isdigit():
            return value.zfill(int(width))
        return value

    path = _PATTERN.sub(sub, pattern)
    workdir = env.get("SLURM_JOB_WORK_DIR") or env.get("SLURM_SUBMIT_DIR") or info.get("WorkDir")
    if not os.path.isabs(path) and workdir:
        path = os.path.join(workdir, path)
    return path


def log_paths(info: Mapping[str, str], env: Mapping[str, str]) -> list[str]:
    """The job's output files to diagnose: scontrol's StdOut/StdErr, else the env pattern."""
    paths = [info.get("StdOut"), info.get("StdErr")]
    if not any(paths):
        pattern = env.get("SLURM_JOB_STDOUT") or "slurm-%j.out"
        if env.get("SLURM_ARRAY_TASK_ID") and not env.get("SLURM_JOB_STDOUT"):
            pattern = "slurm-%A_%a.out"
        paths = [expand_pattern(pattern, env, info)]
    out = []
    for path in paths:
        if path and path not in out and os.path.isfile(path):
            out.append(path)
    return out


def comment_text(d: dict[str, Any], existing: str | None = "") -> str:
    """One line for the job's Comment, appended to a comment the user set with --comment."""
    verdict = {True: "retryable", False: "fix first"}.get(d.get("retryable"), "no verdict")
    layer = f" [{d['layer']}]" if d.get("layer") else ""
    text = f"dsdiag: {d['category']}{layer} {verdict}: {d.get('title', '')}"
    if d.get("evidence"):
        ev = d["evidence"][0]
        rank = f" rank {ev['rank']}" if ev.get("rank") is not None else ""
        text += f" ({os.path.basename(str(ev['file']))}:{ev['line']}{rank})"
    culprit = culprit_line(d.get("culprit"))
    if culprit:  # the node to drain; before the cut at COMMENT_MAX would reach it
        text += f"; culprit {culprit}"
    # One argv word for scontrol, one line in squeue: no line breaks, no escape sequences.
    text = " ".join(strip_controls(text).split())
    if len(text) > COMMENT_MAX:
        text = text[: COMMENT_MAX - 1] + "…"
    kept = " ".join(strip_controls((existing or "").split(" | dsdiag: ")[0]).split())
    if kept.startswith("dsdiag: ") or kept == "(null)":
        kept = ""
    return f"{kept} | {text}" if kept else text


def update_comment(scontrol: str, job_id: str | int, text: str, timeout: float) -> None:
    """Set the job's Comment; raise RuntimeError with scontrol's words when it refuses."""
    proc = _run([scontrol, "update", f"JobId={job_id}", f"Comment={text}"], timeout)
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr or proc.stdout).strip() or f"exit {proc.returncode}")


def sidecar_path(stdout_path: str) -> str:
    """Return the path of the sidecar JSON written next to a job's output file."""
    return stdout_path + SIDECAR_SUFFIX


def write_sidecar(path: str, d: dict[str, Any]) -> None:
    """Write the diagnosis JSON atomically (temp file + rename; a symlink there is replaced)."""
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(d, fh, ensure_ascii=False, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextmanager
def as_job_user(env: Mapping[str, str]) -> Iterator[None]:
    """As root, act with the job user's uid/gid (effective ids only); else do nothing."""
    uid, gid = env.get("SLURM_JOB_UID", ""), env.get("SLURM_JOB_GID", "")
    if os.geteuid() != 0 or not uid.isdigit() or int(uid) == 0:
        yield
        return
    uid = int(uid)
    gid = int(gid) if gid.isdigit() else uid
    groups = os.getgroups()
    os.setgroups([gid])
    os.setegid(gid)
    os.seteuid(uid)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(groups)


def _parser():
    p = argparse.ArgumentParser(
        prog="dsdiag slurm-annotate",
        description="Diagnose the current Slurm job from a TaskEpilog / Epilog / EpilogSlurmctld "
                    "and put the verdict in its Comment (job still running) or in a sidecar "
                    "<StdOut>.dsdiag.json (job finished). Always exits 0.")
    p.add_argument("--job-id", help="job to annotate (default $SLURM_JOB_ID)")
    p.add_argument("--mode", choices=("auto", "comment", "sidecar", "both"), default="auto",
                   help="auto: Comment while the job runs, else (or if scontrol refuses) sidecar")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET, metavar="SECONDS",
                   help=f"give up after this long, still exiting 0 (default {DEFAULT_BUDGET:g})")
    p.add_argument("--scontrol", help="path of scontrol (default: $DSDIAG_SCONTROL, PATH, /usr/bin...)")
    p.add_argument("--log", action="append", default=[], metavar="FILE",
                   help="diagnose these files instead of the job's StdOut/StdErr")
    p.add_argument("--always", action="store_true",
                   help="annotate healthy jobs too (default: only when a failure is found)")
    p.add_argument("--every-step", action="store_true",
                   help="in a TaskEpilog, act after every step's task, not only the batch step")
    p.add_argument("--rules-dir", action="append", default=[], metavar="DIR")
    p.add_argument("--no-redact", action="store_true",
                   help="leave secrets in the annotation (Comments are visible to other users)")
    p.add_argument("-q", "--quiet", action="store_true", help="say nothing on stderr")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="report on stderr even in a TaskEpilog (where stderr is the job's log)")
    return p


def annotate(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    """Do the work; return a one-line summary. Raises on problems (main turns them into 0)."""
    job_id = args.job_id or env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job_id:
        return "no job: run from a Slurm epilog or pass --job-id"
    context = env.get("SLURM_SCRIPT_CONTEXT", "")
    step = env.get("SLURM_STEP_ID", env.get("SLURM_STEPID", ""))
    if context == "epilog_task" and step not in BATCH_STEP_IDS and not args.every_step:
        return f"job {job_id}: step {step} is not the batch step; nothing to do"
    deadline = time.monotonic() + args.budget

    def remaining():  # seconds left for one scontrol call (the SIGALRM budget is the hard stop)
        return max(1.0, deadline - time.monotonic())

    scontrol = find_scontrol(args.scontrol, env)
    info, problem = {}, None
    if scontrol:
        try:
            info = show_job(scontrol, job_id, remaining())
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            problem = str(exc)
    else:
        problem = "scontrol not found"
    node, batch_host = env.get("SLURMD_NODENAME"), info.get("BatchHost")
    if context == "epilog_slurmd" and node and batch_host and node != batch_host:
        return f"job {job_id}: not the batch host ({batch_host}); nothing to do"

    from classifier.diagnosis import fallback  # noqa: F401 - imported (like all below) before dropping to the job user
    from classifier.diagnosis.diagnose import diagnose_job
    from classifier.redact import load_patterns
    from classifier.rules.load import default_rules, env_rules_dirs, load_rules
    extra = env_rules_dirs() + args.rules_dir
    rules = load_rules(extra) if extra else default_rules()
    load_patterns()
    # The prefilter's finder (Hyperscan, its cached database) and its scanner threads, made
    # or imported while the package and the cache are still readable.
    import queue  # noqa: F401 - the prefilter's scanner threads use it
    # A cache built lazily while diagnosing writes through tempfile; as the job user the
    # interpreter's own stdlib may be unreadable (a pyenv Python under a 0700 /root).
    import tempfile  # noqa: F401
    # A run from the rule cache loads only regex's C engine; a rule the cache lacks (a user's
    # --rules-dir, a changed file) imports the package while diagnosing: import it here.
    import regex  # noqa: F401
    # (cutend: a paste cut mid-line; escaped: a log printed as one escaped string)
    from classifier.diagnosis import cutend, escaped, prefilter  # noqa: F401
    rules.finder()
    rules.keyword_index().prepare()  # its Hyperscan database too
    with as_job_user(env):
        paths = [p for p in args.log if os.path.isfile(p)] if args.log else log_paths(info, env)
        if not paths:
            why = f" ({problem})" if problem else ""
            return f"job {job_id}: no readable output file{why}; nothing to do"
        result = diagnose_job(paths, rules, redact=not args.no_redact)
    if result["category"] == "none" and not args.always:
        return f"job {job_id}: no failure found in {paths[0]}"

    done = []
    running = context not in FINISHED_CONTEXTS and (
        context == "epilog_task" or info.get("JobState", "") in RUNNING_STATES)
    want_comment = args.mode in ("comment", "both") or (args.mode == "auto" and running)
    want_sidecar = args.mode in ("sidecar", "both") or (args.mode == "auto" and not running)
    if want_comment:
        try:
            if not scontrol:
                raise RuntimeError(problem)
            update_comment(scontrol, job_id, comment_text(result, info.get("Comment", "")),
                           remaining())
            done.append("Comment")
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            _log(f"job {job_id}: scontrol refused the Comment ({exc}); writing the sidecar",
                 args.quiet)
            want_sidecar = True
    if want_sidecar:
        target = sidecar_path(paths[0])
        with as_job_user(env):
            write_sidecar(target, result)
        done.append(target)
    return f"job {job_id}: {result['category']} -> {', '.join(done)}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of `dsdiag slurm-annotate`: always returns 0 (a failing Epilog drains the node)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit:  # --help, or a typo in the epilog wrapper: still exit 0
        return 0
    env = dict(os.environ)
    if env.get("SLURM_SCRIPT_CONTEXT") == "epilog_task" and not args.verbose:
        args.quiet = True  # a TaskEpilog's stderr is appended to the job's output file

    def out_of_time(signum, frame):
        raise _OutOfTime()

    previous = signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, max(0.1, args.budget))
    try:
        _log(annotate(args, env), args.quiet)
    except _OutOfTime:
        _log(f"gave up after the {args.budget:g} s budget", args.quiet)
    except BaseException as exc:  # noqa: BLE001 - an epilog must never fail
        if isinstance(exc, KeyboardInterrupt):
            _log("interrupted", args.quiet)
        else:
            _log(f"error: {type(exc).__name__}: {exc}", args.quiet)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return 0
