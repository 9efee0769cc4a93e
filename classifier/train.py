"""Train the fallback model on the corpus and export it as plain JSON (`make model`).

    python -m classifier.train [--corpus corpus] [--out classifier/model.json] [--cv-only]

Cross-validation holds out whole scenario families (GroupKFold on `family`), so no family
seen in training is ever scored; the out-of-fold probabilities calibrate the threshold below
which the model answers `unknown`. Needs scikit-learn; nothing at run time imports this file.
"""

import argparse
import json
import sys
from pathlib import Path

from .evaluate import find_cases
from .model import TOKEN, TextModel
from .region import region_of_files, region_text

MAX_FEATURES = 3000
FOLDS = 5
TARGET_PRECISION = 0.9   # of the model's answers above the threshold, out of fold
QUIET = ("unknown", "none")


def load_corpus(root):
    """Return (texts, labels, groups) for every labelled case under `root`."""
    texts, labels, groups = [], [], []
    for log, meta in find_cases(root):
        texts.append(region_text(region_of_files([str(log)])))
        labels.append(meta["label"])
        groups.append(str(meta.get("family") or log.stem))
    return texts, labels, groups


def make_pipeline():
    """The vectorizer and classifier, with every knob that affects the export fixed."""
    import numpy
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    vec = TfidfVectorizer(lowercase=True, token_pattern=TOKEN.pattern, ngram_range=(1, 2),
                          sublinear_tf=True, min_df=2, max_features=MAX_FEATURES,
                          dtype=numpy.float64)
    clf = LogisticRegression(C=10.0, max_iter=5000, class_weight="balanced")
    return vec, clf


def cross_validate(texts, labels, groups):
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


def calibrate(oof, labels):
    """Lowest threshold whose out-of-fold answers (a failure category) are TARGET_PRECISION right."""
    answers = sorted(((p, pred == gold) for (pred, p), gold in zip(oof, labels)
                      if pred not in QUIET), reverse=True)
    best, right = 1.0, 0
    for n, (p, ok) in enumerate(answers, 1):
        right += ok
        if right / n >= TARGET_PRECISION:
            best = p
    return round(best, 4)


def report(oof, labels, threshold, out):
    """Print the honest (held-out family) scores of the model alone."""
    n = len(labels)
    plain = sum(pred == gold for (pred, _), gold in zip(oof, labels))
    gated = [(pred if p >= threshold and pred not in QUIET else "unknown", gold)
             for (pred, p), gold in zip(oof, labels)]
    answered = [(pred, gold) for pred, gold in gated if pred != "unknown"]
    quiet = [pred for pred, gold in gated if gold in QUIET]
    out.write(f"held-out-family CV over {n} cases: argmax accuracy {plain / n:.1%}\n")
    out.write(f"threshold {threshold}: answers {len(answered)} cases, precision "
              f"{sum(a == b for a, b in answered) / max(1, len(answered)):.1%}; "
              f"none/unknown called a failure {sum(q != 'unknown' for q in quiet) / max(1, len(quiet)):.1%}\n")


def export(vec, clf, threshold):
    """The fitted model as plain data for classifier.model.TextModel."""
    return {
        "format": 1,
        "classes": [str(c) for c in clf.classes_],
        "vocabulary": {term: int(col) for term, col in sorted(vec.vocabulary_.items())},
        "idf": [float(v) for v in vec.idf_],
        "coef": [[float(v) for v in row] for row in clf.coef_],
        "intercept": [float(v) for v in clf.intercept_],
        "threshold": threshold,
        "ngram_max": 2,
    }


def main(argv=None):
    """Train, cross-validate and export."""
    p = argparse.ArgumentParser(prog="python -m classifier.train")
    p.add_argument("--corpus", default="corpus")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "model.json"))
    p.add_argument("--cv-only", action="store_true")
    args = p.parse_args(argv)
    texts, labels, groups = load_corpus(args.corpus)
    oof = cross_validate(texts, labels, groups)
    threshold = calibrate(oof, labels)
    report(oof, labels, threshold, sys.stdout)
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
