"""A big file scanned by two processes (classifier/diagnosis/split.py) gives the same lines and
the same diagnosis as one process reading it, whatever the child does."""

import os

import pytest

from classifier.diagnosis import split
from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.prefilter import select_lines
from classifier.diagnosis.read import Warnings, byte_chunks
from classifier.rules.load import default_rules
from noise import healthy_lines

pytest.importorskip("hyperscan", reason="installed with dsdiag on Linux x86_64")
RULES = default_rules()
CHUNK = 64 * 1024  # small chunks: a few MB of log make dozens of them, the child half


def _log(tmp_path, long_line=False, scale=1):
    """Healthy chatter with failure words around a storm, a long line and an OOM at the end."""
    lines = list(healthy_lines(40000 * scale, seed=3))
    storm = [f"[rank{i % 8}]: WARNING:urllib3.connectionpool:Retrying (Retry(total=4)) after connection "
             f"broken by 'NewConnectionError(...: [Errno 111] Connection refused')': /api/{i}"
             for i in range(3000)]
    tail = ["[rank3]: Traceback (most recent call last):",
            '[rank3]:   File "train.py", line 9, in <module>',
            "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 "
            "has a total capacity of 79.15 GiB of which 1.02 GiB is free."]
    body = lines[:15000 * scale] + storm + lines[15000 * scale:30000 * scale]
    if long_line:
        body.append("[rank1]: x=" + "ab " * (3 * CHUNK // 3))  # longer than a block: no newline in it
    body += lines[30000 * scale:] + tail
    path = tmp_path / "job.log"
    path.write_text("\n".join(body) + "\n")
    return path


@pytest.fixture
def used(monkeypatch):
    """Split files from 4 chunks on; count the chunks whose scan came from the child."""
    monkeypatch.setattr(split, "SPLIT_MIN", 0)
    sent = []
    original = split.Child.result

    def result(self, k):
        got = original(self, k)
        sent.append(got is not None)
        return got
    monkeypatch.setattr(split.Child, "result", result)
    return sent


def _lines(path, monkeypatch=None, child=True):
    """The lines selected from the file at `path` in two processes (or, not `child`, with the
    same chunks all scanned here), and the warnings."""
    if not child:
        monkeypatch.setattr(split.Child, "result", lambda self, k: None)
    warnings = Warnings()
    out = [(r.lineno, r.text) for r in select_lines(
        byte_chunks(str(path), warnings, CHUNK), "job.log", warnings, RULES.finder("hyperscan"),
        chunk_bytes=CHUNK, path=str(path))]
    return out, warnings.as_list()


def _no_children_left():
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


@pytest.mark.parametrize("long_line", [False, True], ids=["lines", "a line longer than a block"])
def test_the_child_scans_half_and_the_same_lines_are_selected(tmp_path, used, long_line):
    path = _log(tmp_path, long_line)
    assert os.path.getsize(path) > 40 * CHUNK
    two = _lines(path)
    assert sum(used) >= (5 if not long_line else 1), used  # the child really sent its scans
    _no_children_left()
    with pytest.MonkeyPatch.context() as mp:
        assert _lines(path, mp, child=False) == two
    if long_line:  # the line-chunker took over at the long line and truncated it
        assert any(w["code"] == "line_truncated" for w in two[1])


def test_a_child_that_dies_leaves_its_chunks_to_this_process(tmp_path, used, monkeypatch):
    path = _log(tmp_path)
    with pytest.MonkeyPatch.context() as mp:
        one = _lines(path, mp, child=False)
    used.clear()

    def die(*_args):
        raise RuntimeError("the child fails before it sends anything")
    monkeypatch.setattr(split, "_scan_part", die)
    assert _lines(path) == one
    assert used and not any(used)
    _no_children_left()


def test_a_diagnosis_through_two_processes_equals_one(tmp_path, used, monkeypatch):
    path = _log(tmp_path, scale=4)  # the diagnosis reads 1 MB chunks
    assert os.path.getsize(path) > 12 << 20
    two = diagnose_job([str(path)], RULES)
    assert sum(used) >= 5
    monkeypatch.setattr(split, "SPLIT_MIN", 1 << 62)
    assert diagnose_job([str(path)], RULES) == two
    assert two["category"] == "gpu_oom"
    _no_children_left()


def test_only_big_plain_files_are_split(tmp_path):
    small = tmp_path / "small.log"
    small.write_text("x\n" * 1000)
    assert split.big_file(str(small), CHUNK) == 0
    assert split.big_file("-", CHUNK) == 0
    gz = tmp_path / "big.log.gz"
    gz.write_bytes(b"\x1f\x8b\x08" + b"\0" * (split.SPLIT_MIN + 10))
    assert split.big_file(str(gz), CHUNK) == 0
    big = tmp_path / "big.log"
    with open(big, "wb") as fh:
        fh.truncate(split.SPLIT_MIN)  # sparse: no disk used
    assert split.big_file(str(big), CHUNK) == split.SPLIT_MIN
