"""The default command's common command lines, read without argparse.

Importing argparse (with gettext and locale) and building the parser cost a small log's
diagnosis about a tenth of its time. Most command lines are a few files with `--format`,
`--color` or a flag; those are read here into what argparse would return. Anything else
(help, abbreviations, `--`, a bad choice, files on both sides of an option, every other
option) returns None and goes to argparse, which reads it or explains the error as always.
tests/cli/test_quickargs.py checks the two agree on every line this accepts.
"""

from types import SimpleNamespace

# the options read here: those that take a value, and flags (each -> its attribute)
_VALUED = {"--format": "format", "-f": "format", "--color": "color", "--rules-dir": "rules_dir",
           "--report": "report"}
_FLAGS = {"--exit-zero": "exit_zero", "--no-redact": "no_redact", "--tee": "tee",
          "--follow": "follow"}
_COLORS = ("auto", "always", "never")


def defaults() -> SimpleNamespace:
    """The namespace argparse gives `dsdiag` with no arguments."""
    return SimpleNamespace(files=[], format=None, color="auto", exit_zero=False, rules_dir=[],
                           tee=False, report=None, k8s_termination_log=None, max_ratio=None,
                           max_decompressed=None, follow=False, idle=None, pid=None,
                           no_redact=False, version=False)


def quick_args(argv: list[str], formats: tuple[str, ...]) -> SimpleNamespace | None:
    """What argparse would make of `argv`, for the common forms; None for any other."""
    args, i, runs, in_files = defaults(), 0, 0, False
    while i < len(argv):
        token = argv[i]
        if token == "-" or not token.startswith("-"):
            if not in_files:
                runs, in_files = runs + 1, True
            args.files.append(token)
            i += 1
            continue
        in_files = False
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in _FLAGS and not eq:
            setattr(args, _FLAGS[name], True)
            i += 1
            continue
        if name not in _VALUED:
            return None
        if not eq:
            if i + 1 >= len(argv):
                return None
            value, i = argv[i + 1], i + 1
        # argparse reads a value that starts with '-' as an option: leave those to it
        if not value or value.startswith("-"):
            return None
        attr = _VALUED[name]
        if (attr == "format" and value not in formats) or (attr == "color" and value not in _COLORS):
            return None
        if attr == "rules_dir":
            args.rules_dir.append(value)
        else:
            setattr(args, attr, value)
        i += 1
    # argparse takes one run of files; a second run after an option is its error to report
    return args if runs <= 1 else None
