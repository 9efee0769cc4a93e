"""The `dsdiag` command: dispatch to a subcommand, or diagnose a job (the default command).

Each command's code lives with its product; this table maps names to "module:function" so
`dsdiag --help` imports nothing heavy. Exit codes shared by every command: 130 interrupted
(Ctrl-C), 141 stdout closed early (e.g. `| head`), 2 stdout closed before the start
(`>&-`), 70 a bug in dsdiag itself (one line naming it; DSDIAG_DEBUG=1 shows the traceback);
the rest are each command's own.
"""

import gc
import os
import sys

EXIT_BUG, EXIT_INTERRUPT, EXIT_PIPE = 70, 130, 141

SUBCOMMANDS = {
    "triage": "classifier.jobs.triage:main",
    "check-config": "classifier.preflight.config.command:main",
    "env": "classifier.preflight.env.command:main",
    "slurm-annotate": "classifier.integrations.slurm:main",
    "rules": "classifier.rules.command:main",
    "eval": "classifier.corpus.evaluate:main",
}
DEFAULT_COMMAND = "classifier.diagnosis.command:main"


def _command(target: str):
    module, func = target.split(":")
    # A command's modules live until exit: collecting garbage while they load finds none.
    gc.disable()
    try:
        # __import__, not importlib.import_module: importing importlib costs every start ~0.5 ms
        return getattr(__import__(module, fromlist=[func]), func)
    finally:
        gc.enable()


def _is_utf8(stream) -> bool:
    return (getattr(stream, "encoding", None) or "").lower().replace("-", "") == "utf8"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `dsdiag` console script."""
    exits = argv is None  # the dsdiag command itself: the process ends after this call
    argv = sys.argv[1:] if argv is None else argv
    if sys.stderr is None:  # started with 2>&-: messages go nowhere, but must not crash
        sys.stderr = open(os.devnull, "w", encoding="utf-8")
    for stream in (sys.stdout, sys.stderr):
        # An ASCII locale without Python's UTF-8 mode: show what it cannot encode as \uXXXX
        # rather than stop with UnicodeEncodeError (JSON switches to ASCII escapes itself).
        if stream is not None and not _is_utf8(stream) and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        if argv and argv[0] in SUBCOMMANDS:
            if sys.stdout is None and argv[0] != "slurm-annotate":
                # Python leaves a closed fd 1 as None; the default command decides for itself
                # (--report and --tee write elsewhere), every other command writes there.
                sys.stderr.write("dsdiag: error: stdout is closed; nothing to write to\n")
                return 2
            return _command(SUBCOMMANDS[argv[0]])(argv[1:])
        return _command(DEFAULT_COMMAND)(argv, tuple(SUBCOMMANDS), exits=exits)
    except KeyboardInterrupt:
        sys.stderr.write("dsdiag: interrupted\n")
        return EXIT_INTERRUPT
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing, and keep Python's exit flush quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE
    except Exception as exc:  # noqa: BLE001 - a bug must not reach a scheduler's log as a traceback
        if os.environ.get("DSDIAG_DEBUG"):
            raise
        where = exc.__traceback__
        while where.tb_next is not None:
            where = where.tb_next
        place = f"{os.path.basename(where.tb_frame.f_code.co_filename)}:{where.tb_lineno}"
        text = "".join(c if c.isprintable() else "?" for c in " ".join(str(exc).split())[:300])
        try:  # the message may quote the log: never a secret, whatever failed
            from classifier.redact import redact_text
            text = redact_text(text)
        except Exception:  # noqa: BLE001
            text = "(message withheld)"
        sys.stderr.write(f"dsdiag: internal error: {type(exc).__name__} at {place}: {text} "
                         f"(a bug in dsdiag; DSDIAG_DEBUG=1 shows the traceback)\n")
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
