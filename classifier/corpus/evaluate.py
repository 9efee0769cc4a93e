"""`dsdiag eval PATH`: score the full diagnosis against a labelled corpus.

A case is `<name>.log` (or `.log.gz`) with a sidecar `<name>.yaml` holding at least `label`
and, where known, `evidence_lines`. Reports per-category precision / recall / F1, the
confusion matrix, the evidence-line hit rate and every miss.
"""

import argparse
import json
import sys
from pathlib import Path

import yaml

from classifier.diagnosis.diagnose import diagnose_job
from classifier.rules.load import default_rules
from classifier.taxonomy import ALL_IDS


def find_cases(root):
    """Yield (log path, sidecar dict) for every labelled case under `root`, sorted."""
    for sidecar in sorted(Path(root).rglob("*.yaml")):
        if "generate" in sidecar.parts:
            continue
        for suffix in (".log", ".log.gz"):
            log = sidecar.with_suffix(suffix) if suffix == ".log" else sidecar.with_name(sidecar.stem + suffix)
            if log.is_file():
                break
        else:
            continue
        with sidecar.open(encoding="utf-8") as f:
            meta = yaml.safe_load(f) or {}
        if isinstance(meta, dict) and meta.get("label"):
            yield log, meta


def evaluate(root, rules=None):
    """Diagnose every case under `root` and return the scores as plain data."""
    rules = rules or default_rules()
    results = []
    for log, meta in find_cases(root):
        d = diagnose_job([str(log)], rules)
        wanted = set(meta.get("evidence_lines") or ())
        got = {ev["line"] for ev in d["evidence"]}
        results.append({
            "case": str(log), "label": meta["label"], "predicted": d["category"],
            "rule": d["rule"], "family": meta.get("family"),
            "evidence_hit": bool(wanted & got) if wanted else None,
            "evidence": [ev["line"] for ev in d["evidence"][:3]],
        })
    return score(results)


def score(results):
    """Per-category precision/recall/F1, accuracy, confusion and evidence hit rate."""
    labels = [c for c in ALL_IDS if any(r["label"] == c or r["predicted"] == c for r in results)]
    confusion = {a: {b: 0 for b in labels} for a in labels}
    for r in results:
        confusion[r["label"]][r["predicted"]] += 1
    per = {}
    for c in labels:
        tp = confusion[c][c]
        fp = sum(confusion[o][c] for o in labels) - tp
        fn = sum(confusion[c].values()) - tp
        p = tp / (tp + fp) if tp + fp else 0.0
        rcl = tp / (tp + fn) if tp + fn else 0.0
        per[c] = {"support": tp + fn, "precision": round(p, 3), "recall": round(rcl, 3),
                  "f1": round(2 * p * rcl / (p + rcl), 3) if p + rcl else 0.0}
    hits = [r["evidence_hit"] for r in results
            if r["evidence_hit"] is not None and r["label"] == r["predicted"]]
    correct = sum(r["label"] == r["predicted"] for r in results)
    quiet = [r for r in results if r["label"] in ("none", "unknown")]
    return {
        "cases": len(results),
        "accuracy": round(correct / len(results), 4) if results else 0.0,
        "false_alarm_rate": round(sum(r["predicted"] not in ("none", "unknown") for r in quiet)
                                  / len(quiet), 4) if quiet else 0.0,
        "evidence_hit_rate": round(sum(hits) / len(hits), 4) if hits else None,
        "per_category": per,
        "confusion": confusion,
        "misses": [r for r in results if r["label"] != r["predicted"]],
    }


def _print_text(s, out):
    w = out.write
    w(f"cases {s['cases']}  accuracy {s['accuracy']:.1%}  evidence hit rate "
      f"{(s['evidence_hit_rate'] or 0):.1%}  none/unknown called a failure {s['false_alarm_rate']:.1%}\n\n")
    w(f"{'category':<22}{'support':>8}{'prec':>8}{'recall':>8}{'f1':>8}\n")
    for c, m in s["per_category"].items():
        w(f"{c:<22}{m['support']:>8}{m['precision']:>8.2f}{m['recall']:>8.2f}{m['f1']:>8.2f}\n")
    labels = list(s["confusion"])
    w("\nconfusion (rows: label, columns: predicted; ids abbreviated)\n")
    w(" " * 22 + "".join(f"{c[:5]:>6}" for c in labels) + "\n")
    for a in labels:
        w(f"{a:<22}" + "".join(f"{s['confusion'][a][b] or '.':>6}" for b in labels) + "\n")
    if s["misses"]:
        w("\nmisses\n")
        for r in s["misses"]:
            w(f"  {r['case']}: {r['label']} -> {r['predicted']} ({r['rule']})\n")


def main(argv):
    """Entry point of `dsdiag eval`."""
    p = argparse.ArgumentParser(prog="dsdiag eval", description="Score dsdiag on a labelled corpus.")
    p.add_argument("path", help="corpus directory (cases: NAME.log + NAME.yaml with `label`)")
    p.add_argument("-f", "--format", choices=("text", "json"), default="text")
    p.add_argument("--min-accuracy", type=float, default=None,
                   help="exit 1 when accuracy falls below this fraction (CI baseline)")
    args = p.parse_args(argv)
    if not Path(args.path).is_dir():
        sys.stderr.write(f"dsdiag: error: {args.path}: not a directory\n")
        return 2
    s = evaluate(args.path)
    if args.format == "json":
        json.dump(s, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_text(s, sys.stdout)
    if args.min_accuracy is not None and s["accuracy"] < args.min_accuracy:
        sys.stderr.write(f"dsdiag: accuracy {s['accuracy']:.1%} is below the baseline "
                         f"{args.min_accuracy:.1%}\n")
        return 1
    return 0
