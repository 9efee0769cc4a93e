"""The default command reads its common command lines without argparse, and reads them as
argparse does; everything else still goes to argparse."""

import subprocess
import sys

import pytest

from classifier.diagnosis.command import _parser
from classifier.diagnosis.quickargs import quick_args
from classifier.render import FORMATS
from conftest import ROOT

READ_HERE = [
    [], ["a.log"], ["a.log", "b.log", "-"], ["-"],
    ["--format", "json", "a.log"], ["a.log", "--format=markdown"], ["-f", "json", "x", "y"],
    ["--color", "never", "--exit-zero", "--no-redact", "a.log"],
    ["--rules-dir", "r1", "--rules-dir=r2", "a.log"], ["--report", "out.txt", "a.log"],
    ["--tee"], ["--tee", "--report", "r.txt", "-f", "json"], ["--follow", "a.log"],
    ["a.log", "b.log", "--color=always", "--exit-zero"],
]
LEFT_TO_ARGPARSE = [
    ["-h"], ["--help"], ["--version"], ["--", "a.log"], ["--form", "json", "a.log"],
    ["--format", "yaml", "a.log"], ["--color", "blue"], ["--format"], ["--format="],
    ["-fjson", "a.log"], ["--report", "-x"], ["--exit-zero=1"], ["a.log", "--tee", "b.log"],
    ["--idle", "3", "--follow", "a.log"], ["--pid", "1", "--follow", "a"], ["--max-ratio", "5"],
    ["--k8s-termination-log", "a.log"], ["-1"], ["--bogus", "a.log"],
]


@pytest.mark.parametrize("argv", READ_HERE, ids=" ".join)
def test_common_lines_read_exactly_as_argparse_reads_them(argv):
    quick = quick_args(argv, FORMATS)
    assert quick is not None
    assert vars(quick) == vars(_parser(("triage",)).parse_args(argv))


@pytest.mark.parametrize("argv", LEFT_TO_ARGPARSE, ids=" ".join)
def test_every_other_line_is_left_to_argparse(argv):
    assert quick_args(argv, FORMATS) is None


def test_interleaved_files_are_still_argparses_error():
    proc = subprocess.run([sys.executable, "-m", "classifier", "a.log", "--exit-zero", "b.log"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and "unrecognized arguments: b.log" in proc.stderr
