"""`dsdiag triage PATH...`: diagnose many jobs at once, in parallel; JSONL out, a grouped summary.

Each PATH is cut into jobs by classifier.jobs.discover.discover_jobs: a file is one job, the log
files of a directory (or a torchrun --log-dir layout) are one job or several as their names say
(split_jobs: rank files are one job, `slurm-1001.out` and `slurm-1002.out` two), any other
directory is an archive whose sub-directories are looked at by the same rule. Every job is diagnosed by the same pure
function as `dsdiag FILE...` (classifier.diagnosis.diagnose.diagnose_job), in a process pool
(`--workers`, default one per core) or on a Dask cluster (`--dask ADDRESS`).

Output:
  stdout  JSON Lines, one object per job in the order the jobs were found: the JSON contract of
          `dsdiag --format json` plus `"job"` (the job's path), `"files"` and `"grouping"` (how
          many files, and how they were put together: discover.grouping_of) and `"group"` (the
          grouping key below). A job that cannot be read is `{"job", "schema_version", "error"}`.
  stderr  a progress bar (only on a terminal), then the summary: jobs per category and, within
          a category, per grouping key; then the hosts to look at (classifier.jobs.hosts).
  --drain-list  stdout holds, instead of the JSONL, the hosts named as culprit in at least
          --min-jobs failed jobs, one per line.
  --html  a self-contained page (classifier.jobs.html): chart, sortable table, rank timelines.

The grouping key is classifier.jobs.group.group_key; the per-job work is classifier.jobs.run.

Exit codes: 0 every job was triaged (whatever each diagnosis says: read the JSONL), 1 some job
could not be read (its line carries "error"), 2 usage error (no such PATH, no log files under
it, bad option, invalid rule files, Dask missing or its scheduler unreachable) or a worker
process that died, 130 Ctrl-C, 141 stdout closed early. A bad PATH among good ones is reported
and the rest triaged before exiting 2.
"""

import argparse
import json
import os
import sys
from collections.abc import Iterable

from classifier.jobs.run import in_job_order, make_batches, rules_for, run_local
from classifier.render.json import writes_utf8
from classifier.sanitize import escape_name, json_line

EXIT_OK, EXIT_SOME_FAILED, EXIT_ERROR = 0, 1, 2


def _parser():
    p = argparse.ArgumentParser(
        prog="dsdiag triage",
        description="Diagnose many jobs: one per file; in a directory, the rank files of one "
                    "job together and every other log on its own (slurm-1001.out and "
                    "slurm-1002.out are two jobs); a directory without log files of its own is "
                    "an archive of job sub-directories.",
        epilog="JSON Lines on stdout (one object per job), progress and a summary grouped by "
               "category and rule captures on stderr. Exit codes: 0 every job triaged, 1 some "
               "job unreadable, 2 usage error (a missing PATH among others: after the rest).")
    p.add_argument("paths", nargs="*", metavar="PATH", help="log file, job directory or archive")
    p.add_argument("--paths-from", metavar="FILE",
                   help="read more PATHs from FILE, one per line ('-' for stdin)")
    p.add_argument("-j", "--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="processes to use (default: one per core)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run on a Dask distributed scheduler (tcp://host:port) instead of local "
                        "processes; the workers must see the log files at the same paths")
    p.add_argument("--dask-timeout", type=float, default=20.0, metavar="S",
                   help="seconds to wait for the Dask scheduler and a first worker (default 20)")
    p.add_argument("--rules-dir", action="append", default=[], metavar="DIR",
                   help="extra rule directory (as for `dsdiag`); env DSDIAG_RULES_DIR")
    p.add_argument("--no-redact", action="store_true",
                   help="do not mask tokens, keys and passwords in the JSONL and HTML")
    p.add_argument("--drain-list", action="store_true",
                   help="print, instead of the JSONL, the hosts named as the culprit of at least "
                        "--min-jobs failed jobs, one per line (for scontrol ... state=drain or "
                        "--exclude)")
    p.add_argument("--min-jobs", type=int, default=1, metavar="N",
                   help="with --drain-list: only hosts that are the culprit of N or more jobs "
                        "(default 1)")
    p.add_argument("--hosts-jsonl", metavar="FILE",
                   help="also write the hosts to look at as JSON Lines, one host per line: host, "
                        "failed_jobs, categories, last_seen (stdout keeps one line per job)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    return p


def _error(message):
    sys.stderr.write(f"dsdiag triage: error: {escape_name(message)}\n")
    return EXIT_ERROR


def _collect_paths(args):
    paths = list(args.paths)
    if args.paths_from:
        try:
            fh = sys.stdin if args.paths_from == "-" else open(args.paths_from, encoding="utf-8")
            with fh:
                paths += [line.rstrip("\n") for line in fh if line.strip()]
        except OSError as exc:
            raise ValueError(f"cannot read {args.paths_from}: {exc.strerror or exc}") from None
    return paths


def find_jobs(paths: Iterable[str]) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """([(job, files)] for all PATHs, [one line per PATH that yields nothing])."""
    from classifier.jobs.discover import discover_jobs
    jobs, problems, seen = [], [], set()
    for path in paths:
        if not os.path.exists(path):
            problems.append(f"{path}: no such file or directory")
            continue
        notes = []
        found = discover_jobs(path, notes=notes, _seen=seen)
        for where, reason, unreadable in notes:
            if unreadable:  # a job directory is a job: it is reported, as a job that failed
                jobs.append((where, []))
            else:
                sys.stderr.write(f"dsdiag: warning: {escape_name(where)}: {reason}\n")
        if not found and not any(unreadable for _, _, unreadable in notes):
            problems.append(f"{path}: no log files (*.log, *.out, *.err, *.txt, torchrun "
                            f"attempt_N/) in it or its sub-directories")
        jobs += found
    return jobs, problems


def _check_rules(rules_dirs):
    from classifier.rules.load import RuleError
    try:
        rules_for(rules_dirs)
    except RuleError as exc:
        for problem in exc.problems:
            sys.stderr.write(problem + "\n")
        return False
    return True


def _progress(total):
    """(update callback, stop) for a rich progress bar on a terminal stderr; no-ops otherwise."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    progress = Progress(TextColumn("triage"), BarColumn(), MofNCompleteColumn(), TextColumn("jobs"),
                        TimeElapsedColumn(), console=Console(stderr=True), transient=True,
                        redirect_stdout=False, redirect_stderr=False)  # stdout is the JSONL
    task = progress.add_task("triage", total=total)
    progress.start()
    return (lambda n: progress.advance(task, n)), progress.stop


def main(argv: list[str]) -> int:
    """Entry point of `dsdiag triage`."""
    args = _parser().parse_args(argv)
    if args.workers < 1:
        return _error("--workers must be at least 1")
    if args.min_jobs < 1:
        return _error("--min-jobs must be at least 1")
    try:
        jobs, bad_paths = find_jobs(_collect_paths(args))
    except ValueError as exc:
        return _error(str(exc))
    for problem in bad_paths:  # reported now, the rest triaged, exit 2 at the end (as grep)
        _error(problem)
    if not jobs:
        return EXIT_ERROR if bad_paths else \
            _error("no jobs: name log files, job directories or archives (see --help)")
    from classifier.rules.load import env_rules_dirs
    rules_dirs = tuple(env_rules_dirs() + args.rules_dir)
    if not _check_rules(rules_dirs):
        return EXIT_ERROR
    redact = not args.no_redact
    if args.dask:
        from classifier.integrations.dask import DaskError, run_on_dask
        try:
            finished = run_on_dask(args.dask, jobs, rules_dirs, redact, args.dask_timeout)
        except DaskError as exc:
            return _error(str(exc))
    else:
        finished = run_local(make_batches(jobs, args.workers), args.workers, rules_dirs, redact)
    from concurrent.futures.process import BrokenProcessPool
    update, stop = _progress(len(jobs))
    results = []
    utf8 = writes_utf8(sys.stdout)
    try:
        for result in in_job_order(finished, update):
            if not args.drain_list:
                sys.stdout.write(json_line(result, ascii_only=not utf8) + "\n")
            results.append(_summary_view(result) if not args.html else result)
        sys.stdout.flush()
    except BrokenProcessPool:
        stop()
        return _error(f"a worker process died (killed for memory?) after {len(results)} of "
                      f"{len(jobs)} jobs; fewer --workers need less memory")
    finally:
        stop()
        close = getattr(finished, "close", None)
        if close:
            close()
    if args.hosts_jsonl:
        from classifier.jobs.hosts import culprit_hosts, host_record
        try:
            with open(args.hosts_jsonl, "w", encoding="utf-8") as fh:
                fh.writelines(json_line(host_record(row)) + "\n" for row in culprit_hosts(results))
        except OSError as exc:
            return _error(f"cannot write {args.hosts_jsonl}: {exc.strerror or exc}")
    if args.drain_list:
        from classifier.jobs.hosts import drain_list
        sys.stdout.write("".join(f"{host}\n" for host in drain_list(results, args.min_jobs)))
        sys.stdout.flush()
    if not args.quiet:
        from classifier.jobs.summary import print_summary
        print_summary(results, sys.stderr)
    if args.html:
        from classifier.jobs.html import write_html
        try:
            write_html(results, args.html)
        except OSError as exc:
            return _error(f"cannot write {args.html}: {exc.strerror or exc}")
    if bad_paths:
        return EXIT_ERROR
    return EXIT_SOME_FAILED if any("error" in r for r in results) else EXIT_OK


def _summary_view(result):
    """What the summary needs of a result (keeps memory small over thousands of jobs)."""
    keep = ("job", "files", "grouping", "group", "category", "layer", "error", "last_seen")
    view = {k: result[k] for k in keep if k in result}
    if result.get("culprit"):
        view["culprit"] = {"hosts": result["culprit"]["hosts"]}
    return view
