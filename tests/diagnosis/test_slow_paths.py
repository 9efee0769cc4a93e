"""Slow paths of issue 16: the rewrites that make a hostile input class cheap give the same
answers as the plain forms they replace. Behaviour only; the timings are
benchmarks/pathological.py's."""

import random
import re

import pytest

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.match import match_start
from classifier.diagnosis.normalize import _BOX_LEFT, _SRUN_LABEL
from classifier.redact import _cut_tail
from classifier.rules.load import default_rules


@pytest.fixture(scope="module")
def rules():
    return default_rules()


def test_undefined_symbol_reads_the_library_backwards(rules):
    """The rewritten pattern still captures the library and starts its evidence there."""
    (p, *_), = [r.patterns for r in rules.rules if r.id == "version_mismatch.undefined_symbol"]
    line = "ImportError: /opt/x/fused_adam.so.1: undefined symbol: _ZN3c104cuda9SetDeviceEi"
    m = p.search(line)
    assert m["library"] == "/opt/x/fused_adam.so.1" and m["symbol"] == "_ZN3c104cuda9SetDeviceEi"
    assert match_start(m) == line.index("/opt")
    cut = p.search("ImportError: /opt/x/fused_adam.so.1: undefi", partial=True)
    assert cut.partial and match_start(cut) == len("ImportError: ")
    assert p.search("a" * 8100 + ".so undefined symbol: x") is None


def test_long_near_miss_lines_stay_within_the_budget(tmp_path, rules):
    """Lines of 8 K ending in a near-miss of the library pattern (issue 16's 323 s input): the
    fallback pattern names the symbol, and no regex budget runs out."""
    log = tmp_path / "near.log"
    log.write_text(("a" * 8100 + ".so undefined symbol: x\n") * 40)
    d = diagnose_job([str(log)], rules)
    assert (d["category"], d["rule"], d["facts"]) == (
        "version_mismatch", "version_mismatch.undefined_symbol", {"symbol": "x"})
    assert not {w["code"] for w in d["warnings"]} & {"regex_budget", "regex_line_budget",
                                                     "regex_timeout"}


def test_cut_tail_is_the_regex_it_replaces():
    plain = re.compile(r"[A-Za-z0-9+/=_-]{4,}$")
    rng = random.Random(7)
    for _ in range(20000):
        s = "".join(rng.choice("ab9+/ .\n=-_:") for _ in range(rng.randint(0, 12)))
        m = plain.search(s)
        assert (m.group() if m else "") == _cut_tail(s), repr(s)


@pytest.mark.parametrize("atomic,plain", [
    (_SRUN_LABEL, r"\s*(?P<rank>\d{1,5}):\s"),
    (_BOX_LEFT, r"(?<!\s)\s*[│┃║]\s?"),
])
def test_atomic_blanks_match_like_plain_ones(atomic, plain):
    plain = re.compile(plain)
    rng = random.Random(3)
    for _ in range(20000):
        s = "".join(rng.choice(" \t12:│x\n") for _ in range(rng.randint(0, 10)))
        a, b = atomic.match(s), plain.match(s)
        assert (a and (a.span(), a.groupdict())) == (b and (b.span(), b.groupdict())), repr(s)


def test_keywords_found_from_their_first_occurrence(rules):
    """rules_for searches ASCII lines from the keyword's first lower-cased occurrence: the
    same rules as searching each from the start, camel case and non-ASCII lines included."""
    index = rules.keyword_index()
    lines = [
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "default3 fault: _ArrayMemoryError and ncclTimeout and NCCLError",
        "x" * 5000 + " undefined symbol: foo",
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)",
        "ſegmentation fault: İstanbul Connection refused",
        "the client socket has failed to connect to [node3]:29500 (errno: 111 - Connection refused)",
    ]
    for line in lines:
        want = []
        for found in index._substrings(line.lower()):
            for key in index._inside(found):
                if index._word_start(key).search(line):
                    want.extend(r for r in index._rules_of[key] if r not in want)
        assert list(index.rules_for(line)) == want, line


def _storm_log(tmp_path):
    lines = ["[rank0]: step 1"]
    for i in range(600):  # every rank retries the same master: the same message again and again
        lines.append(f"[rank{i % 8}]: [W socket.cpp:601] [c10d] The client socket has failed to "
                     f"connect to [node-0]:29500 (errno: 111 - Connection refused).")
        if i % 50 == 0:
            lines.append(f"node-1:{i}:{i} [{i % 8}] NCCL INFO Call to connect returned "
                         f"Connection refused, retrying")
    lines.append("node-1:9:9 [3] misc/socket.cc:484 NCCL WARN Net : Connect to 10.0.0.2<43521> "
                 "failed : Connection refused")
    lines.append("[rank3]: torch.distributed.DistBackendError: NCCL error in: "
                 "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited "
                 "or there was a network error, NCCL version 2.19.3")
    log = tmp_path / "storm.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_nccl_prefix_is_the_search_it_replaces():
    from classifier.diagnosis.topology import _NCCL_PREFIX, nccl_prefix
    rng = random.Random(11)
    alphabet = list("aZ1_.-: []") + ["NCCL ", ":12:3 [0] NCCL ", "é", "٣"]
    for _ in range(30000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        a, b = _NCCL_PREFIX.search(s), nccl_prefix(s)
        assert (a and (a.span(), a.groupdict())) == (b and (b.span(), b.groupdict())), repr(s)
    assert nccl_prefix("gpu-node-1:1234:1300 [0] NCCL INFO comm")["host"] == "gpu-node-1"
    assert nccl_prefix("a" * 8100 + " NCCL x") is None


def test_seen_keys_pruned_behind_the_buffer_keep_every_hit(tmp_path, rules, monkeypatch):
    """The hit keys of lines the buffer has passed are dropped (bounded memory on a storm of
    hits); no hit is lost or found twice."""
    from classifier.diagnosis import match
    from classifier.diagnosis.normalize import normalize
    from classifier.diagnosis.read import RawLine

    log = _storm_log(tmp_path)
    raw = [RawLine("storm.log", i, t) for i, t in enumerate(log.read_text().splitlines(), 1)]

    def hits():
        return [(h.rule.id, [line.lineno for line in h.lines], h.facts)
                for h in match.scan(normalize(raw), rules.keyword_index())]

    monkeypatch.setattr(match, "SEEN_LIMIT", 10 ** 9)
    whole = hits()
    monkeypatch.setattr(match, "SEEN_LIMIT", 4)
    assert hits() == whole and len(whole) > 600



def test_gist_finds_every_literal_its_message_holds():
    """A line's gist squeezes long runs of one character; a literal with no run past SQUEEZED
    (every literal the witnesses test) is in the gist exactly when it is in the message."""
    from classifier.diagnosis.normalize import RUN_STEP, SQUEEZED, gist
    rng = random.Random(16)
    needles = {"".join(rng.choice("/ao x") for _ in range(rng.randint(1, 6))) for _ in range(300)}
    needles = [w for w in needles if not re.search(r"(.)\1{%d}" % SQUEEZED, w)] + ["/" * SQUEEZED]
    for _ in range(3000):
        parts = [rng.choice("/ao x") * rng.choice([1, 2, 9, 31, 33, 64, 95, 96, 300])
                 if rng.random() < 0.5 else "".join(rng.choice("/aox ") for _ in range(rng.randint(1, 40)))
                 for _ in range(rng.randint(1, 30))]
        s = "".join(parts)
        g = gist(s)
        assert [w in s for w in needles] == [w in g for w in needles], repr(s)
        if len(s) >= 8 * RUN_STEP:  # every run over three samples is squeezed
            assert not re.search(r"(.)\1{%d}" % (3 * RUN_STEP - 1), g, re.DOTALL), repr(s)


@pytest.mark.parametrize("line", ["/" * 30000, "o" * 30000, ("/" * 40 + "x") * 700,
                                  "[rank3]: " + "=" * 9000 + " NCCL INFO comm 0x1 rank 3"])
def test_a_long_run_leaves_a_short_gist(line):
    """30 KB of `/` (issue 16's slash_runs) is what the witnesses' dozens of `in` tests read one
    position per needle; its gist is a few characters, and the run squeezed is the only change."""
    from classifier.diagnosis.normalize import SQUEEZED, normalize
    from classifier.diagnosis.read import RawLine
    (line,) = normalize([RawLine("x.log", 1, line)])
    assert len(line.gist) < len(line.msg) // 4
    runs = re.compile(r"(.)\1{%d,}" % (SQUEEZED - 1))  # runs of SQUEEZED or more, dropped
    assert runs.sub("", line.gist) == runs.sub("", line.msg)


def test_step_search_from_its_word_is_the_whole_search():
    """culprit._step starts _STEP at the first `step` / `iter` (a prefix storm's step sits after
    1 KB of labels): the same match as searching the whole line."""
    from classifier.diagnosis.culprit import _STEP, _step
    rng = random.Random(9)
    alphabet = ["step", "STEP", "iter", "Iteration", "global_", "global ", " ", "=", "5", "x", "_",
                "ſtep", "İ", "1: [rank3]: "]
    for _ in range(20000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        a, b = _STEP.search(s), _step(s)
        assert (a and (a.span(), a["n"])) == (b and (b.span(), b["n"])), repr(s)


def test_witnesses_read_slash_runs_like_their_gist(tmp_path, rules):
    """A log of 30 KB `/` lines with one real event among them: the witnesses still read it."""
    log = tmp_path / "slash.log"
    log.write_text(("/" * 30000 + "\n") * 20 + "[rank1]: " + "/" * 9000 + " step 7 loss 2.0\n"
                   + "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    d = diagnose_job([str(log)], rules)
    assert d["category"] != "none"
