"""Train the fallback model on the corpus and export it as plain JSON (`make model`).

    python -m classifier.corpus.train [--corpus corpus] [--out classifier/diagnosis/model.json] [--cv-only]

Cross-validation holds out whole scenario families and repositories (`family`, else
`repository`), so no group seen in training is ever scored; over several shufflings of the
groups, the out-of-fold answers set a threshold for each category (`calibrate`), and a check on
the failures no rule explains decides whether the model may speak at all. Needs scikit-learn;
nothing at run time imports this file.
"""

import argparse
import hashlib
import json
import sys
from typing import TYPE_CHECKING, Any, Literal, TextIO, overload

from classifier.corpus.evaluate import find_cases
from classifier.diagnosis.fallback import MODEL_PATH, QUIET, TOKEN, TextModel
from classifier.diagnosis.region import model_text, region_of_files
from classifier.taxonomy import TERMINAL

if TYPE_CHECKING:
    from pathlib import Path

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

# Chosen by held-out-group cross-validation on the training cases, judged by `nested_check`
# over two sets of fold shufflings and several partitions of its groups: word uni- and bigrams
# over 3000 terms, C 10. Unigrams alone named a rendezvous-frames connection failure
# port_conflict more often (precision under MIN_PRECISION on one set of shufflings).
MAX_FEATURES = 3000
NGRAM_MAX = 2
FOLDS = 5
SHUFFLINGS = 5           # fold assignments of the groups, so one lucky split decides nothing
# A category is answered from the lowest probability on GRID at which, out of fold over the
# training cases, at least CLASS_PRECISION of the model's answers of it are right, over at least
# CLASS_MIN_ANSWERS answers, and none of them names an unknown/none case: where the model is
# used those outnumber known failures about seven to one, so a category that ever names one out
# of fold names many there.
GRID = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))
CLASS_PRECISION = 0.98
CLASS_MIN_ANSWERS = 10
# ... and then SAFETY_STEPS steps of GRID above that (a category whose threshold would pass the
# top of GRID is not answered): held out, a group's unknown cases sat just above the threshold
# set without them (1-2 steps), so the lowest clean threshold is no threshold for unseen groups.
SAFETY_STEPS = 3
# Then the check where the model is really asked (failures no rule explains), with thresholds
# set without the case's own group (`nested_check`): its answers there must be right
# MIN_PRECISION of the time, and right answers must beat wrong ones plus false alarms by MIN_NET
# per shuffling; else it stays silent. The margin is one answer a shuffling: how folds fall moves
# the right count by a few (12 then 9 right, 0 wrong, on corpora 31 dev cases apart).
MIN_PRECISION = 0.90
MIN_NET = 1


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


def frames_only(text: str) -> str:
    """The frame tokens of a model text (`frame_*`, `func_*`), without its words.

    Training adds this copy of every case (same label, same group): where the model is used the
    paste is often cut before its message, and only the frames are left to tell the failure;
    without the copies the model learns the words and is never sure of frames alone."""
    return " ".join(w for w in text.split() if w.startswith(("frame_", "func_")))


def with_frame_copies(texts: list[str], labels: list[str]) -> tuple[list[str], list[str]]:
    """`texts` and `labels`, followed by each case's `frames_only` copy where it differs."""
    out_texts, out_labels = list(texts), list(labels)
    for text, label in zip(texts, labels):
        frames = frames_only(text)
        if frames and frames != text.strip():
            out_texts.append(frames)
            out_labels.append(label)
    return out_texts, out_labels


def group_folds(groups: list[str], seed: int) -> list[int]:
    """A fold per case: groups in a seeded hash order, each to the fold with fewest cases so far.

    Deterministic across processes and library versions (sha1, not Python's salted hash)."""
    size = {}
    for g in groups:
        size[g] = size.get(g, 0) + 1
    order = sorted(size, key=lambda g: (-size[g], hashlib.sha1(f"{seed}:{g}".encode()).hexdigest()))
    load, fold_of = [0] * min(FOLDS, len(size)), {}
    for g in order:
        fold_of[g] = min(range(len(load)), key=lambda k: (load[k], k))
        load[fold_of[g]] += size[g]
    return [fold_of[g] for g in groups]


def cross_validate(texts: list[str], labels: list[str], groups: list[str],
                   seed: int = 0) -> list[tuple[str, float]]:
    """Out-of-fold (predicted class, probability) per case, folds split by group.

    A text with no term of its fold's vocabulary gets ("unknown", 0.0): TextModel.answer stays
    silent on it."""
    folds = group_folds(groups, seed)
    oof: list[tuple[str, float]] = [("unknown", 0.0)] * len(texts)
    for k in sorted(set(folds)):
        train = [i for i, f in enumerate(folds) if f != k]
        test = [i for i, f in enumerate(folds) if f == k]
        vec, clf = make_pipeline()
        fit_texts, fit_labels = with_frame_copies([texts[i] for i in train], [labels[i] for i in train])
        clf.fit(vec.fit_transform(fit_texts), fit_labels)
        x = vec.transform([texts[i] for i in test])
        for i, row, terms in zip(test, clf.predict_proba(x), x.getnnz(axis=1)):
            best = int(row.argmax())
            if terms:
                oof[i] = (str(clf.classes_[best]), float(row[best]))
    return oof


def _answers(oof: list[tuple[str, float]], thresholds: dict[str, float]) -> list[str]:
    """What the model says of each case: its class where that class's threshold is reached."""
    return [pred if pred in thresholds and p >= thresholds[pred] else "unknown" for pred, p in oof]


def where_used(oofs: list[list[tuple[str, float]]], labels: list[str], reaches: list[bool],
               thresholds: dict[str, float]) -> tuple[int, int, int]:
    """(right, wrong category, unknown/none called a failure) over the cases the model sees."""
    right = wrong = alarms = 0
    for oof in oofs:
        for said, gold, r in zip(_answers(oof, thresholds), labels, reaches):
            if r and said != "unknown":
                right += said == gold
                alarms += gold in QUIET
                wrong += said != gold and gold not in QUIET
    return right, wrong, alarms


def class_thresholds(oofs: list[list[tuple[str, float]]], labels: list[str],
                     use: "list[bool] | None" = None) -> dict[str, float]:
    """Each category's threshold from the out-of-fold answers of the cases `use` marks (all)."""
    answers: dict[str, list[tuple[float, str]]] = {}
    for oof in oofs:
        for i, ((pred, p), gold) in enumerate(zip(oof, labels)):
            if (use is None or use[i]) and pred not in QUIET:
                answers.setdefault(pred, []).append((p, gold))
    thresholds = {}
    for cls, said in sorted(answers.items()):
        for t in GRID:
            golds = [gold for p, gold in said if p >= t]
            right = sum(gold == cls for gold in golds)
            if (len(golds) >= CLASS_MIN_ANSWERS and right >= CLASS_PRECISION * len(golds)
                    and not any(gold in QUIET for gold in golds)):
                step = GRID.index(t) + SAFETY_STEPS
                if step < len(GRID):
                    thresholds[cls] = GRID[step]
                break
    return thresholds


def nested_check(oofs: list[list[tuple[str, float]]], labels: list[str], reaches: list[bool],
                 groups: list[str]) -> tuple[int, int, int]:
    """(right, wrong, false alarms) where the model is used, each case judged by thresholds
    set from the other groups' cases: calibrating on the very cases it is scored on would
    hide the false alarms it makes on groups it has not seen."""
    parts = group_folds(groups, SHUFFLINGS)   # a seed no shuffling used
    right = wrong = alarms = 0
    for k in sorted(set(parts)):
        thresholds = class_thresholds(oofs, labels, [part != k for part in parts])
        r, w, a = where_used(oofs, labels, [r and part == k for r, part in zip(reaches, parts)],
                             thresholds)
        right, wrong, alarms = right + r, wrong + w, alarms + a
    return right, wrong, alarms


def calibrate(oofs: list[list[tuple[str, float]]], labels: list[str], reaches: list[bool],
              groups: list[str]) -> dict[str, float]:
    """Each answerable category's threshold; {} (the model stays silent) when the check fails."""
    right, wrong, alarms = nested_check(oofs, labels, reaches, groups)
    if right < MIN_PRECISION * (right + wrong + alarms) or right - wrong - alarms < MIN_NET * len(oofs):
        return {}
    return class_thresholds(oofs, labels)


def report(oofs: list[list[tuple[str, float]]], labels: list[str], reaches: list[bool],
           groups: list[str], thresholds: dict[str, float], out: TextIO) -> None:
    """Print the honest (held-out group) scores: the model alone, and where it is used."""
    n, k = len(labels), len(oofs)
    plain = sum(pred == gold for oof in oofs for (pred, _), gold in zip(oof, labels))
    out.write(f"held-out-group CV over {n} cases, {k} shufflings: argmax accuracy {plain / (n * k):.1%}\n")
    calibrated = class_thresholds(oofs, labels)
    out.write("class thresholds: " + ", ".join(f"{c} {t}" for c, t in calibrated.items()) + "\n")
    used = f"where the model is used ({sum(reaches)} failures no rule explains, x{k} shufflings)"
    for how, (right, wrong, alarms) in (
            ("thresholds set on the same cases", where_used(oofs, labels, reaches, calibrated)),
            ("thresholds set without the case's group", nested_check(oofs, labels, reaches, groups))):
        out.write(f"{used}, {how}: right {right}, wrong category {wrong}, unknown/none called a "
                  f"failure {alarms}; precision {right / max(1, right + wrong + alarms):.1%}\n")
    out.write("shipped: " + ("answers " + ", ".join(thresholds) if thresholds else "silent") + "\n")


def export(vec: "TfidfVectorizer", clf: "LogisticRegression",
           thresholds: dict[str, float]) -> dict[str, Any]:
    """The fitted model as plain data for classifier.diagnosis.fallback.TextModel."""
    return {
        "format": 2,
        "classes": [str(c) for c in clf.classes_],
        "vocabulary": {term: int(col) for term, col in sorted(vec.vocabulary_.items())},
        "idf": [float(v) for v in vec.idf_],
        "coef": [[float(v) for v in row] for row in clf.coef_],
        "intercept": [float(v) for v in clf.intercept_],
        "thresholds": dict(sorted(thresholds.items())),
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
    oofs = [cross_validate(texts, labels, groups, seed) for seed in range(SHUFFLINGS)]
    thresholds = calibrate(oofs, labels, reaches, groups)
    report(oofs, labels, reaches, groups, thresholds, sys.stdout)
    if args.cv_only:
        return 0
    vec, clf = make_pipeline()
    fit_texts, fit_labels = with_frame_copies(texts, labels)
    clf.fit(vec.fit_transform(fit_texts), fit_labels)
    data = export(vec, clf, thresholds)
    TextModel(data)  # the exported shape must load
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {args.out}: {len(data['classes'])} classes, {len(data['vocabulary'])} terms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
