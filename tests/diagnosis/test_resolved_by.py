"""`resolved_by`: a weak symptom where a log ends is where the job hung, unless a later line
the rule names says the wait ended (the store-based barrier completed), in a short paste and
behind 20,000 healthy lines."""

from noise import diagnose_behind_noise as _diagnose

RULE = "connection_failure.store_barrier_waiting"


def _wait(key=1):
    return (f"INFO:torch.distributed.distributed_c10d:Waiting in store based barrier to initialize "
            f"process group for rank: 3, key: store_based_barrier_key:{key} (world_size=6, "
            f"worker_count=4, timeout=0:30:00)")


def _done(key=1):
    return (f"INFO:torch.distributed.distributed_c10d:Rank 0: Completed store-based barrier for "
            f"key:store_based_barrier_key:{key} with 6 nodes.")


def test_wait_where_the_log_ends_is_the_hang(tmp_path):
    for noise in (0, 20000):
        assert _diagnose(tmp_path, [_wait()] * 3, noise)["rule"] == RULE


def test_completed_barrier_after_the_wait_ends_it(tmp_path):
    lines = [_wait(), "initializing distributed: GLOBAL_RANK: 5, MEMBER: 6/6", _done(),
             "All distributed processes registered. Starting with 6 processes", _done()]
    for noise in (0, 20000):
        d = _diagnose(tmp_path, lines, noise)
        assert d["rule"] != RULE and d["category"] == "none", noise


def test_an_earlier_completed_barrier_does_not_end_a_later_wait(tmp_path):
    # the default group's barrier completed, a later group's barrier (key:2) hangs
    for noise in (0, 20000):
        assert _diagnose(tmp_path, [_done(1), _wait(2), _wait(2)], noise)["rule"] == RULE
