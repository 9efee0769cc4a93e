"""Storms of one line: copies past storms.KEEP are counted, not read; ranks stay apart."""

import pytest

from classifier.diagnosis import prefilter, storms
from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.read import Warnings
from classifier.rules.load import default_rules

MB = 1 << 20


def _select(data, engine="re"):
    warnings = Warnings()
    lines = list(prefilter.select_lines([data[i:i + MB] for i in range(0, len(data), MB)], "job",
                                        warnings, default_rules().finder(engine), chunk_bytes=MB))
    return lines, warnings.as_list()


def _retry(i, prefix=""):
    return (f"{prefix}[W socket.cpp:{600 + i % 9}] [c10d] The client socket has failed to connect "
            f"to [node{i % 64}]:29500 (errno: 111 - Connection refused).\n")


@pytest.mark.parametrize("engine", ["re", "hyperscan"])
def test_a_retry_storm_reads_keep_copies_and_the_tail_and_counts_the_rest(engine):
    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    n = 60_000  # ~7 MB: several chunks, so whole chunks are skipped too
    data = "".join(_retry(i) for i in range(n)).encode()
    lines, warnings = _select(data, engine)
    linenos = [line.lineno for line in lines]
    assert linenos == sorted(set(linenos))
    assert linenos[:storms.KEEP] == list(range(1, storms.KEEP + 1))
    assert linenos[-prefilter.TAIL:] == list(range(n - prefilter.TAIL + 1, n + 1))  # the end is read
    assert len(lines) == storms.KEEP + prefilter.TAIL
    [warning] = warnings
    skipped = n - storms.KEEP - prefilter.TAIL
    assert warning["code"] == "repeated_lines"
    assert f"{skipped:,} lines from line {storms.KEEP + 1:,} on" in warning["message"]


def test_a_timeout_every_rank_reports_once_is_not_a_storm():
    # 4,096 ranks each print the watchdog's line once: one shape without digits, but each line
    # names its rank, and the culprit needs every one of them.
    ranks = 4096
    data = b"".join(f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
                    f"operation timeout: WorkNCCL(SeqNum=212, OpType=ALLREDUCE, NumelIn=1) ran for "
                    f"1800000 milliseconds before timing out.\n".encode() for r in range(ranks))
    lines, warnings = _select(b"step 1 loss 2.0\n" * 3000 + data)
    timeouts = [line for line in lines if b"Watchdog" in line.text.encode()]
    assert len(timeouts) == ranks and not warnings


def test_a_storm_under_rank_labels_keeps_each_ranks_copies():
    ranks = 8
    data = "".join(_retry(i, f"[rank{i % ranks}]:") for i in range(40_000)).encode()
    lines, _ = _select(data)
    per_rank = {}
    for line in lines[:-prefilter.TAIL]:
        rank = line.text.split("]")[0]
        per_rank[rank] = per_rank.get(rank, 0) + 1
    assert len(per_rank) == ranks
    assert sum(per_rank.values()) == storms.KEEP + (ranks - 1) * storms.PER_RANK
    assert min(per_rank.values()) >= storms.PER_RANK


def test_repeated_chatter_below_a_storm_is_skipped_without_a_warning():
    data = b"".join(b"  %d%%|#   | %d/900 [00:01<00:30]\n" % (i % 100, i) for i in range(3000))
    lines, warnings = _select(data + b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert len(lines) < 3001 and not warnings


def test_covers_asks_for_every_shape_known_and_none_rank_labelled():
    tracker = storms.Storms()
    for i in range(storms.KEEP):
        assert tracker.keep(b"retry %d failed" % i, i + 1)
    assert not tracker.keep(b"retry 99999 failed", storms.KEEP + 1)
    assert tracker.covers(b"retry 1 failed\nretry 22 failed\n\n") == {hash(b"retry  failed"): 2}
    assert tracker.covers(b"retry 1 failed\nretry 2 failed!\n") is None   # one other shape
    for i in range(storms.KEEP + 1):
        tracker.keep(b"[rank%d]: retry failed" % (i % 2), i + 1)
    assert tracker.covers(b"[rank1]: retry failed\n") is None              # ranks: line by line


def test_a_storm_job_is_diagnosed_from_what_was_read(tmp_path):
    log = tmp_path / "storm.log"
    log.write_text("".join(_retry(i) for i in range(30_000))
                   + "torch.distributed.DistNetworkError: The client socket has failed to connect "
                     "to any network address of (node3, 29500).\n")
    result = diagnose_job([str(log)])
    assert result["category"] == "connection_failure"
    assert result["evidence"][0]["line"] == 30_001
    assert "repeated_lines" in {w["code"] for w in result["warnings"]}


@pytest.mark.parametrize("prefix", ["node1:2011:2011 [0] NCCL INFO ", "NCCL INFO "])
def test_a_trend_counts_the_copies_it_did_not_read(tmp_path, prefix):
    # With a process label each line is looked at; without one, whole chunks are skipped.
    # Either way the retries the prefilter counted but did not read are in the trend's count.
    n = 40_000
    log = tmp_path / "retries.log"
    log.write_text(f"{prefix}Call to connect returned Connection refused, retrying\n" * n
                   + "node1:2011:2011 [0] misc/socket.cc:538 NCCL WARN Net : Connect to "
                     "10.1.2.3<41291> failed\n")
    result = diagnose_job([str(log)])
    assert result["rule"] == "nccl_network.connect_retry_storm"
    assert result["facts"]["retries"] == n
    assert "repeated_lines" in {w["code"] for w in result["warnings"]}


def test_the_shapes_remembered_stay_bounded_whatever_the_lines_hold():
    # Keys are one int each and the table is pruned: 80,000 distinct rank-labelled lines (past
    # MAX_SHAPES), each with ten rank tokens, keep neither the lines nor their tokens.
    import random
    rng = random.Random(1)
    tracker = storms.Storms()
    for i in range(80_000):
        tracker.keep(b"[rank%d]: " % rng.randrange(10 ** 9) + b"x" * 2000 + b" rank%d" % i * 10, i + 1)
        assert len(tracker.counts) <= storms.MAX_SHAPES and len(tracker.rankish) <= storms.MAX_SHAPES
    assert all(type(key) is int for key in tracker.counts)
    assert all(len(ranks) <= storms.MAX_RANKS for ranks in tracker.ranks.values())


def _urllib3_retry(address):
    return ("WARNING:urllib3.connectionpool:Retrying (Retry(total=4, connect=None, read=None, "
            "redirect=None, status=None)) after connection broken by 'NewConnectionError('<urllib3."
            f"connection.HTTPSConnection object at 0x7f{address:x}>: Failed to establish a new "
            "connection: [Errno 111] Connection refused')': /api/v1/metrics\n")


def test_hex_addresses_do_not_make_each_copy_a_shape_of_its_own():
    # Each urllib3 retry names its connection object's address: without masking it every
    # retry was a shape of its own, and a healthy job's metrics retries were all read.
    import random
    rng = random.Random(3)
    tracker = storms.Storms()
    kept = sum(tracker.keep(_urllib3_retry(rng.getrandbits(40)).encode(), i + 1) for i in range(1000))
    assert kept == storms.KEEP
    assert storms.bare(b"at 0x7fAb12, step 3: cafe") == b"at , step : cafe"  # words stay


def _retries_amid_chatter(count, every, failure_at=None):
    import random
    from noise import healthy_lines
    rng = random.Random(5)
    out = []
    for i, line in enumerate(healthy_lines(count * every, seed=7, tricky=False)):
        out.append(line + "\n")
        if i % every == 0:
            out.append(_urllib3_retry(rng.getrandbits(40)))
        if i == failure_at:
            out.append("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    return "".join(out).encode()


@pytest.mark.parametrize("engine", ["re", "hyperscan"])
def test_a_storm_copy_past_its_allowance_brings_no_window_and_chunks_of_them_are_counted_at_once(
        monkeypatch, engine):
    # Past KEEP, a retry line is counted and the lines around it are not read either; a chunk
    # whose found lines are all such copies is counted in one go, with the same lines read,
    # warnings and repeat counts as the walk line by line gives. A failure among them is read.
    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    data = _retries_amid_chatter(6000, 10, failure_at=41_234)

    def select(chunk_bytes):
        warnings, repeats = Warnings(), {}
        pieces = [data[i:i + chunk_bytes] for i in range(0, len(data), chunk_bytes)]
        lines = list(prefilter.select_lines(pieces, "job", warnings, default_rules().finder(engine),
                                            chunk_bytes=chunk_bytes, repeats=repeats))
        return [(line.lineno, line.text) for line in lines], warnings.as_list(), repeats

    for chunk_bytes in (16 << 10, MB):
        fast = select(chunk_bytes)
        with monkeypatch.context() as m:
            m.setattr(prefilter._Selector, "_copies_only", lambda *args: False)
            assert select(chunk_bytes) == fast
        texts = [text for _, text in fast[0]]
        retries_read = sum("urllib3" in text for text in texts)
        assert retries_read <= storms.KEEP + (prefilter.HEAD + prefilter.TAIL) // 10 + 2
        assert len(texts) < prefilter.HEAD + prefilter.TAIL + 13 * storms.KEEP  # of 66,000
        assert any("illegal memory access" in text for text in texts)
