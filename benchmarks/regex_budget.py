"""Regex time of real logs against the budgets of classifier/diagnosis/budget.py.

    python benchmarks/regex_budget.py [--big-mb 1000] [--dir /tmp/dsdiag-bench]

Diagnoses every corpus case in process and reports the rule regex time of the slowest line
and of the slowest job, next to PER_LINE and PER_JOB: the budgets must sit far above what any
real log takes. With --big-mb, also the deterministic 256-rank log of benchmarks/scale.py of
that size (written once, cached in --dir).
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure(paths, rules):
    """(seconds of regex time of the job, of its slowest line, warnings codes) for one job."""
    from classifier.diagnosis import budget as budget_module
    from classifier.diagnosis import diagnose
    seen = []

    class Recording(budget_module.RegexBudget):  # the real budget, remembered for its figures
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            seen.append(self)

    diagnose.RegexBudget = Recording
    try:
        result = diagnose.diagnose_job([str(p) for p in paths], rules)
    finally:
        diagnose.RegexBudget = budget_module.RegexBudget
    codes = sorted({w["code"] for w in result["warnings"]} & {"regex_budget", "regex_line_budget",
                                                             "regex_timeout"})
    return seen[0].spent, seen[0].worst_line, codes


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--big-mb", type=int, default=0, help="also a scale.py log of this many MB")
    p.add_argument("--dir", default="/tmp/dsdiag-bench")
    args = p.parse_args()
    from classifier.corpus.evaluate import find_cases
    from classifier.diagnosis.budget import PER_JOB, PER_LINE
    from classifier.rules.load import default_rules
    rules = default_rules()
    jobs = [(log.relative_to(ROOT), [log]) for log, _meta in find_cases(ROOT / "corpus")]
    if args.big_mb:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import scale
        path = Path(args.dir) / f"job_{args.big_mb}mb.log"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            scale.write_log(path, args.big_mb)
        jobs.append((path, [path]))
    started = time.perf_counter()
    figures = [(name, *measure(paths, rules)) for name, paths in jobs]
    elapsed = time.perf_counter() - started
    total = sum(f[1] for f in figures)
    print(f"{len(figures)} jobs in {elapsed:.1f} s, of which rule regex time {total:.2f} s")
    print(f"budgets: {PER_LINE:g} s per line, {PER_JOB:g} s per job")
    for title, key in (("slowest jobs (regex s)", 1), ("slowest lines (regex s)", 2)):
        print(title + ":")
        for name, job, line, codes in sorted(figures, key=lambda f: -f[key])[:5]:
            print(f"  {job:8.4f} job  {line:8.4f} line  {name}  {' '.join(codes)}")
    hit = [f for f in figures if f[3]]
    print(f"jobs with a regex budget or timeout warning: {len(hit)}")
    return 1 if hit else 0


if __name__ == "__main__":
    sys.exit(main())
