"""How does the fallback model do on the held-out public test split?

    python benchmarks/model_on_test.py [--corpus corpus] [-v]

Every `origin: public`, `split: test` case is diagnosed twice: without the model, to find the
failures no rule explains (the model is asked only about those), and with it. Prints

  (a) when the model speaks (its answer is used: no rule fired and its probability is above
      its class's threshold), how often it is right;
  (b) among the test failures no rule explains, how many the model turns into right answers
      and how many into wrong ones (an `unknown`-labelled case it names is a wrong one), and
      how many it leaves `unknown`.

The test split is held out from training and from every choice of features and settings:
this script only reads the outcome, never feeds it back.
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from classifier.corpus.evaluate import find_cases  # noqa: E402
from classifier.diagnosis.diagnose import diagnose_job  # noqa: E402


def run(corpus: Path, verbose: bool = False) -> dict:
    """Diagnose the public test cases with and without the model; return the counts."""
    cases = unexplained = spoke = right = wrong = 0
    for log, meta in find_cases(corpus / "public"):
        if meta.get("origin") != "public" or meta.get("split") != "test":
            continue
        cases += 1
        alone = diagnose_job([str(log)], use_model=False)
        if alone["category"] != "unknown" or alone["rule"] is not None:
            continue  # a rule fired, or no failure was found: the model is not asked
        unexplained += 1
        with_model = diagnose_job([str(log)])
        if with_model["source"] != "model":
            continue
        spoke += 1
        ok = with_model["category"] == meta["label"]
        right += ok
        wrong += not ok
        if verbose:
            print(f"  {'right' if ok else 'WRONG'}  {log.relative_to(corpus)}: model says "
                  f"{with_model['category']} ({with_model['confidence']}), label {meta['label']}")
    return {"cases": cases, "unexplained": unexplained, "spoke": spoke, "right": right,
            "wrong": wrong}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/model_on_test.py")
    p.add_argument("--corpus", default=str(ROOT / "corpus"))
    p.add_argument("-v", "--verbose", action="store_true", help="list every case the model answers")
    args = p.parse_args(argv)
    r = run(Path(args.corpus), args.verbose)
    precision = r["right"] / r["spoke"] if r["spoke"] else float("nan")
    print(f"public test cases: {r['cases']}; failures no rule explains: {r['unexplained']}")
    print(f"(a) when the model speaks it is right {r['right']} of {r['spoke']} times "
          f"({precision:.1%}; the bar is 85%)")
    print(f"(b) of the {r['unexplained']} failures no rule explains, the model turns {r['right']} "
          f"into right answers and {r['wrong']} into wrong ones; "
          f"{r['unexplained'] - r['spoke']} stay unknown")
    return 0


if __name__ == "__main__":
    sys.exit(main())
