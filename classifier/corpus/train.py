"""Train the fallback model on the corpus and export it as plain JSON (`make model`).

    python -m classifier.corpus.train [--corpus corpus] [--out classifier/diagnosis/model.json] [--cv-only]

Cross-validation holds out whole scenario families (GroupKFold on `family`), so no family
seen in training is ever scored; the out-of-fold probabilities calibrate the threshold below
which the model answers `unknown`. Needs scikit-learn; nothing at run time imports this file.
"""

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, Literal, TextIO, overload

from classifier.corpus.evaluate import find_cases
from classifier.diagnosis.fallback import MODEL_PATH, TOKEN, TextModel
from classifier.diagnosis.region import model_text, region_of_files
from classifier.taxonomy import TERMINAL

if TYPE_CHECKING:
    from pathlib import Path

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

# Chosen by held-out-group cross-validation on the training cases (12 group shufflings): over
# model_text's identifier words and frame/exception tokens, word unigrams beat uni+bigrams
# (more right answers where the model is used, at the same precision), and 1500 terms sit in
# the middle of a plateau (1000-3000 terms, C 5-15).
MAX_FEATURES = 1500
NGRAM_MAX = 1
FOLDS = 5
MAX_FALSE_ALARM = 0.05   # of unknown/none cases the model may call a category, out of fold
QUIET = ("unknown", "none")


@overload
def load_corpus(root: "str | Path",
                with_rule_outcome: Literal[False] = False) -> tuple[list[str], list[str], list[str]]:
    ...


@overload
def load_corpus(root: "str | Path",
                with_rule_outcome: Literal[True]) -> tuple[list[str], list[str], list[str], list[bool]]:
    ...


def load_corpus(
    root: "str | Path", with_rule_outcome: bool = False,
) -> tuple[list[str], list[str], list[str]] | tuple[list[str], list[str], list[str], list[bool]]:
    """Return (texts, labels, groups[, reaches_model]) for the training cases under `root`.

    Every labelled case except the public `split: test` ones, which are held out from training
    as from rule changes, and cases whose sidecar says `train: false` (the multi-rank culprit
    cases: they test where a failure started, and their failure text repeats families the
    model already learns from). A group is a case's family, else its repository (so cross-validation
    holds out whole repositories of public cases), else the case itself. `reaches_model` marks
    the cases the fallback model would see: a failure no rule explains. Cases of a terminal
    category are left out, so the model never answers one.
    """
    from classifier.diagnosis.diagnose import diagnose_job
    texts, labels, groups, reaches = [], [], [], []
    for log, meta in find_cases(root):
        # A scheduler's end (taxonomy.TERMINAL) must rest on a rule's explicit line: a guess
        # from words would call a failure no rule explains `job_cancelled` by its SIGTERM echo.
        if (meta.get("split") == "test" or meta["label"] in TERMINAL
                or meta.get("train") is False):
            continue
        texts.append(model_text(region_of_files([str(log)])))
        labels.append(meta["label"])
        groups.append(str(meta.get("family") or meta.get("repository") or log.stem))
        if with_rule_outcome:
            reaches.append(diagnose_job([str(log)], use_model=False)["category"] == "unknown")
    if with_rule_outcome:
        return texts, labels, groups, reaches
    return texts, labels, groups


def make_pipeline() -> "tuple[TfidfVectorizer, LogisticRegression]":
    """The vectorizer and classifier, with every knob that affects the export fixed."""
    import numpy
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    vec = TfidfVectorizer(lowercase=True, token_pattern=TOKEN.pattern, ngram_range=(1, NGRAM_MAX),
                          sublinear_tf=True, min_df=2, max_features=MAX_FEATURES,
                          dtype=numpy.float64)
    clf = LogisticRegression(C=10.0, max_iter=5000, class_weight="balanced")
    return vec, clf


def cross_validate(texts: list[str], labels: list[str], groups: list[str]) -> list[tuple[str, float]]:
    """Out-of-fold (predicted class, probability) per case, folds split by family."""
    from sklearn.model_selection import GroupKFold
    oof = [None] * len(texts)
    folds = GroupKFold(n_splits=min(FOLDS, len(set(groups))))
    for train, test in folds.split(texts, labels, groups):
        vec, clf = make_pipeline()
        x = vec.fit_transform([texts[i] for i in train])
        clf.fit(x, [labels[i] for i in train])
        proba = clf.predict_proba(vec.transform([texts[i] for i in test]))
        for i, row in zip(test, proba):
            best = int(row.argmax())
            oof[i] = (str(clf.classes_[best]), float(row[best]))
    return oof


def calibrate(oof: list[tuple[str, float]], labels: list[str], reaches: list[bool]) -> float:
    """The threshold for the cases the model really sees (failures no rule explains).

    Among those, answering a case labelled unknown/none is a false alarm. The threshold is the
    one that maximises right answers minus wrong ones and false alarms, out of fold, while
    false alarms stay under MAX_FALSE_ALARM of the unknown/none cases; 1.0 (never answer)
    when no threshold does better than silence.
    """
    seen = [(pred, p, gold) for (pred, p), gold, r in zip(oof, labels, reaches) if r]
    quiet = sum(gold in QUIET for _, _, gold in seen) or 1
    best, best_score = 1.0, 0
    for t in sorted({round(p, 4) for _, p, _ in seen}):
        answered = [(pred, gold) for pred, p, gold in seen if p >= t and pred not in QUIET]
        right = sum(pred == gold for pred, gold in answered)
        alarms = sum(gold in QUIET for _, gold in answered)
        score = right - (len(answered) - right) - alarms
        if alarms / quiet <= MAX_FALSE_ALARM and score > best_score:
            best, best_score = t, score
    return best


def report(oof: list[tuple[str, float]], labels: list[str], reaches: list[bool], threshold: float,
           out: TextIO) -> None:
    """Print the honest (held-out family) scores: the model alone, and where it is used."""
    n = len(labels)
    plain = sum(pred == gold for (pred, _), gold in zip(oof, labels))
    gated = [(pred if p >= threshold and pred not in QUIET else "unknown", gold)
             for (pred, p), gold in zip(oof, labels)]
    answered = [(pred, gold) for pred, gold in gated if pred != "unknown"]
    quiet = [pred for pred, gold in gated if gold in QUIET]
    out.write(f"held-out-family CV over {n} cases: argmax accuracy {plain / n:.1%}\n")
    out.write(f"threshold {threshold}, all cases: answers {len(answered)}, precision "
              f"{sum(a == b for a, b in answered) / max(1, len(answered)):.1%}; "
              f"none/unknown called a failure {sum(q != 'unknown' for q in quiet) / max(1, len(quiet)):.1%}\n")
    seen = [(g, gold) for (g, gold), r in zip(gated, reaches) if r]
    fixed = sum(g == gold != "unknown" for g, gold in seen)
    broke = sum(g != gold and gold in QUIET for g, gold in seen)
    wrong = sum(g != gold and gold not in QUIET and g != "unknown" for g, gold in seen)
    out.write(f"where the model is used ({len(seen)} failures no rule explains): right answers "
              f"{fixed}, wrong category {wrong}, unknown/none called a failure {broke}\n")


def export(vec: "TfidfVectorizer", clf: "LogisticRegression", threshold: float) -> dict[str, Any]:
    """The fitted model as plain data for classifier.diagnosis.fallback.TextModel."""
    return {
        "format": 1,
        "classes": [str(c) for c in clf.classes_],
        "vocabulary": {term: int(col) for term, col in sorted(vec.vocabulary_.items())},
        "idf": [float(v) for v in vec.idf_],
        "coef": [[float(v) for v in row] for row in clf.coef_],
        "intercept": [float(v) for v in clf.intercept_],
        "threshold": threshold,
        "ngram_max": int(vec.ngram_range[1]),
    }


def main(argv: list[str] | None = None) -> int:
    """Train, cross-validate and export."""
    p = argparse.ArgumentParser(prog="python -m classifier.corpus.train")
    p.add_argument("--corpus", default="corpus")
    p.add_argument("--out", default=str(MODEL_PATH))
    p.add_argument("--cv-only", action="store_true")
    args = p.parse_args(argv)
    # One BLAS/OpenMP thread: a multi-threaded reduction sums in a different order from run to
    # run. (The last bits may still differ between processes: numpy's SIMD sums depend on
    # memory alignment; tests/diagnosis/test_fallback.py compares to rounding.)
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=1):
        return _train(args)


def _train(args):
    texts, labels, groups, reaches = load_corpus(args.corpus, with_rule_outcome=True)
    oof = cross_validate(texts, labels, groups)
    threshold = calibrate(oof, labels, reaches)
    report(oof, labels, reaches, threshold, sys.stdout)
    if args.cv_only:
        return 0
    vec, clf = make_pipeline()
    clf.fit(vec.fit_transform(texts), labels)
    data = export(vec, clf, threshold)
    TextModel(data)  # the exported shape must load
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {args.out}: {len(data['classes'])} classes, {len(data['vocabulary'])} terms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
