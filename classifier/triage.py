"""`dsdiag triage PATH...`: diagnose many jobs at once, in parallel; JSONL out, a grouped summary.

Each PATH is cut into jobs by classifier.jobdir.discover_jobs: a file is one job, a directory
holding log files (or a torchrun --log-dir layout) is one job, any other directory is an archive
whose sub-directories are looked at by the same rule. Every job is diagnosed by the same pure
function as `dsdiag FILE...` (classifier.diagnosis.diagnose.diagnose_job), in a process pool
(`--workers`, default one per core) or on a Dask cluster (`--dask ADDRESS`).

Output:
  stdout  JSON Lines, one object per job in the order the jobs were found: the JSON contract of
          `dsdiag --format json` plus `"job"` (the job's path) and `"group"` (the grouping key
          below). A job that cannot be read is `{"job", "schema_version", "error"}`.
  stderr  a progress bar (only on a terminal), then the summary: jobs per category and, within
          a category, per grouping key.
  --html  a self-contained page (classifier.render.html): chart, sortable table, rank timelines.

The grouping key is the winning rule's id followed by its captured values, `name=value` sorted
by name, leaving out the values that differ from one run to the next by nature (sizes,
durations, counters, hosts, pids, ranks, positions, paths: VOLATILE_FACTS) and those derived
after the match (ranks, world size, corrected batch sizes); a value that is a file path is
shortened to its last component. So fifty jobs that found port 29500 taken fall in one group
(`port_conflict.tcpstore_bind_errno port=29500`) whatever their hosts, and two missing symbols
make two groups. Jobs no rule explains are grouped by the exception type of their evidence
(`unknown KeyError`), jobs judged by the fallback model by `<category> (model)`.

Exit codes: 0 every job was triaged (whatever each diagnosis says: read the JSONL), 1 some job
could not be read (its line carries "error"), 2 usage error (no such PATH, no log files under
it, bad option, invalid rule files, Dask missing or its scheduler unreachable) or a worker
process that died, 130 Ctrl-C, 141 stdout closed early.
"""

import argparse
import json
import os
import re
import signal
import sys

EXIT_OK, EXIT_SOME_FAILED, EXIT_ERROR = 0, 1, 2

# Captured values that differ between runs of the same failure; never part of a grouping key.
VOLATILE_FACTS = frozenset({
    # derived after the match
    "ranks", "ranks_summary", "world_size", "expected_train_batch_size", "suggested_grad_acc",
    "model_probability",
    # where it happened: hosts, processes, ranks, devices, positions, paths
    "host", "peer", "peer_port", "pid", "process", "rank", "rank_a", "rank_b", "local_rank",
    "gpu", "pci", "device", "slot", "line", "column", "pos", "expected_pos", "entry", "path",
    "source", "where", "hostfile", "segment", "config", "step", "seq",
    # how much: sizes, durations, counters
    "requested", "free", "total", "allocated", "reserved", "reserved_unallocated", "used",
    "needed", "size", "limit", "anon_rss", "total_vm", "elapsed_ms", "timeout", "timeout_ms",
    "timeout_s", "heartbeat_s", "count", "joined", "skipped", "last_completed", "last_enqueued",
    "scale", "available_tokens",
    # the stack around the failure, not the failure (versions that ARE the failure, like
    # torch_cuda vs system_cuda, stay)
    "nccl_version",
})
_EXCEPTION_TYPE = re.compile(r"\b([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure))\b")
_SPACES = re.compile(r"\s+")
MAX_KEY_VALUE = 60


def _key_value(value):
    text = _SPACES.sub(" ", str(value)).strip()
    if "/" in text and " " not in text:
        text = text.rstrip("/").rsplit("/", 1)[-1] or text
    return text if len(text) <= MAX_KEY_VALUE else text[:MAX_KEY_VALUE - 1] + "…"


def group_key(result):
    """The summary's grouping key of one job's result (see the module docstring)."""
    if "error" in result:
        return "error"
    category = result.get("category")
    if result.get("source") == "model":
        return f"{category} (model)"
    rule = result.get("rule")
    if rule is None:
        if category == "unknown":
            for item in result.get("evidence") or ():
                m = _EXCEPTION_TYPE.search(item.get("text", ""))
                if m:
                    return f"unknown {m.group(1).rsplit('.', 1)[-1]}"
        return str(category)
    parts = [rule]
    for name, value in sorted((result.get("facts") or {}).items()):
        if name not in VOLATILE_FACTS and isinstance(value, (str, int, float)) and str(value).strip():
            parts.append(f"{name}={_key_value(value)}")
    return " ".join(parts)


# ---- the per-job work, run in pool processes or on Dask workers ----------------------------

_RULES_CACHE = {}


def rules_for(rules_dirs):
    """The rule set for these extra rule directories, loaded once per process."""
    key = tuple(rules_dirs)
    if key not in _RULES_CACHE:
        from classifier.rules.load import default_rules, load_rules
        _RULES_CACHE[key] = load_rules(list(key)) if key else default_rules()
    return _RULES_CACHE[key]


def triage_job(job, files, rules_dirs=(), redact=True):
    """Diagnose one job; return `{"job", "group", **contract}` or `{"job", ..., "error"}`."""
    from classifier.diagnosis.diagnose import SCHEMA_VERSION, diagnose_job
    from classifier.diagnosis.read import InputError
    try:
        result = diagnose_job(list(files), rules_for(rules_dirs))
    except InputError as exc:
        return {"job": job, "schema_version": SCHEMA_VERSION, "error": f"cannot read {exc}"}
    except Exception as exc:  # one broken job must not stop the triage of thousands
        return {"job": job, "schema_version": SCHEMA_VERSION,
                "error": f"internal error: {type(exc).__name__}: {exc}"}
    if redact:
        from classifier.redact import redact_diagnosis
        result = redact_diagnosis(result)
    out = {"job": job, "group": group_key(result)}
    out.update(result)
    return out


def triage_batch(batch, rules_dirs=(), redact=True):
    """triage_job over a list of (job, files); a batch is the unit sent to a worker."""
    return [triage_job(job, files, rules_dirs, redact) for job, files in batch]


def make_batches(jobs, workers):
    """Cut the jobs into batches: about 32 per worker, so the last ones leave no core idle for
    long, and at most 16 jobs each; a batch costs one round trip to a worker."""
    size = max(1, min(16, -(-len(jobs) // (max(1, workers) * 32))))
    return [jobs[i:i + size] for i in range(0, len(jobs), size)]


def _init_worker(rules_dirs):
    # Ctrl-C is the parent's to handle (it cancels what is queued); workers finish their batch
    # instead of each printing a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    rules_for(rules_dirs)


def run_local(batches, workers, rules_dirs, redact):
    """Yield (batch index, results) as batches finish, in this process or a process pool."""
    if workers <= 1 or len(batches) <= 1:
        for i, batch in enumerate(batches):
            yield i, triage_batch(batch, rules_dirs, redact)
        return
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    pool = ProcessPoolExecutor(max_workers=min(workers, len(batches)), initializer=_init_worker,
                               initargs=(tuple(rules_dirs),))
    try:
        pending = {pool.submit(triage_batch, b, tuple(rules_dirs), redact): i
                   for i, b in enumerate(batches)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield pending.pop(future), future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def in_job_order(finished, on_done=None):
    """Yield results in job order from (batch index, results) pairs arriving in any order."""
    waiting, next_index = {}, 0
    for index, results in finished:
        if on_done:
            on_done(len(results))
        waiting[index] = results
        while next_index in waiting:
            yield from waiting.pop(next_index)
            next_index += 1


# ---- the command ---------------------------------------------------------------------------

def _parser():
    p = argparse.ArgumentParser(
        prog="dsdiag triage",
        description="Diagnose many jobs: one per file, one per job directory; a directory "
                    "without log files of its own is an archive of job sub-directories.",
        epilog="JSON Lines on stdout (one object per job), progress and a summary grouped by "
               "category and rule captures on stderr. Exit codes: 0 every job triaged, 1 some "
               "job unreadable, 2 usage error.")
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
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    return p


def _error(message):
    sys.stderr.write(f"dsdiag triage: error: {message}\n")
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


def find_jobs(paths):
    """[(job, files)] for all PATHs; ValueError naming the first PATH that yields nothing."""
    from classifier.jobdir import discover_jobs
    jobs = []
    for path in paths:
        if not os.path.exists(path):
            raise ValueError(f"{path}: no such file or directory")
        found = discover_jobs(path)
        if not found:
            raise ValueError(f"{path}: no log files (*.log, *.out, *.err, *.txt, torchrun "
                             f"attempt_N/) in it or its sub-directories")
        jobs += found
    return jobs


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


def main(argv):
    """Entry point of `dsdiag triage`."""
    args = _parser().parse_args(argv)
    if args.workers < 1:
        return _error("--workers must be at least 1")
    try:
        jobs = find_jobs(_collect_paths(args))
    except ValueError as exc:
        return _error(str(exc))
    if not jobs:
        return _error("no jobs: name log files, job directories or archives (see --help)")
    from classifier.rules.load import env_rules_dirs
    rules_dirs = tuple(env_rules_dirs() + args.rules_dir)
    if not _check_rules(rules_dirs):
        return EXIT_ERROR
    redact = not args.no_redact
    if args.dask:
        from classifier.integrations.dask_triage import DaskError, run_on_dask
        try:
            finished = run_on_dask(args.dask, jobs, rules_dirs, redact, args.dask_timeout)
        except DaskError as exc:
            return _error(str(exc))
    else:
        finished = run_local(make_batches(jobs, args.workers), args.workers, rules_dirs, redact)
    from concurrent.futures.process import BrokenProcessPool
    update, stop = _progress(len(jobs))
    results = []
    try:
        for result in in_job_order(finished, update):
            sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
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
    if not args.quiet:
        from classifier.render.summary import print_summary
        print_summary(results, sys.stderr)
    if args.html:
        from classifier.render.html import write_html
        try:
            write_html(results, args.html)
        except OSError as exc:
            return _error(f"cannot write {args.html}: {exc.strerror or exc}")
    return EXIT_SOME_FAILED if any("error" in r for r in results) else EXIT_OK


def _summary_view(result):
    """What the summary needs of a result (keeps memory small over thousands of jobs)."""
    keep = ("job", "group", "category", "layer", "error")
    return {k: result[k] for k in keep if k in result}
