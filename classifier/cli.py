"""Command line: `dsdiag [FILE...]` diagnoses one job; subcommands load only what they need.

Exit codes (the contract schedulers rely on):
  0   a failure category was diagnosed
  1   nothing diagnosed: the log looks healthy (`none`) or no rule explains it (`unknown`)
  2   usage error, unreadable input, or invalid rule files
  130 interrupted (Ctrl-C); 141 stdout closed early (e.g. `| head`)
"""

import argparse
import os
import sys

from .render import FORMATS

EXIT_FOUND, EXIT_NOTHING, EXIT_ERROR, EXIT_INTERRUPT, EXIT_PIPE = 0, 1, 2, 130, 141

# Subcommands map to "module:function" so `dsdiag --help` imports nothing heavy.
SUBCOMMANDS = {
    "rules": "classifier.cli_rules:main",
    "eval": "classifier.evaluate:main",
}


def _error(message):
    sys.stderr.write(f"dsdiag: error: {message}\n")
    return EXIT_ERROR


def _parser():
    p = argparse.ArgumentParser(
        prog="dsdiag",
        description="Diagnose a crashed DeepSpeed / PyTorch-distributed job from its log.",
        epilog="Several files are read as the ranks of one job; '-' or no file reads stdin. "
               "Subcommands: " + ", ".join(SUBCOMMANDS) + ". "
               "Exit codes: 0 diagnosed, 1 none/unknown, 2 usage or input error.")
    p.add_argument("files", nargs="*", metavar="FILE", help="log files (plain, .gz, .bz2, .xz)")
    p.add_argument("-f", "--format", choices=FORMATS,
                   default=os.environ.get("DSDIAG_FORMAT", "text"),
                   help="output format (default text; env DSDIAG_FORMAT)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text output (auto: on a terminal, unless NO_COLOR is set)")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 whatever the diagnosis (for hooks); errors still exit 2")
    p.add_argument("--rules-dir", action="append", default=[], metavar="DIR",
                   help="extra rule directory; its rules add to or override the built-in ones")
    return p


def _run_subcommand(name, argv):
    import importlib
    module, func = SUBCOMMANDS[name].split(":")
    return getattr(importlib.import_module(module), func)(argv)


def diagnose_main(argv):
    """Run the default command: diagnose the given files or stdin."""
    args = _parser().parse_args(argv)
    files = args.files or ["-"]
    if files == ["-"] and sys.stdin.isatty():
        return _error("no input: pipe a log into dsdiag or name log files (see --help)")
    if files.count("-") > 1:
        return _error("'-' (stdin) can be given only once")
    from .diagnose import diagnose_job
    from .reader import InputError
    from .rules import RuleError, default_rules, env_rules_dirs, load_rules
    extra = env_rules_dirs() + args.rules_dir
    try:
        rules = load_rules(extra) if extra else default_rules()
    except RuleError as exc:
        for problem in exc.problems:
            sys.stderr.write(problem + "\n")
        return EXIT_ERROR
    try:
        result = diagnose_job(files, rules)
    except InputError as exc:
        return _error(f"cannot read {exc}")
    from .render import render
    color = {"always": True, "never": False}.get(args.color)
    render(result, args.format, sys.stdout, color=color)
    sys.stdout.flush()
    if args.exit_zero:
        return EXIT_FOUND
    return EXIT_NOTHING if result["category"] in ("none", "unknown") else EXIT_FOUND


def main(argv=None):
    """Entry point of the `dsdiag` console script."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return _run_subcommand(argv[0], argv[1:])
        return diagnose_main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("dsdiag: interrupted\n")
        return EXIT_INTERRUPT
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing, and keep Python's exit flush quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE


if __name__ == "__main__":
    sys.exit(main())
