"""Per-line gates rewritten as literal tests say exactly what the regexes they replace said,
on every line of the corpus and of healthy multi-rank noise."""

import gzip
import re

import pytest

from classifier.diagnosis.culprit import any_event
from classifier.diagnosis.normalize import normalize
from classifier.diagnosis.read import RawLine
from classifier.diagnosis.region import is_chatter
from conftest import ROOT
from noise import healthy_lines

# The regexes as they were: the reference the literal forms must agree with.
ANY_EVENT = re.compile(r"timeout|timed out|by peer|monitoredbarrier|watchdog|nvrm|ecc|off the bus"
                       r"|gpu is lost|killed process|oom-kill|return code = -9|exitcode: -9|connect"
                       r"|refused|no route|not known|rendezvous|host not found|networkerror|init complete"
                       r"|\bstep\b")
CHATTER = re.compile(r" NCCL INFO |\[INFO\]|^INFO[: ]|%\||\bit/s\]|^\{'loss'|^\s*$")
EDGES = ["", " ", "\t \u2003", "INFO", "INFO:x", "INFO x", "xINFO: y", "{'loss': 1.2}", " {'loss'",
         "45%|####", "1.2 it/s]", "1.2it/s]", "s/it/s]", "steps", "step", "the step.", "Init COMPLETE",
         "x NCCL INFO y", "[INFO] ok", "Connection refused", "Step 5", "stepping"]


def _messages():
    out = list(EDGES)
    for path in sorted((ROOT / "corpus").rglob("*.log*")):
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        raws = [RawLine(path.name, i, t) for i, t in
                enumerate(data.decode("utf-8", "replace").splitlines(), 1)]
        out += [line.msg for line in normalize(raws)]
    out += [line.msg for line in normalize(RawLine("noise", i, t) for i, t in
                                           enumerate(healthy_lines(3000, ranks=16), 1))]
    return out


@pytest.fixture(scope="module")
def messages():
    return _messages()


def test_any_event_agrees_with_its_regex(messages):
    assert len(messages) > 20000
    for msg in messages:
        low = msg.lower()
        assert any_event(low) == bool(ANY_EVENT.search(low)), msg


def test_is_chatter_agrees_with_its_regex(messages):
    for msg in messages:
        if msg:  # the caller skips empty messages first
            assert is_chatter(msg) == bool(CHATTER.search(msg)), msg


class _Everything:
    def __contains__(self, _item):
        return True


def test_peeling_by_first_character_changes_no_line(messages, monkeypatch):
    from classifier.diagnosis import normalize as N
    import random
    rng = random.Random(5)
    alphabet = "[]()0123456789 :|-_.,abcdEFJMOSrankdefault/\t\u3000│"
    texts = [m for m in messages] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
                                     for _ in range(20000)]
    texts += ["[rank3]: x", "[default0]:[rank1]: y", "1: [rank13]: z", "worker-1: a", "10.0.0.5: b",
              "(RayTrainWorker pid=42, ip=10.0.0.1) c", "[pod/t-0/py] d", "trainer-1  | e",
              "[1,3]<stderr>:f", "E   RuntimeError: g", "Jan  2 03:04:05 host kernel: h",
              "[  +0.000844] i", "2024-10-02T14:00:00.123Z j", "│ k │", "[Mon Jan  2 03:04:05 2024] l",
              "[\u3000+1.5] m", "[12.5] n", "[", "[p", "[pod/x] o", "[d", "[local_rank7]: p",
              "[\u0663] q", "[\u0663,1]<stdout>: r", "E\tx", "┃ s ┃", "║t"]
    texts += ["[" + c + rest for c in map(chr, range(1, 200)) for rest in
              ("", "0]: a", "1,2]<stderr>: b", "ank4]: c", "od/p] d", "+0.5] e", " 0.5] f",
               "on Jan  2 03:04:05 2024] g", "2024-01-02 03:04:05 h")]
    fast = [N.peel_prefixes(t) for t in texts]
    for name in ("_PREFIX_FIRST", "_PREFIX_NO_PIPE", "_PREFIX_NO_COLON", "_PREFIX_PLAIN"):
        monkeypatch.setattr(N, name, {})
    monkeypatch.setattr(N, "_NOT_ISO_SECOND", frozenset())
    for name in ("_TS_FIRST", "_ISO_FIRST", "_SYSLOG_FIRST", "_DMESG_SECOND", "_HUMAN_SECOND"):
        monkeypatch.setattr(N, name, _Everything())
    slow = [N.peel_prefixes(t) for t in texts]
    assert fast == slow


def test_the_marker_hint_says_what_its_alternation_says(messages):
    from classifier.vocabulary import MARKER_HINT
    extra = ["x)foo error", "errorx", "exception  y", "f1203 12:00:01", "❱ 3", "exit", "file  a"]
    for msg in list(messages) + extra:
        low = msg.lower()
        assert MARKER_HINT.search(low) == (MARKER_HINT.pattern.search(low) is not None), msg


def test_the_frame_gate_drops_no_frame(messages):
    from classifier.diagnosis import traceback as T
    from classifier.diagnosis.frameline import _IPY8_FRAME
    patterns = (T._PY_FRAME, T._CPP_RAISED, T._PYTEST_FRAME, T._IPY_FRAME, T._CPP_FRAME,
                T._COLAB_FRAME, T._PY_FRAME_CUT, _IPY8_FRAME)
    extra = ['File "a.py", line 3', '~/x.py in f(a)', "frame #0: c10::Error (0x1 in /l.so)",
             "File ~/x.py:5, in M.f(a)", "File /x/train.py:12",
             "t.py:4: in test_x", "Exception raised from f at a.cpp:9", "<ipython-input-3> in g()",
             "[/usr/lib/x.py](https://localhost:8080/#) in f(a)", '/verl/protocol.py", line 491, in chunk']
    for msg in list(messages) + extra:
        msg = msg.strip()
        wanted = any(p.search(msg) if p is T._CPP_RAISED else p.match(msg) for p in patterns)
        assert (T.TracebackCollector._frame(msg) is not None) == wanted, msg


def test_unwrap_gates_keep_every_wrapper():
    from classifier.diagnosis.normalize import unwrap
    assert unwrap('  {"log":"RuntimeError: x\\n","stream":"stderr","time":"2024-01-01T00:00:00Z"}') \
        == "2024-01-01T00:00:00Z RuntimeError: x"
    assert unwrap("2024-01-01T00:00:00.5Z stderr F RuntimeError: y") == "2024-01-01T00:00:00.5Z RuntimeError: y"
    assert unwrap("RuntimeError: &quot;z&quot;") == 'RuntimeError: "z"'


def test_the_witness_hints_hold_for_every_line_its_patterns_match(messages):
    from classifier.diagnosis import culprit as C
    for msg in messages + ["[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)",
                           "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234", "GPU has fallen off the bus",
                           "Out of memory: Killed process 42 (python)", "CONNECTION REFUSED"]:
        low = msg.lower()
        if C._TIMEOUT.search(msg):
            assert C._TIMEOUT_HINTS(low), msg
        if C._XID.search(msg) or C._HW.search(msg):
            assert C._HW_HINTS(msg), msg
        if C._KERNEL_OOM.search(msg):
            assert "Killed process" in msg or "oom-kill:" in msg
        if C._CONNECT_FAIL.search(msg):
            assert C._CONNECT_HINTS(low), msg



def test_the_split_hint_finds_every_success_and_failure_marker(messages):
    from classifier.vocabulary import AFTERMATH, EVIDENCE, MARKER_HINT, OTHER_FAILURE, SUCCESS
    extra = ["Process 7 exits successfully", "{'train_runtime': 1.0}", "train_runtime = 3",
             "Training completed. Do not forget", "F1203 12:00:01.5 x.cc:3] Check", "Aborted",
             "srun: error: node1: task 0: Exited", "x)AssertionError: y", "❱ 12 foo()",
             'File "a.py", line 3, in f', "Segmentation fault (core dumped)",
             "valueerror: x", "f() got an unexpected keyword argument 'a'", "Exit_status=1",
             "\ufffd \ufffd 12 \ufffd foo()", "Sending process 9 closing signal SIGTERM"]
    for msg in list(messages) + extra:
        split = MARKER_HINT.split(msg.lower())
        for n, wholes in enumerate(((SUCCESS,), (OTHER_FAILURE, EVIDENCE), (AFTERMATH,))):
            gated = split is not None and any(p.search(msg) for p in split[n])
            assert gated == any(w.search(msg) is not None for w in wholes), (n, msg)
