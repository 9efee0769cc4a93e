"""The default command, `dsdiag [FILE...]`: diagnose one job and report it.

Exit codes (the contract schedulers rely on):
  0   a failure category was diagnosed
  1   nothing diagnosed: the log looks healthy (`none`) or no rule explains it (`unknown`)
  2   usage error, unreadable input, or invalid rule files; a missing FILE among several is
      reported, the others are diagnosed and the exit code is still 2 (as grep does)
With --tee the pass-through answers for the job instead: 0 no failure found, 1 a failure found
(diagnosed or unknown), 2 dsdiag's own errors, so `set -o pipefail`, `&&` and Slurm's job
state see the training's outcome, not the diagnosis's.
With --k8s-termination-log the per-category codes of classifier.taxonomy apply instead (0 none,
1 unknown, 80-89 retryable, 100-119 fix first), for a podFailurePolicy.

The diagnosis is finished once, before any renderer sees it (classifier/sanitize.py): escape
sequences and control characters removed, and secrets masked (classifier/redaction.yaml) in
every channel, the terminal included, unless --no-redact.
"""

import os
import sys

from classifier.diagnosis.follow import IDLE
from classifier.render import FORMATS

EXIT_FOUND, EXIT_NOTHING, EXIT_ERROR = 0, 1, 2
EXIT_TEE_CLEAN, EXIT_TEE_FAILED = 0, 1
K8S_OPTION = "--k8s-termination-log"


def _error(message):
    from classifier.sanitize import escape_name
    # A message may name a file: its odd bytes and controls are shown, never sent to the terminal.
    sys.stderr.write(f"dsdiag: error: {escape_name(message)}\n")
    return EXIT_ERROR


def _help_formatter(argparse):
    """argparse's formatter, sized without `shutil`: argparse builds one for every argument
    it adds, and importing shutil (with bz2 and lzma) cost every run a few ms."""

    class HelpFormatter(argparse.HelpFormatter):
        def __init__(self, prog: str) -> None:
            try:
                width = int(os.environ.get("COLUMNS", "")) or os.get_terminal_size(1).columns
            except (ValueError, OSError):
                width = 80
            super().__init__(prog, width=max(width - 2, 11))
    return HelpFormatter


def _parser(subcommands=()):
    import argparse  # only for the command lines classifier/diagnosis/quickargs.py leaves
    usage = "dsdiag [OPTIONS] [FILE ...]"
    if subcommands:
        usage += "\n       dsdiag {" + ",".join(subcommands) + "} ... (each has its own --help)"
    p = argparse.ArgumentParser(
        prog="dsdiag", usage=usage, formatter_class=_help_formatter(argparse),
        description="Diagnose a crashed DeepSpeed / PyTorch-distributed job from its log.",
        epilog="Several files are read as the ranks of one job, and so are the log files of a "
               "directory (rank files, Slurm %t outputs, torchrun --log-dir); '-' or no file "
               "reads stdin. "
               "Exit codes: 0 diagnosed, 1 none/unknown, 2 usage or input error; with --tee "
               "0 no failure found, 1 a failure found, 2 error.")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="log files (plain, .gz, .bz2, .xz, .zst) or one job directory; a warning "
                        "when the names look like several jobs, a missing FILE reported and "
                        "the rest diagnosed (exit 2)")
    # No default here: argparse never checks a default against `choices`, so DSDIAG_FORMAT is
    # checked by _output_format, and a typo there is an error rather than silent text.
    p.add_argument("-f", "--format", choices=FORMATS, default=None,
                   help="output format (default text; env DSDIAG_FORMAT)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text output (auto: on a terminal, unless NO_COLOR is set)")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 whatever the diagnosis (for hooks); errors still exit 2")
    p.add_argument("--rules-dir", action="append", default=[], metavar="DIR",
                   help="extra rule directory; its rules add to the built-in categories (env DSDIAG_RULES_DIR)")
    p.add_argument("--tee", action="store_true",
                   help="pass stdin through to stdout byte for byte, then write the diagnosis "
                        "to stderr (or --report); exit 0 when no failure was found, 1 when one was")
    p.add_argument("--report", metavar="FILE",
                   help="write the diagnosis to FILE instead of stdout (stderr with --tee)")
    p.add_argument(K8S_OPTION, nargs="?", const="/dev/termination-log", metavar="PATH",
                   help="also write a compact verdict (<= 4096 bytes) for Kubernetes to PATH "
                        "(default /dev/termination-log) and exit with the per-category codes "
                        "for podFailurePolicy")
    p.add_argument("--max-ratio", metavar="N",
                   help="stop reading a compressed file once it inflates past N times its "
                        "compressed size, past the first 64 MiB (default 100; real logs compress "
                        "5-20x; env DSDIAG_MAX_RATIO); a warning says so, what was read is diagnosed")
    p.add_argument("--max-decompressed", metavar="SIZE",
                   help="stop reading a compressed file after SIZE decompressed bytes (e.g. 4G; "
                        "default 16G; env DSDIAG_MAX_DECOMPRESSED)")
    p.add_argument("--follow", action="store_true",
                   help="read the log files on as they grow (tail -f), then diagnose once none "
                        "has grown for --idle seconds, --pid has exited, or at Ctrl-C / SIGTERM; "
                        "without it a file still being written is read up to its size at open")
    p.add_argument("--idle", type=float, metavar="SECONDS",
                   help=f"with --follow: stop after this many seconds without growth "
                        f"(default {IDLE:g}, none with --pid; 0: never stop for quiet)")
    p.add_argument("--pid", type=int, metavar="PID",
                   help="with --follow: stop once process PID (the training's launcher) has exited, "
                        "as tail --pid does")
    p.add_argument("--no-redact", action="store_true",
                   help="do not mask tokens, keys and passwords in the report (any format)")
    p.add_argument("--version", action="store_true",
                   help="print the dsdiag version and the rule set's hash (with --rules-dir: "
                        "of the built-in and extra rules together), then exit")
    return p


def _load_rules(args):
    """The rule set, or None after printing every problem of invalid rule files."""
    from classifier.rules.load import RuleError, default_rules, env_rules_dirs, load_rules
    extra = env_rules_dirs() + args.rules_dir
    try:
        return load_rules(extra) if extra else default_rules()
    except RuleError as exc:
        for problem in exc.problems:
            sys.stderr.write(problem + "\n")
        return None


def _output_format(args):
    """Settle --format from DSDIAG_FORMAT when not given; one line naming a bad value, or None."""
    if args.format is not None:
        return None
    env = os.environ.get("DSDIAG_FORMAT", "").strip()
    if env and env not in FORMATS:
        return f"DSDIAG_FORMAT={env!r} is not an output format (choose from {', '.join(FORMATS)})"
    args.format = env or "text"
    return None


def _check_args(args, argv):
    """One line naming a usage problem, or None."""
    files = args.files or ["-"]
    if args.tee and args.files:
        return "--tee reads stdin only; give no log files"
    if "-" in files and sys.stdin is None:  # started with <&-: Python leaves sys.stdin None
        return "no input: stdin is closed; name log files (see --help)"
    if sys.stdout is None and not (args.report or args.tee):
        return "stdout is closed; nothing to write the report to (give --report FILE)"
    if files == ["-"] and sys.stdin.isatty():
        return "no input: pipe a log into dsdiag or name log files (see --help)"
    if files.count("-") > 1:
        return "'-' (stdin) can be given only once"
    from classifier.diagnosis.read import InputLimits
    try:
        args.limits = InputLimits.from_env(args.max_ratio, args.max_decompressed)
    except ValueError as exc:
        return f"--max-ratio / --max-decompressed (or DSDIAG_MAX_*): {exc}"
    problem = _check_follow(args)
    if problem:
        return problem
    if args.k8s_termination_log:
        from classifier.integrations.k8s import check_path
        # Only `--k8s-termination-log FILE` (space form) can have swallowed a log file name.
        spaced = K8S_OPTION in argv and argv.index(K8S_OPTION) + 1 < len(argv) and \
            argv[argv.index(K8S_OPTION) + 1] == args.k8s_termination_log
        return check_path(args.k8s_termination_log, spaced)
    return None


def _check_follow(args):
    """One line naming a misuse of --follow / --idle / --pid, or None."""
    if not args.follow:
        used = args.idle is not None or args.pid is not None
        return "--idle and --pid go with --follow" if used else None
    if args.tee or not args.files or "-" in args.files:
        return "--follow reads growing log files; a pipe (stdin, --tee) is read to its end anyway"
    if args.idle is not None and not 0 <= args.idle < float("inf"):
        return f"--idle {args.idle:g}: give a number of seconds >= 0"
    if args.pid is not None and args.pid <= 0:
        return f"--pid {args.pid}: not a process id"
    return None


def _follow(args, files):
    """The Follow of --follow for these files (classifier/diagnosis/follow.py)."""
    from classifier.diagnosis.follow import Follow, pid_alive
    if args.pid is not None and not pid_alive(args.pid):
        sys.stderr.write(f"dsdiag: warning: process {args.pid} is not running; the files are "
                         f"read to their current end\n")
    idle = args.idle if args.idle is not None else 0 if args.pid is not None else IDLE
    return Follow(idle, args.pid, watch=files)


def _drop_missing(paths):
    """The paths that exist (and '-'); each missing one reported on stderr, as grep does."""
    kept = []
    for path in paths:
        if path == "-" or os.path.exists(path):
            kept.append(path)
        else:
            _error(f"cannot read {path}: no such file or directory")
    return kept


def _warn_if_several_jobs(files):
    """Several files are read as the ranks of one job: say so when their names suggest not."""
    if len([f for f in files if f != "-"]) < 2:
        return  # one file is one job, whatever its name
    from classifier.jobs.discover import split_jobs
    jobs = split_jobs([f for f in files if f != "-"])
    if len(jobs) > 1:
        from classifier.sanitize import escape_name
        names = ", ".join(escape_name(os.path.basename(job[0])) for job in jobs[:3])
        more = f" and {len(jobs) - 3} more" if len(jobs) > 3 else ""
        sys.stderr.write(f"dsdiag: warning: the files look like {len(jobs)} different jobs "
                         f"({names}{more}), not the ranks of one; they are diagnosed as one "
                         f"job. `dsdiag triage` diagnoses each job on its own\n")


def _expand_job_dirs(paths):
    """Replace a directory by its job's log files (classifier.jobs.discover); none is an input error."""
    out = []
    for path in paths:
        if path != "-" and os.path.isdir(path):
            from classifier.jobs.discover import job_files
            from classifier.diagnosis.read import InputError
            files = job_files(path)
            if not files:
                raise InputError(f"{path}: a directory without log files (*.log, *.out, *.err, "
                                 f"*.txt, torchrun attempt_N/); for many jobs use `dsdiag triage`")
            out += files
        else:
            out.append(path)
    return out


def _emit(result, args, stream, fenced=False):
    """Render the (already finished) diagnosis.

    `fenced` wraps it in the marker lines dsdiag skips when it reads a log (ownreport.py).
    """
    from classifier.render import render
    color = {"always": True, "never": False}.get(args.color)
    if fenced:
        import io
        from classifier.diagnosis.ownreport import fence
        buffer = io.StringIO()
        render(result, args.format, buffer, color=color)
        stream.write(fence(buffer.getvalue()))
    else:
        render(result, args.format, stream, color=color)
    stream.flush()


def _is_regular_file(stream):
    """Is `stream` a regular file (Slurm's slurm-%j.out, a `2>>` log), not a terminal or pipe?"""
    import stat
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError):
        return False


def _write_termination_log(result, args):
    """Write the Kubernetes verdict; a failure is reported but keeps the category's exit code,
    which is what the Job's podFailurePolicy acts on."""
    from classifier.integrations.k8s import write_termination_log
    try:
        write_termination_log(args.k8s_termination_log, result)
    except OSError as exc:
        sys.stderr.write(f"dsdiag: cannot write {args.k8s_termination_log}: {exc.strerror or exc}\n")


def _print_version(args):
    from classifier import __version__
    rules = _load_rules(args)
    if rules is None:
        return EXIT_ERROR
    print(f"dsdiag {__version__} (rules {rules.version})")
    return EXIT_FOUND


def _exit_code(result, args):
    if args.exit_zero:
        return EXIT_FOUND
    if args.k8s_termination_log:
        from classifier.taxonomy import diagnosis_exit_code
        return diagnosis_exit_code(result)
    if args.tee:
        # A pass-through answers for the job it carries: a crash must not read as success.
        return EXIT_TEE_CLEAN if result["category"] == "none" else EXIT_TEE_FAILED
    return EXIT_NOTHING if result["category"] in ("none", "unknown") else EXIT_FOUND


def main(argv: list[str], subcommands: tuple[str, ...] = (), exits: bool = False) -> int:
    """Run the default command: diagnose the given files or stdin (or pass it through: --tee);
    `exits`: the process ends after it (the dsdiag command itself)."""
    from classifier.diagnosis.quickargs import quick_args
    args = quick_args(argv, FORMATS) or _parser(subcommands).parse_args(argv)
    if args.version:
        return _print_version(args)
    problem = _output_format(args)
    if problem and args.tee and not args.files and not sys.stdin.isatty():
        from classifier.integrations.tee import tee_and_diagnose
        tee_and_diagnose(None, None)  # a bad setting must not eat the training log either
    problem = problem or _check_args(args, argv)
    if problem:
        return _error(problem)
    import gc
    # The modules and the rule set loaded next live to the end: a collection while they load
    # frees nothing, and every later one walked them again (~8% of a 10 KB log's instructions).
    # So they load with the collector off and are then frozen out of its reach: also out of
    # the collection at exit, which walked every object (another ~6%). A caller that goes on
    # (the suite runs main in-process) gets them back under the collector at the end.
    gc.disable()
    try:
        import classifier.diagnosis.diagnose  # noqa: F401 (loaded here, used by _run)
        rules = _load_rules(args)
    finally:
        gc.freeze()
        gc.enable()
    try:
        return _run(args, rules)
    finally:
        if not exits:
            gc.unfreeze()


def _run(args, rules) -> int:
    """Diagnose the input with `rules` (None: they were invalid) and write the report."""
    from classifier.diagnosis.diagnose import diagnose_job
    from classifier.diagnosis.read import InputError
    missing = False
    if args.tee:
        from classifier.integrations.tee import tee_and_diagnose
        # The log passes through even when the rules are broken: never eat a training log.
        try:
            from functools import partial
            result, stats = tee_and_diagnose(rules, partial(diagnose_job, redact=not args.no_redact))
        except InputError as exc:  # passed through whole, but not a log (an archive)
            return _error(f"--tee: cannot diagnose {exc}")
        if stats.stdout_error:
            sys.stderr.write(f"dsdiag: --tee: stdout: {stats.stdout_error}; kept reading the log "
                             f"for the diagnosis ({stats.bytes_in} bytes)\n")
        if stats.read_error:
            sys.stderr.write(f"dsdiag: --tee: stdin: {stats.read_error}; diagnosing the "
                             f"{stats.bytes_in} bytes read\n")
        if result is None:
            return EXIT_ERROR
    else:
        if rules is None:
            return EXIT_ERROR
        paths = _drop_missing(args.files or ["-"])
        missing = len(paths) < len(args.files or ["-"])
        if not paths:
            return EXIT_ERROR
        try:
            files = _expand_job_dirs(paths)
            _warn_if_several_jobs(files)
            if args.follow:
                follow = _follow(args, files)
                with follow.on_signals():
                    result = diagnose_job(files, rules, redact=not args.no_redact,
                                          limits=args.limits._replace(follow=follow))
            else:
                result = diagnose_job(files, rules, redact=not args.no_redact,
                                      limits=args.limits)
        except InputError as exc:
            return _error(f"cannot read {exc}")
    try:
        if args.report:
            with open(args.report, "w", encoding="utf-8") as fh:
                _emit(result, args, fh)
        elif args.tee:
            # stderr that is a file may be the job's own log (Slurm joins stdout and stderr
            # into slurm-%j.out): fence the report so the epilog's diagnosis skips it.
            _emit(result, args, sys.stderr, fenced=_is_regular_file(sys.stderr))
        else:
            _emit(result, args, sys.stdout)
    except BrokenPipeError:
        raise
    except OSError as exc:
        return _error(f"cannot write {exc.filename or 'the report'}: {exc.strerror or exc}")
    if args.k8s_termination_log:
        _write_termination_log(result, args)
    if args.tee and stats.signum is not None and not stats.reached_eof:
        return 128 + stats.signum
    if not args.tee and missing:
        return EXIT_ERROR  # the rest was diagnosed, but a named file was not there
    return _exit_code(result, args)


