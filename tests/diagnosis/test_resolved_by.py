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


# A symptom of priority 0 or more (fp16_overflow.nan_loss) gives way only where it was read once
# in a job that shows no failure and a later line of its `resolved_by` says the run went on.
# The rule is an echo: where it counts, the job is unknown with the NaN reading as its evidence.
NAN = "fp16_overflow.nan_loss"


def _nan_counted(d):
    return d["category"] == "unknown" and any(
        "nan" in e["text"] or "inf" in e["text"] for e in d["evidence"]) and "set_detect_anomaly" in " ".join(d["remediation"])


def _mmdet(i, loss_bbox, loss):
    return (f"2021-02-09 17:{i:02d}:51,273 - mmdet - INFO - Epoch [1][{i * 50}/152]\tlr: 9.890e-04, "
            f"time: 2.408, memory: 10807, loss_cls: 0.9762, loss_bbox: {loss_bbox}, loss: {loss}, grad_norm: 2.7955")


def test_one_nan_window_then_finite_losses_is_a_step_the_run_got_past(tmp_path):
    lines = [_mmdet(1, "inf", "inf"), _mmdet(2, "0.5111", "1.1786"), _mmdet(3, "0.4920", "1.0311")]
    for noise in (0, 20000):
        d = _diagnose(tmp_path, lines, noise)
        assert d["rule"] != NAN and d["category"] == "none", noise


def test_a_nan_where_the_log_ends_or_nans_that_recur_still_count(tmp_path):
    cases = (
        [_mmdet(1, "0.5111", "1.1786"), _mmdet(2, "nan", "nan")],
        [_mmdet(1, "nan", "nan"), _mmdet(2, "0.5111", "1.1786"), _mmdet(3, "nan", "nan"),
         _mmdet(4, "0.4920", "1.0311")],
    )
    for lines in cases:
        for noise in (0, 20000):
            assert _nan_counted(_diagnose(tmp_path, lines, noise)), (lines, noise)


def _scaler(i, loss, scale):
    return f"step {i} | loss {loss} | grad_scale {scale}"


def test_a_loss_scalers_early_back_off_then_finite_losses_is_healthy(tmp_path):
    # GradScaler halves its scale on each inf step and skips it; the losses that follow are finite
    backoff = [_scaler(i, "inf", 65536.0 / 2 ** i) for i in range(4)]
    finite = [_scaler(4 + i, f"{2.4 - i / 10:.4f}", 4096.0) for i in range(6)]
    hf = ["{'loss': inf, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.01}"] * 3 + \
         [f"{{'loss': {1.9 - i / 10:.4f}, 'grad_norm': 0.8, 'learning_rate': 2e-05, 'epoch': 0.0{i + 2}}}"
          for i in range(3)]
    for lines in (backoff + finite, hf):
        for noise in (0, 20000):
            d = _diagnose(tmp_path, lines, noise)
            assert d["category"] == "none", (lines, noise, d["rule"])


def test_a_long_run_of_non_finite_losses_or_one_finite_reading_after_it_still_counts(tmp_path):
    nine = [_scaler(i, "nan", 1.0) for i in range(9)] + [_scaler(9 + i, "2.3", 1.0) for i in range(4)]
    one_after = [_scaler(i, "inf", 2.0 ** -i) for i in range(4)] + [_scaler(4, "2.3", 0.0625)]
    for lines in (nine, one_after):
        assert _nan_counted(_diagnose(tmp_path, lines)), lines


def test_one_nan_then_a_crash_still_counts(tmp_path):
    lines = [_mmdet(1, "inf", "inf"), _mmdet(2, "0.5111", "1.1786"),
             "Traceback (most recent call last):", '  File "train.py", line 10, in <module>',
             "    main()", "ValueError: could not broadcast input array from shape (3,) into shape (4,)"]
    d = _diagnose(tmp_path, lines)
    # the NaN still counts (its steps lead), and the crash after it is the evidence no rule explains
    assert d["category"] == "unknown" and d["evidence"][0]["text"].startswith("ValueError: could not broadcast")
    assert any("set_detect_anomaly" in step for step in d["remediation"])


def test_nan_loss_resolved_by_reads_finite_losses_in_the_usual_forms():
    from classifier.rules.load import default_rules
    rule = next(r for r in default_rules().rules if r.id == NAN)
    finite = ["{'loss': 1.2345, 'grad_norm': 0.873, 'learning_rate': 1.9e-05, 'epoch': 0.12}",
              '{"epoch": 1, "update": 0.1, "loss": "7.231", "nll_loss": "6.5", "ppl": "90.51"}',
              " iteration      300/   10000 | lm loss: 6.112233E+00 | loss scale: 65536.0 |",
              " 12%|█▏        | 120/1000 [02:10<15:50, loss=0.532, lr=2e-5]",
              "Epoch [1][100/152]\tlr: 1.988e-03, loss_cls: 0.6676, loss_bbox: 0.5111, loss: 1.1786",
              "step 4 | loss 2.3986 | grad_scale 4096.0", "step 3200 train_loss 0.512 lr 1.2e-4"]
    other = ["step 10 loss_scale: 1024.0", " iteration 300 | loss scale: 65536.0 | grad norm: 1.2 |",
             "{'loss': nan, 'grad_norm': nan}", "loss: inf", "Loss is nan, stopping training",
             "step 2 | loss inf | grad_scale 8192.0", "loss 0.5 of the batch was masked"]
    for text in finite:
        assert any(p.search(text) for p in rule.resolved_by), text
    for text in other:
        assert not any(p.search(text) for p in rule.resolved_by), text


# fp16_overflow.nan_grad_norm is weak (priority < 0): a NaN grad norm counts only where the
# log ends on it, with no finite norm after (every step since skipped, or the weights NaN).
def _hf(i, loss, norm):
    return f"{{'loss': {loss}, 'grad_norm': {norm}, 'learning_rate': 9.99e-05, 'epoch': {i / 100:.2f}}}"


def test_a_grad_norm_that_stays_nan_to_the_end_counts(tmp_path):
    bf16_zero = [_hf(1, "1.0446", "nan")] + [_hf(i, "0.0", "nan") for i in range(2, 7)]
    espnet = ["[user] 2021-04-23 19:22:5%d,420 (trainer:581) WARNING: The grad norm is nan. "
              "Skipping updating the model." % i for i in range(6)]
    opennmt = [f"[2018-11-26 15:0{i}:01,481 INFO] Step {5600 + 50 * i}/50000; acc:   0.19; ppl:   nan; "
               f"xent:  nan; lr: 0.00070; 1928/2310 tok/s;  21110 sec" for i in range(4)]
    for lines in (bf16_zero, espnet, opennmt):
        for noise in (0, 20000):
            assert _nan_counted(_diagnose(tmp_path, lines, noise)), (lines[0], noise)


def test_isolated_nan_grad_norms_among_finite_ones_are_skipped_steps(tmp_path):
    # HF logs float32 norms in full (16 digits and more): a finite reading must still count
    lines = [_hf(4, "0.1474", "nan"), _hf(8, "0.1549", "0.1899697184562683"),
             _hf(12, "0.1819", "nan"), _hf(15, "0.1558", "0.7023305296897888"),
             _hf(19, "0.1568", "1.4903326034545898"), _hf(23, "0.1471", "0.27313581109046936")]
    for noise in (0, 20000):
        d = _diagnose(tmp_path, lines, noise)
        assert d["category"] == "none", (noise, d["evidence"])


def test_a_nan_loss_then_finite_losses_printed_in_full_is_got_past(tmp_path):
    rec = '{{"epoch": 299, "step": {}, "loss": {}, "time": 34275, "lr": 1.2847230819273718}}'
    lines = [rec.format(264294, "nan"), rec.format(264335, "14.825407981872559"),
             rec.format(264376, "14.545491218566895"), rec.format(264417, "14.715323448181152")]
    for noise in (0, 20000):
        assert _diagnose(tmp_path, lines, noise)["category"] == "none", noise


# Paddle's launcher waits for the other trainers' comm-id servers (`server not ready, wait 3
# sec to retry...`); NCCL starting after it means every endpoint answered.
PADDLE = "connection_failure.paddle_endpoints_not_ready"


def _paddle_wait():
    return ["server not ready, wait 3 sec to retry...",
            "not ready endpoints:['127.0.0.1:42362', '127.0.0.1:48123']"]


def test_paddle_wait_where_the_log_ends_is_the_hang(tmp_path):
    for noise in (0, 20000):
        assert _diagnose(tmp_path, _paddle_wait() * 3, noise)["rule"] == PADDLE


def test_paddle_nccl_start_after_the_wait_ends_it(tmp_path):
    lines = _paddle_wait() + [
        "worker-0:2825:2825 [0] NCCL INFO Bootstrap : Using eth0:172.16.0.90<0>",
        "I0924 10:43:15.805625  2825 nccl_context.cc:74] init nccl context nranks: 8 local rank: 0 gpu id: 0 ring id: 0",
        "NCCL version 2.10.3+cuda10.2"]
    for noise in (0, 20000):
        d = _diagnose(tmp_path, lines, noise)
        assert d["rule"] != PADDLE and d["category"] == "none", noise


# A failure after a wait that ended is not that wait's: Paddle's launcher waits for the other
# trainer's endpoint, NCCL then starts (the wait ended), and a traceback cut before its message
# follows. Without the NCCL line the wait is where the job stopped.
_PADDLE_WAIT = ["server not ready, wait 3 sec to retry...", "not ready endpoints:['127.0.0.1:57487']"]
_PADDLE_NCCL = ["I0112 18:33:17.212489 10443 nccl_context.cc:74] init nccl context nranks: 2 local rank: 0 gpu id: 0 ring id: 0"]
_CUT_TRACEBACK = ["Traceback (most recent call last):",
                  '  File "/home/u/seg/train.py", line 109, in train',
                  "    paddle.distributed.fleet.init(is_collective=True)",
                  '  File "/opt/conda/lib/python3.9/site-packages/paddle/distributed/fleet/base/fleet_base.py", line 367, in _init_hybrid_parallel_env',
                  "    self._hcg = tp.HybridCommunicateGroup(self._topo"]


def test_a_failure_after_a_wait_that_ended_is_not_the_waits(tmp_path):
    for noise in (0, 20000):
        d = _diagnose(tmp_path, _PADDLE_WAIT + _PADDLE_NCCL + _CUT_TRACEBACK, noise)
        assert d["category"] == "unknown", noise


def test_a_failure_after_a_wait_that_never_ended_is_the_waits(tmp_path):
    for noise in (0, 20000):
        d = _diagnose(tmp_path, _PADDLE_WAIT + _CUT_TRACEBACK, noise)
        assert d["rule"] == "connection_failure.paddle_endpoints_not_ready", noise


# A torch extension's build whose log goes on to load the module it built finished: the job's
# failure is elsewhere (here a crash the launcher reports), not in the compile.
_BUILD = ["[1/2] c++ -MMD -MF flatten_unflatten.o.d -DTORCH_EXTENSION_NAME=utils -DTORCH_API_INCLUDE_EXTENSION_H -O3",
          "[2/2] c++ flatten_unflatten.o -shared -lc10 -ltorch_cpu -ltorch -ltorch_python -o utils.so"]
_CRASH = ("[2023-05-20 12:09:28,634] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python', '-u', "
          "'main.py', '--local_rank=0'] exits with return code = -11")


def test_a_build_cut_off_where_the_log_ends_is_where_it_stopped(tmp_path):
    for noise in (0, 20000):
        assert _diagnose(tmp_path, _BUILD[:1], noise)["rule"] == "op_build_error.build_stopped_mid_compile"


def test_a_build_whose_module_loaded_is_no_longer_the_failure(tmp_path):
    lines = _BUILD + ["Loading extension module utils...", "Time to load utils op: 13.977582454681396 seconds", _CRASH]
    for noise in (0, 20000):
        d = _diagnose(tmp_path, lines, noise)
        assert d["category"] != "op_build_error", noise


# host_oom.large_alloc_where_the_log_ends is weak: tcmalloc's report counts only where the log
# stops on it; with the run's output going on after it, the allocation succeeded.
ALLOC = "tcmalloc: large alloc 6645350400 bytes == 0x695ff4000 @ 0x7f6d5f840b6b 0x7f6d5f860379"


def test_a_large_alloc_where_the_log_ends_is_host_memory(tmp_path):
    lines = ["Loading checkpoint shards: 100%|██████████| 2/2", ALLOC]
    for noise in (0, 20000):
        d = _diagnose(tmp_path, lines, noise)
        assert d["category"] == "host_oom" and d["rule"] == "host_oom.large_alloc_where_the_log_ends", noise


def test_a_large_alloc_the_run_went_on_after_is_healthy(tmp_path):
    lines = [ALLOC] + [f"epoch 1 step {i * 10} loss {2.5 - i / 100:.3f}" for i in range(15)]
    for noise in (0, 20000):
        assert _diagnose(tmp_path, lines, noise)["category"] == "none", noise
