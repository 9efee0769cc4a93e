"""Keep the corpus's strict xfails and baseline in step with what dsdiag now answers.

    python scripts/xfail_sync.py            # report: cases to lift (xfail but right) and new misses
    python scripts/xfail_sync.py --fix      # remove lifted xfails, add `xfail:` to new misses
    python scripts/xfail_sync.py --baseline # also rewrite corpus/baseline.json from this run

Public-test cases are counted, never named: the report must not leak the held-out split.
Run after every rule or model change, before committing it.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from classifier.corpus.evaluate import SEGMENTS, evaluate, find_cases  # noqa: E402


def _set_xfail(sidecar: Path, reason: str | None) -> None:
    """Drop the sidecar's `xfail:` line and, when `reason` is given, append a new one."""
    lines = [ln for ln in sidecar.read_text().splitlines() if not ln.startswith("xfail:")]
    if reason is not None:
        lines.append("xfail: " + json.dumps(reason))
    sidecar.write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fix", action="store_true")
    ap.add_argument("--baseline", action="store_true")
    args = ap.parse_args()

    metas = {str(log): meta for log, meta in find_cases(ROOT / "corpus")}
    scores = evaluate(ROOT / "corpus")
    wrong = {r["case"]: r for r in scores["misses"]}
    lift, miss = [], []
    for case, meta in metas.items():
        if meta.get("xfail") and case not in wrong:
            lift.append(case)
        elif not meta.get("xfail") and case in wrong:
            miss.append(case)

    def show(kind: str, cases: list[str]) -> None:
        held = 0
        for case in cases:
            if metas[case].get("origin") == "public" and metas[case].get("split") == "test":
                held += 1
                continue
            r = wrong.get(case)
            said = f" (label {r['label']}, says {r['predicted']} via {r['rule']})" if r else ""
            print(f"{kind} {Path(case).relative_to(ROOT)}{said}")
        if held:
            print(f"{kind} public-test: {held} case(s), not named")

    show("LIFT", lift)
    show("MISS", miss)
    if args.fix:
        for case in lift:
            _set_xfail(Path(case).with_suffix(".yaml"), None)
        for case in miss:
            r = wrong[case]
            _set_xfail(Path(case).with_suffix(".yaml"),
                       f"dsdiag says {r['predicted']} ({r['rule'] or 'no rule fired'}); label {r['label']}")
    for name in SEGMENTS:
        s = scores["segments"].get(name, {})
        print(f"{name}: {s.get('accuracy')} of {s.get('cases')}"
              f" (high {s.get('high_accuracy')} of {s.get('high_cases')}), false alarms {s.get('false_alarm_rate')}")
    if args.baseline:
        keep = ("cases", "accuracy", "false_alarm_rate", "evidence_hit_rate", "high_cases",
                "high_accuracy", "culprit_cases", "culprit_accuracy", "culprit_wrong_host")
        base = {k: scores[k] for k in ("accuracy", "false_alarm_rate", "cases", "evidence_hit_rate")}
        base["segments"] = {n: {k: v for k, v in s.items() if k in keep}
                            for n, s in scores["segments"].items()}
        (ROOT / "corpus" / "baseline.json").write_text(json.dumps(base, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
