"""`dsdiag eval`'s text report rounds each share once, from its counts: 1 of 26 is 3.8%, though
the four-digit share kept in the JSON (0.0385) would print 3.9% if rounded again."""

import json
import subprocess
import sys

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
       "capacity of 79.15 GiB of which 1.07 GiB is free.\n")
HEALTHY = "[INFO] step 10 loss 2.31\n"


def _eval(corpus, *args):
    return subprocess.run([sys.executable, "-m", "classifier", "eval", str(corpus), *args],
                          capture_output=True, text=True, timeout=120)


def test_text_report_rounds_once_from_the_counts(tmp_path):
    for i in range(26):
        (tmp_path / f"case{i:02d}.log").write_text(OOM if i == 0 else HEALTHY)
        (tmp_path / f"case{i:02d}.yaml").write_text("label: gpu_oom\nevidence_lines: [1]\n")
    text = _eval(tmp_path)
    data = json.loads(_eval(tmp_path, "--format", "json").stdout)
    assert data["accuracy"] == 0.0385 and data["counts"]["accuracy"] == [1, 26]
    assert text.stdout.startswith("cases 26  accuracy 3.8%  evidence hit rate 100.0%"), text.stdout[:200]


def test_text_report_leads_with_the_held_out_figure(tmp_path):
    # A dev case right and a test case wrong: the first line is the test figure, not the mix.
    for name, text, split in (("dev", OOM, "dev"), ("held", HEALTHY, "test")):
        (tmp_path / f"{name}.log").write_text(text)
        (tmp_path / f"{name}.yaml").write_text(
            f"label: gpu_oom\norigin: public\nsplit: {split}\nconfidence: high\nevidence_lines: [1]\n")
    lines = _eval(tmp_path).stdout.splitlines()
    assert lines[0].startswith("public-test (held out") and "cases 1  accuracy 0.0%" in lines[0], lines[:3]
    assert lines[1].startswith("all cases, public-dev included") and "accuracy 50.0%" in lines[1]
    table = lines[lines.index(next(l for l in lines if l.startswith("segment"))) + 1]
    assert table.startswith("public-test"), table
