"""`dsdiag eval PATH`: score the full diagnosis against a labelled corpus.

A case is `<name>.log` (or `.log.gz`) with a sidecar `<name>.yaml` holding at least `label`
and, where known, `evidence_lines`. Reports per-category precision / recall / F1, the
confusion matrix, the evidence-line hit rate and every miss, over all cases and for each
segment apart: `real-run`, `synthesized`, `public-dev`, `public-test` (the sidecar's `origin`,
and for public cases its `split`). public-test is held out from every rule and model change,
so its accuracy is the figure to quote; the others flatter the tool. Its misses are counted by
(label, answer) and not named unless `--show-test-misses` asks: a name read is a case seen.

A sidecar may also hold the expected `culprit: {ranks: [...], hosts: [...]}` (multi-rank jobs):
the culprit is right when the category is right, the hosts are exactly those, and the ranks too
where the sidecar lists any. Naming a wrong host is worse than naming none, and counted apart.
"""

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from classifier.diagnosis.diagnose import diagnose_job
from classifier.rules.load import default_rules
from classifier.taxonomy import ALL_IDS

if TYPE_CHECKING:
    from classifier.rules.model import RuleSet


def find_cases(root: str | Path) -> Iterator[tuple[Path, dict]]:
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


SEGMENTS = ("real-run", "synthesized", "public-dev", "public-test")


def segment_of(meta: dict) -> str:
    """The scoring segment of a case: its origin, and for public cases its split."""
    origin = str(meta.get("origin") or "synthesized")
    return f"public-{meta.get('split', 'dev')}" if origin == "public" else origin


def evaluate(root: str | Path, rules: "RuleSet | None" = None) -> dict:
    """Diagnose every case under `root` and return the scores as plain data."""
    rules = rules or default_rules()
    results = []
    for log, meta in find_cases(root):
        d = diagnose_job([str(log)], rules)
        wanted = set(meta.get("evidence_lines") or ())
        got = {ev["line"] for ev in d["evidence"]}
        results.append({
            "case": str(log), "label": meta["label"], "predicted": d["category"],
            "rule": d["rule"], "family": meta.get("family"), "segment": segment_of(meta),
            "high": meta.get("confidence") == "high",
            "evidence_hit": bool(wanted & got) if wanted else None,
            "evidence": [ev["line"] for ev in d["evidence"][:3]],
            **culprit_score(meta, d),
        })
    scores = score(results)
    scores["segments"] = {}
    for name in SEGMENTS:
        part = [r for r in results if r["segment"] == name]
        if part:
            s = score(part)
            scores["segments"][name] = {k: s[k] for k in ("cases", "accuracy", "false_alarm_rate",
                                                          "evidence_hit_rate", "counts")}
            # The hidden real-world sets are judged on their high-confidence labels only.
            high = [r for r in part if r["high"]]
            if high:
                right = sum(r["label"] == r["predicted"] for r in high)
                scores["segments"][name].update(high_cases=len(high), high_accuracy=round(right / len(high), 4))
                scores["segments"][name]["counts"] = {**s["counts"], "high_accuracy": (right, len(high))}
            if s["culprit_cases"]:
                scores["segments"][name].update(
                    {k: s[k] for k in ("culprit_cases", "culprit_accuracy", "culprit_wrong_host")})
    return scores


def culprit_score(meta: dict, d: dict) -> dict:
    """{culprit_hit, culprit_wrong_host} for a case whose sidecar names its culprit, else {}."""
    want = meta.get("culprit")
    if not isinstance(want, dict):
        return {}
    got = d.get("culprit") or {}
    hosts, ranks = sorted(want.get("hosts") or []), sorted(want.get("ranks") or [])
    got_hosts = sorted(got.get("hosts") or [])
    hit = (d["category"] == meta["label"] and got_hosts == hosts
           and (not ranks or sorted(got.get("ranks") or []) == ranks))
    return {"culprit_hit": hit, "culprit_wrong_host": bool(got_hosts) and got_hosts != hosts,
            "culprit": got or None}


def score(results: list[dict]) -> dict:
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
    alarms = sum(r["predicted"] not in ("none", "unknown") for r in quiet)
    named = [r for r in results if "culprit_hit" in r]
    return {
        "cases": len(results),
        "accuracy": round(correct / len(results), 4) if results else 0.0,
        "false_alarm_rate": round(alarms / len(quiet), 4) if quiet else 0.0,
        "evidence_hit_rate": round(sum(hits) / len(hits), 4) if hits else None,
        "culprit_cases": len(named),
        "culprit_accuracy": round(sum(r["culprit_hit"] for r in named) / len(named), 4) if named else None,
        "culprit_wrong_host": sum(r["culprit_wrong_host"] for r in named),
        "per_category": per,
        "confusion": confusion,
        "misses": [r for r in results if r["label"] != r["predicted"]],
        "culprit_misses": [r for r in named if not r["culprit_hit"]],
        # (numerator, denominator) of each share: the text report rounds once, from these, not
        # again from the four-digit shares (962 of 1,164 is 82.6%, its 0.8265 would print 82.7%)
        "counts": {"accuracy": (correct, len(results)), "false_alarm_rate": (alarms, len(quiet)),
                   "evidence_hit_rate": (sum(hits), len(hits))},
    }


def withhold_test_names(s: dict) -> dict:
    """Replace public-test misses by per-(label, answer) counts, so no held-out name is read."""
    out = dict(s)
    counts: dict[str, int] = {}
    for key in ("misses", "culprit_misses"):
        kept = []
        for r in s.get(key, []):
            if r["segment"] != "public-test":
                kept.append(r)
            elif key == "misses":
                pair = f"{r['label']} -> {r['predicted']}"
                counts[pair] = counts.get(pair, 0) + 1
        out[key] = kept
    out["held_out_misses"] = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return out


def _pct(m: dict, key: str) -> str:
    """A share as the text report prints it: one decimal, rounded once from its counts."""
    num, den = (m.get("counts") or {}).get(key) or (None, None)
    return f"{num / den:.1%}" if den else f"{(m.get(key) or 0):.1%}"


def _print_text(s, out):
    w = out.write
    held = (s.get("segments") or {}).get("public-test")
    if held:
        # The held-out figure leads: the all-cases line and public-dev are mostly what the rules
        # were written from, so they say little about the next thread.
        high = f"  high-confidence {_pct(held, 'high_accuracy')} of {held['high_cases']}" \
            if held.get("high_cases") else ""
        w(f"public-test (held out from every rule and model change: the figure to quote): "
          f"cases {held['cases']}  accuracy {_pct(held, 'accuracy')}{high}  none/unknown called "
          f"a failure {_pct(held, 'false_alarm_rate')}\n")
        w("all cases, public-dev included (what the rules are written from; not a figure to "
          "quote): ")
    w(f"cases {s['cases']}  accuracy {_pct(s, 'accuracy')}  evidence hit rate "
      f"{_pct(s, 'evidence_hit_rate')}  none/unknown called a failure {_pct(s, 'false_alarm_rate')}\n\n")
    if s.get("segments"):
        w(f"{'segment':<22}{'cases':>8}{'accuracy':>10}{'evidence':>10}{'false alarm':>13}"
          f"{'high-confidence':>22}\n")
        # public-test first, the row to quote
        for name, m in sorted(s["segments"].items(), key=lambda kv: kv[0] != "public-test"):
            high = (f"{_pct(m, 'high_accuracy')} of {m['high_cases']}" if m.get("high_cases") else "")
            w(f"{name:<22}{m['cases']:>8}{_pct(m, 'accuracy'):>10}{_pct(m, 'evidence_hit_rate'):>10}"
              f"{_pct(m, 'false_alarm_rate'):>13}{high:>22}\n")
        for name, m in s["segments"].items():
            if m.get("culprit_cases"):
                w(f"{name}: culprit right in {m['culprit_accuracy']:.1%} of {m['culprit_cases']} "
                  f"multi-rank cases, a wrong host named in {m['culprit_wrong_host']}\n")
        w("\n")
    w(f"{'category':<22}{'support':>8}{'prec':>8}{'recall':>8}{'f1':>8}\n")
    for c, m in s["per_category"].items():
        w(f"{c:<22}{m['support']:>8}{m['precision']:>8.2f}{m['recall']:>8.2f}{m['f1']:>8.2f}\n")
    labels = list(s["confusion"])
    w("\nconfusion (rows: label, columns: predicted; ids abbreviated)\n")
    w(" " * 22 + "".join(f"{c[:5]:>6}" for c in labels) + "\n")
    for a in labels:
        w(f"{a:<22}" + "".join(f"{s['confusion'][a][b] or '.':>6}" for b in labels) + "\n")
    culprit_misses = [r for r in s.get("culprit_misses", [])]
    if culprit_misses:
        w("\nculprit misses\n")
        for r in culprit_misses:
            c = r["culprit"]
            named = f"{c['ranks']} on {c['hosts']}" if c else "none"
            w(f"  [{r['segment']}] {r['case']}: named {named}\n")
    if s["misses"]:
        w("\nmisses\n")
        for r in s["misses"]:
            w(f"  [{r['segment']}] {r['case']}: {r['label']} -> {r['predicted']} ({r['rule']})\n")
    if s.get("held_out_misses"):
        w("\npublic-test misses, counted (names withheld: --show-test-misses lists them)\n")
        for pair, n in s["held_out_misses"].items():
            w(f"  {n:>4}  {pair}\n")


def main(argv: list[str]) -> int:
    """Entry point of `dsdiag eval`."""
    p = argparse.ArgumentParser(prog="dsdiag eval", description="Score dsdiag on a labelled corpus.")
    p.add_argument("path", help="corpus directory (cases: NAME.log + NAME.yaml with `label`)")
    p.add_argument("-f", "--format", choices=("text", "json"), default="text")
    p.add_argument("--min-accuracy", type=float, default=None,
                   help="exit 1 when accuracy falls below this fraction (CI baseline)")
    p.add_argument("--show-test-misses", action="store_true",
                   help="name the public-test cases missed (by default only counted, so that "
                        "reading the report does not leak the held-out set into rule work)")
    args = p.parse_args(argv)
    if not Path(args.path).is_dir():
        sys.stderr.write(f"dsdiag: error: {args.path}: not a directory\n")
        return 2
    s = evaluate(args.path)
    if not s["cases"]:  # scoring nothing is not a pass: a wrong path would turn CI green
        sys.stderr.write(f"dsdiag: error: {args.path}: no cases (NAME.log or NAME.log.gz with a "
                         f"NAME.yaml that holds `label`)\n")
        return 2
    shown = s if args.show_test_misses else withhold_test_names(s)
    if args.format == "json":
        json.dump(shown, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_text(shown, sys.stdout)
    if args.min_accuracy is not None and s["accuracy"] < args.min_accuracy:
        sys.stderr.write(f"dsdiag: accuracy {s['accuracy']:.1%} is below the baseline "
                         f"{args.min_accuracy:.1%}\n")
        return 1
    return 0
