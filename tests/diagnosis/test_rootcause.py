"""Root cause, not symptom: causes beat echoes, the first cause wins, torchelastic's summary counts."""

import pytest
from conftest import LOGS, diagnose_json

WATCHDOG = ("[rank{r}]:[E1002 14:31:10.000000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")
OOM = ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a "
       "total capacity of 79.15 GiB of which 1.07 GiB is free.")


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_oom_on_rank3_beats_watchdog_timeouts_on_the_other_15(tmp_path):
    # The echoes are printed first (stdout buffering reorders), the cause comes last.
    lines = [WATCHDOG.format(r=r) for r in range(16) if r != 3] + [OOM]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "gpu_oom" and d["evidence"][0]["rank"] == 3
    assert d["evidence"][0]["line"] == 16
    timeout = [s for s in d["secondary"] if s["category"] == "nccl_timeout"]
    assert timeout and timeout[0]["facts"]["ranks_summary"] == "15 of 16 ranks"


def test_watchdog_timeouts_alone_are_the_answer(tmp_path):
    _, d = diagnose_json(_write(tmp_path, "job.log", [WATCHDOG.format(r=r) for r in range(4)]))
    assert d["category"] == "nccl_timeout"
    assert d["confidence"] < 0.9  # a symptom without a cause is less certain


def test_first_cause_in_time_wins_across_rank_files(tmp_path):
    disk = _write(tmp_path, "rank0.log", [
        "[2024-01-05 10:05:00,000] [INFO] saving checkpoint",
        "OSError: [Errno 28] No space left on device: '/ckpt/global_step100/mp_rank_00_model_states.pt'",
    ])
    oom = _write(tmp_path, "rank1.log", [
        "[2024-01-05 10:01:00,000] [INFO] step=99",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1; 79.35 GiB "
        "total capacity; 77.50 GiB already allocated; 3.19 MiB free; 78.10 GiB reserved in total by PyTorch)",
    ])
    _, d = diagnose_json(disk, oom)
    assert d["category"] == "gpu_oom" and d["evidence"][0]["rank"] == 1
    assert [s["category"] for s in d["secondary"]] == ["disk_full"]


def test_torchelastic_root_cause_names_the_rank_that_failed_first(tmp_path):
    lines = [
        "[rank0]: OSError: [Errno 28] No space left on device",
        "[rank1]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-06-11_14:02:31",
        "  host      : node7",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : 1 (pid: 4121)",
    ]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "gpu_oom" and d["evidence"][0]["rank"] == 1


def test_sigkill_in_the_root_cause_block_is_host_oom(tmp_path):
    lines = [
        "[2024-06-11 14:00:00,000] [INFO] step=10",
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4120 closing signal SIGTERM",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 (pid: 4121) "
        "of binary: /usr/bin/python3",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "Root Cause (first observed failure):",
        "[0]:",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : -9 (pid: 4121)",
        "  error_file: <N/A>",
        "  traceback : Signal 9 (SIGKILL) received by PID 4121",
    ]
    code, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert (code, d["category"]) == (0, "host_oom")


def test_unknown_reports_the_final_real_exception_not_the_launcher_echo():
    code, d = diagnose_json(LOGS / "unknown_keyerror.log")
    assert code == 1 and d["category"] == "unknown" and d["layer"] is None
    assert d["evidence"][0] == {"file": str(LOGS / "unknown_keyerror.log"), "line": 8, "rank": 0,
                                "text": "[rank0]: KeyError: 'prompt'"}
    # The same error on the other rank is shown too.
    assert [(ev["line"], ev["rank"]) for ev in d["evidence"][1:]] == [(4, 1)]


def test_healthy_log_is_none():
    code, d = diagnose_json(LOGS / "healthy.log")
    assert (code, d["category"], d["evidence"], d["secondary"]) == (1, "none", [], [])


def test_a_cuda_call_failing_in_application_code_is_a_failure_not_a_healthy_log(tmp_path):
    # C++/CUDA code logs its failed calls in its own words; Windows consoles show ESC as `←`.
    lines = ["[02:36:35.100] ←[32m[info]←[0m trainer.cpp:88  step 12 done",
             "[02:36:35.129] ←[31m[error]←[0m tensor.cpp:1458  CUDA error at D:\\src\\tensor.cpp:1458"
             " - cudaErrorIllegalAddress: an illegal memory access was encoun"]
    code, d = diagnose_json(_write(tmp_path, "app.log", lines))
    assert (code, d["category"]) == (1, "unknown")
    assert d["evidence"][0]["line"] == 2
    # Healthy lines that only talk about CUDA errors stay healthy.
    ok = ["[INFO] tip: set CUDA_LAUNCH_BLOCKING=1 when debugging CUDA errors",
          "[INFO] step=1, loss=2.1", "[INFO] step=2, loss=2.0"]
    code, d = diagnose_json(_write(tmp_path, "ok.log", ok))
    assert (code, d["category"]) == (1, "none")


def test_weak_symptom_yields_to_an_unexplained_exception(tmp_path):
    retry = ("[W socket.cpp:663] [c10d] The client socket has failed to connect to [node0]:29500 "
             "(errno: 111 - Connection refused).")
    lines = [retry, retry, "[INFO] step=1", "Traceback (most recent call last):",
             '  File "train.py", line 9, in <module>', "ZeroDivisionError: division by zero"]
    code, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert (code, d["category"]) == (1, "unknown")
    assert d["evidence"][0]["text"] == "ZeroDivisionError: division by zero"
    # Without the exception the retries are all there is, and they are the answer.
    code, d = diagnose_json(_write(tmp_path, "hang.log", [retry] * 3))
    assert (code, d["category"]) == (0, "connection_failure")


def test_weak_symptom_followed_by_healthy_progress_is_none(tmp_path):
    retry = ("[W socket.cpp:663] [c10d] The client socket has failed to connect to [node0]:29500 "
             "(errno: 111 - Connection refused).")
    lines = [retry] * 3 + [f"[INFO] step={i}, loss=2.{i}" for i in range(30)]
    code, d = diagnose_json(_write(tmp_path, "ok.log", lines))
    assert (code, d["category"]) == (1, "none")


def test_ofi_plugin_fallback_is_a_failure_only_where_the_job_stops(tmp_path):
    # aws-ofi-nccl on a node without EFA: NCCL falls back to its own transports and goes on.
    ofi = ["ip-1:41:41 [0] nccl_net_ofi_rdma_init:7978 NCCL WARN NET/OFI OFI fi_getinfo() call "
           "failed: No data available",
           "ip-1:41:41 [0] nccl_net_ofi_create_plugin:418 NCCL WARN NET/OFI aws-ofi-nccl initialization failed"]
    healthy = ofi + ["ip-1:41:41 [0] NCCL INFO Using network Socket"] + \
        [f"{{'loss': 1.{i}, 'epoch': 0.{i}}}" for i in range(30)]
    code, d = diagnose_json(_write(tmp_path, "ok.log", healthy))
    assert (code, d["category"]) == (1, "none")
    # The job that stops right there never got its network up.
    code, d = diagnose_json(_write(tmp_path, "stuck.log", ["[INFO] starting"] + ofi))
    assert d["category"] == "nccl_network" and d["rule"] == "nccl_network.ofi_plugin_init_failed"


def test_ray_actor_death_is_an_echo_of_why_the_worker_died(tmp_path):
    head = ["ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
            "\tclass_name: ActorWorker", "\tpid: 17871"]
    died = ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
            "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file.")
    code, d = diagnose_json(_write(tmp_path, "oom.log", head + [died]))
    # the worker's silent exit names no cause of its own (an echo): unknown, read on that line,
    # with the echo rule's steps for where to look (the node's OOM killer, the worker's own log)
    assert d["category"] == "unknown" and d["evidence"][0]["text"].startswith("The actor is dead because")
    assert "dmesg" in d["remediation"][0]
    # An actor that died of its own exception: that exception is the answer, not the echo.
    own = ["ray.exceptions.RayActorError: The actor died because of an error raised in its creation task, "
           "ray::Worker.__init__() (pid=81, ip=10.0.0.2)", '  File "worker.py", line 12, in __init__',
           "KeyError: 'reward_fn'"]
    code, d = diagnose_json(_write(tmp_path, "own.log", own))
    assert (code, d["category"]) == (1, "unknown") and d["evidence"][0]["text"] == "KeyError: 'reward_fn'"


def test_broken_pipe_is_an_echo_of_the_reader_that_died(tmp_path):
    # The main process's pipe to a DataLoader worker broke because the worker was killed: the
    # kill is the answer even where the paste shows the BrokenPipeError first.
    lines = ["BrokenPipeError: [Errno 32] Broken pipe", "    _error_if_any_worker_fails()",
             "RuntimeError: DataLoader worker (pid 5645) is killed by signal: Killed."]
    code, d = diagnose_json(_write(tmp_path, "loader.log", lines))
    assert d["category"] == "host_oom" and d["rule"] == "host_oom.sigkill_exit"
    # Alone it is still a failure, one no rule explains.
    lone = ["Traceback (most recent call last):", '  File "serve.py", line 40, in write',
            "    self.wfile.write(body)", "BrokenPipeError: [Errno 32] Broken pipe"]
    code, d = diagnose_json(_write(tmp_path, "lone.log", lone))
    assert (code, d["category"]) == (1, "unknown")


def test_mp_spawn_reraise_is_an_echo_of_the_childs_error(tmp_path):
    # torch.multiprocessing.spawn re-raises a child's failure as ProcessRaisedException, its
    # message (the child's traceback) below it: the child's line decides, not the wrapper.
    head = ["Traceback (most recent call last):",
            '  File "train.py", line 15, in <module>',
            "    mp.spawn(worker, args=(2,), nprocs=2, join=True)",
            '  File "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 211, in join',
            "    raise ProcessRaisedException(msg, error_index, failed_process.pid)",
            "torch.multiprocessing.spawn.ProcessRaisedException: ", "",
            "-- Process 0 terminated with the following error:",
            "Traceback (most recent call last):",
            '  File "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 87, in _wrap',
            "    fn(i, *args)",
            '  File "train.py", line 11, in worker',
            "    dist.all_reduce(t)"]
    timeout = ["RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
               "Timed out waiting 10000ms for recv operation to complete"]
    code, d = diagnose_json(_write(tmp_path, "timeout.log", head + timeout))
    assert d["category"] == "nccl_timeout"
    closed = ["RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
              "closed by peer [127.0.0.1]:65256. This is typically caused by a remote worker crashing."]
    code, d = diagnose_json(_write(tmp_path, "closed.log", head + closed))
    # a peer that went away is an echo naming no cause: unknown, read on the child's line
    assert d["category"] == "unknown" and "Connection closed by peer" in d["evidence"][0]["text"]
    # The child's own exception stays the unexplained answer.
    code, d = diagnose_json(_write(tmp_path, "own.log", head[:-1] + ["ValueError: bad batch at step 1"]))
    assert (code, d["category"]) == (1, "unknown") and d["evidence"][0]["text"] == "ValueError: bad batch at step 1"


def test_old_mp_spawn_bare_exception_reraise_is_an_echo(tmp_path):
    # torch < 1.8 re-raised a child's failure in spawn.py's join as a bare `Exception`, printed
    # before the child's traceback: a symptom read in the child decides, not the wrapper.
    head = ["Traceback (most recent call last):",
            '  File "tools/train_net.py", line 162, in <module>',
            "    args=(args,),",
            '  File "/env/lib/python3.7/site-packages/torch/multiprocessing/spawn.py", line 118, in join',
            "    raise Exception(msg)",
            "Exception: ", "",
            "-- Process 3 terminated with the following error:",
            "Traceback (most recent call last):",
            '  File "/work/engine/train_loop.py", line 253, in _write_metrics',
            "    all_metrics_dict = comm.gather(metrics_dict)",
            '  File "/work/utils/comm.py", line 125, in _pad_to_largest_tensor',
            "    dist.all_gather(size_list, local_size, group"]
    code, d = diagnose_json(_write(tmp_path, "cut.log", head))
    assert d["category"] == "nccl_timeout"
    # The child's own exception stays the unexplained answer.
    code, d = diagnose_json(_write(tmp_path, "own.log", head[:-2] + ["ValueError: bad batch at step 1"]))
    assert (code, d["category"]) == (1, "unknown") and d["evidence"][0]["text"] == "ValueError: bad batch at step 1"
    # A bare Exception raised anywhere else is a failure of its own.
    own = head[:3] + ['  File "/work/engine/launch.py", line 48, in join', "    raise Exception(msg)"] + head[5:]
    code, d = diagnose_json(_write(tmp_path, "mine.log", own))
    assert (code, d["category"]) == (1, "unknown")


def test_an_exception_the_job_survived_is_not_a_failure(tmp_path):
    lines = ["Traceback (most recent call last):", '  File "cb.py", line 4, in on_log',
             "requests.exceptions.ConnectionError: upload failed, retrying",
             "{'loss': 1.2, 'epoch': 1.0}",
             "{'train_runtime': 589.1, 'train_samples_per_second': 43.45, 'epoch': 1.0}",
             "[2024-01-02 10:03:54,868] [INFO] [launch.py:347:main] Process 3310 exits successfully."]
    code, d = diagnose_json(_write(tmp_path, "ok.log", lines))
    assert (code, d["category"]) == (1, "none")
    # The same exception as the last word of the log is a failure.
    code, d = diagnose_json(_write(tmp_path, "bad.log", lines[3:5] + lines[:3]))
    assert (code, d["category"]) == (1, "unknown")


# A killed rank leaves its peers waiting: gloo reports the barrier or recv it never joined as
# failed the moment the connection drops, and the launcher reports the kill only afterwards.
BARRIER_ECHOES = {
    "barrier": "[rank0]:[E1202 20:46:22.376037173 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 1 failed "
               "to pass monitoredBarrier in 15000 ms",
    "barrier_cut": "[rank0]: RuntimeError: [Rank 0]: Ranks 1 failed to pass monitoredBarrier in 1800000 ms",
    "recv": "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
            "waiting 1800000ms for recv operation to complete",
}
KILLS = {
    "torchrun": "E1202 20:46:22.382000 9792 torch/distributed/elastic/multiprocessing/api.py:1002] "
                "failed (exitcode: -9) local_rank: 1 (pid: 9795) of binary: /venv/bin/python3",
    "deepspeed": "[2024-03-02 10:11:12,345] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', "
                 "'-u', 'train.py', '--local_rank=1'] exits with return code = -9",
    "slurm_137": "srun: error: gpu-a06: task 1: Exited with exit code 137",
}


@pytest.mark.parametrize("echo", sorted(BARRIER_ECHOES))
@pytest.mark.parametrize("kill", sorted(KILLS))
def test_a_killed_rank_beats_the_peers_barrier_it_left_waiting(tmp_path, echo, kill):
    lines = ["rank 0 step 0 loss 0.3421", BARRIER_ECHOES[echo], KILLS[kill]]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "host_oom", d["rule"]
    assert any(s["category"] == "nccl_timeout" for s in d["secondary"])


def test_tasks_killed_after_a_scheduler_cancel_are_its_echo(tmp_path):
    lines = ["0: [2023-04-11 22:15:29,650] [INFO] [logging.py:96:log_dist] [Rank 0] step=2120, skipped=0",
             "slurmstepd: error: *** JOB 102334 ON gpu-a05 CANCELLED AT 2023-04-11T22:16:40 DUE TO TIME LIMIT ***",
             "srun: error: gpu-a05: task 0: Killed",
             "srun: error: gpu-a06: task 1: Exited with exit code 137"]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "job_cancelled"


def test_how_a_later_hit_was_read_does_not_mark_the_winner():
    # a cut symptom of the same category must not make the whole message look cut
    from types import SimpleNamespace
    from classifier.diagnosis.rootcause import merged_facts
    whole = SimpleNamespace(facts={"device": "3"})
    cut = SimpleNamespace(facts={"device": "5", "ordinal": "9", "message_cut": "cut",
                                 "raised_in": "x.py:f"})
    assert merged_facts([whole, cut]) == {"device": "3", "ordinal": "9"}
    assert merged_facts([cut, whole])["message_cut"] == "cut"


# A rank that segfaults prints nothing; its peer's lost connection comes first, and only the
# launcher, after the fact, says the first rank to fail died of SIGSEGV (probe 55b, torch 2.13).
PEER_CLOSED = ("[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
               "Connection closed by peer [127.0.0.1]:61084. This is typically caused by a remote worker "
               "crashing. Check the logs of the remote worker before reporting an error.")
SEGV_REPORTS = {
    "torchrun": [
        "E1206 00:53:21.623000 10297 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
        "(exitcode: -11) local_rank: 1 (pid: 10451) of binary: /venv/bin/python3",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-06_00:53:21",
        "  host      : localhost",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : -11 (pid: 10451)  (SIGSEGV)",
        "  error_file: <N/A>",
        "  traceback : Signal 11 (SIGSEGV) received by PID 10451",
    ],
    "deepspeed": [
        "[2026-12-06 00:53:40,732] [INFO] [launch.py:253:sigkill_handler] Killing subprocess 10884",
        "[2026-12-06 00:53:40,881] [ERROR] [launch.py:259:sigkill_handler] ['/venv/bin/python3', '-u', "
        "'train.py', '--local_rank=1'] exits with return code = -11",
    ],
    "spawn": [
        "    raise ProcessExitedException(",
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGSEGV",
    ],
}


@pytest.mark.parametrize("launcher", sorted(SEGV_REPORTS))
def test_a_segfault_the_launcher_reports_first_makes_the_lost_connection_its_echo(tmp_path, launcher):
    lines = ["rank 0 step 1 loss 1.0762", PEER_CLOSED] + SEGV_REPORTS[launcher]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "unknown"
    assert "SIGSEGV" in d["evidence"][0]["text"] or "-11" in d["evidence"][0]["text"]


def test_a_segfault_a_labelled_ranks_shell_reports_makes_the_lost_connection_its_echo(tmp_path):
    # mpirun --tag-output: rank 1's shell says it segfaulted; rank 0's gloo lost its peer
    lines = ["[0]<stdout>:step 1 loss 1.0762", "[0]<stderr>:" + PEER_CLOSED,
             "[1]<stderr>:Segmentation fault (core dumped)"]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "unknown"
    assert "Segmentation fault" in d["evidence"][0]["text"]


def test_a_segfault_after_another_rank_failed_first_stays_an_echo(tmp_path):
    # rank 0 failed first (exit code 1); the later segfault in teardown decides nothing
    lines = [PEER_CLOSED,
             "[2026-12-06 00:53:40,881] [ERROR] [launch.py:259:sigkill_handler] ['/venv/bin/python3', '-u', "
             "'train.py', '--local_rank=1'] exits with return code = 1",
             "[2026-12-06 00:53:41,001] [ERROR] [launch.py:259:sigkill_handler] ['/venv/bin/python3', '-u', "
             "'train.py', '--local_rank=0'] exits with return code = -11"]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    # the lost peer is an echo naming no cause (unknown), and it is the line read, not the segfault
    assert d["category"] == "unknown" and "Connection closed by peer" in d["evidence"][0]["text"]


def test_an_abort_of_a_named_rank_that_printed_no_echo_is_the_first_failure(tmp_path):
    lines = [PEER_CLOSED] + [l.replace("-11", "-6").replace("SIGSEGV", "SIGABRT").replace("Signal 11", "Signal 6")
                             for l in SEGV_REPORTS["torchrun"]]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "unknown" and "SIGABRT" in d["evidence"][0]["text"]


def test_an_abort_after_the_ranks_own_watchdog_timeout_stays_a_timeout(tmp_path):
    # NCCL's watchdog ends a timed-out rank with SIGABRT: that rank's own timeout is the answer
    lines = [WATCHDOG.format(r=1)] + [l.replace("-11", "-6").replace("SIGSEGV", "SIGABRT")
                                      for l in SEGV_REPORTS["torchrun"]]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "nccl_timeout"


# The deepspeed launcher does not say which rank aborted (probe 60c, torch 2.13, gloo): a
# gloo rank waiting in a collective raises, so the abort is the crash its peers echo, unless
# the aborted rank printed a timeout itself (NCCL's watchdog) or a barrier names a rank that did.
DS_ABORT = ("[2026-12-06 06:34:43,606] [ERROR] [launch.py:259:sigkill_handler] ['/venv/bin/python3', '-u', "
            "'train.py', '--local_rank=1'] exits with return code = -6")
BARRIER = "[rank{r}]: RuntimeError: [Rank {r}]: Ranks {m} failed to pass monitoredBarrier in 20000 ms"


@pytest.mark.parametrize("echo", [PEER_CLOSED, BARRIER.format(r=0, m=1)])
def test_an_abort_under_the_deepspeed_launcher_makes_gloo_echoes_its_echoes(tmp_path, echo):
    _, d = diagnose_json(_write(tmp_path, "job.log", ["rank 0 step 0 loss 1.0167", echo, DS_ABORT]))
    assert d["category"] == "unknown" and "-6" in d["evidence"][0]["text"]


@pytest.mark.parametrize("echo, category", [
    (WATCHDOG.format(r=1), "nccl_timeout"),                 # the aborted rank timed out itself
    (BARRIER.format(r=0, m=1) + "\n" + BARRIER.format(r=1, m=0), "nccl_timeout"),  # each names one that spoke
    (PEER_CLOSED.replace("[rank0]: ", ""), "unknown"),  # no rank label: whose echo? (an echo: unknown)
])
def test_an_abort_under_the_deepspeed_launcher_after_a_timeout_stays_the_timeout(tmp_path, echo, category):
    _, d = diagnose_json(_write(tmp_path, "job.log", echo.split("\n") + [DS_ABORT]))
    assert d["category"] == category and "-6" not in d["evidence"][0]["text"]


def test_a_segfault_does_not_overrule_a_cause(tmp_path):
    lines = [OOM, PEER_CLOSED] + SEGV_REPORTS["torchrun"]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "gpu_oom"


def test_per_rank_files_the_failing_ranks_error_beats_its_peers_lost_connection(tmp_path):
    # torchrun --log_dir / deepspeed --enable_each_rank_log: rank 0's file is read first, but its
    # lost connection is the echo of rank 1's error, which no timestamp orders against it
    waiting = _write(tmp_path, "rank0.log", ["rank 0 step 1 loss 1.0762", PEER_CLOSED])
    failing = _write(tmp_path, "rank1.log", [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/tmp/train.py", line 58, in fail',
        "[rank1]:     torch.randn(4, 7) @ torch.randn(8, 16)",
        "[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x7 and 8x16)",
    ])
    _, d = diagnose_json(waiting, failing)
    assert d["category"] == "unknown" and d["evidence"][0]["rank"] == 1


def test_per_rank_files_an_error_on_the_waiting_ranks_own_file_stays_behind_its_symptom(tmp_path):
    waiting = _write(tmp_path, "rank0.log", [PEER_CLOSED, "[rank0]: KeyError: 'labels'"])
    other = _write(tmp_path, "rank1.log", ["rank 1 step 1 loss 0.7582"])
    _, d = diagnose_json(waiting, other)
    # the lost peer names no cause, so the waiting rank's own error is what is left to read
    assert d["category"] == "unknown" and d["evidence"][0]["rank"] == 0


# A rank that exits with a code of its own (no traceback, no signal) leaves its peer's gloo
# monitored barrier failing at once (probe 56a, torch 2.13). Without debugging the barrier adds
# the wait's own error, the closed connection; under TORCH_DISTRIBUTED_DEBUG=DETAIL it drops
# it, and only the launcher, after the fact, says which rank left first.
DETAIL_BARRIER = ("[rank0]:[E1206 03:34:15.189524041 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 1 failed "
                  "to pass monitoredBarrier in 10000 ms")
ROOT_SUMMARY = [
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2026-12-06_03:34:15",
    "  host      : localhost",
    "  rank      : {rank} (local_rank: {rank})",
    "  exitcode  : {code} (pid: 1827) ",
    "  error_file: <N/A>",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
]


def _summary(rank, code):
    return [l.format(rank=rank, code=code) for l in ROOT_SUMMARY]


@pytest.mark.parametrize("report", ["torchrun", "spawn"])
def test_a_barrier_naming_the_rank_that_left_first_is_its_echo(tmp_path, report):
    tail = _summary(1, 3) if report == "torchrun" else [
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with exit code 3"]
    _, d = diagnose_json(_write(tmp_path, "job.log", ["rank 0 step 0 loss 0.41", DETAIL_BARRIER] + tail))
    assert d["category"] == "unknown"
    assert "exit" in d["evidence"][0]["text"]


def test_a_barrier_whose_reporter_failed_first_stays_a_timeout(tmp_path):
    # a hang: the waiting rank raised and is the first failure; the hung rank was terminated
    lines = ["rank 0 step 0 loss 0.41", DETAIL_BARRIER] + _summary(0, 1)
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "nccl_timeout"


def test_a_barrier_whose_original_exception_is_a_closed_connection_lost_a_peer(tmp_path):
    lines = ["rank 0 step 0 loss 0.41",
             "[rank0]: RuntimeError: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 10000 ms",
             "[rank0]:  Original exception: ",
             "[rank0]: " + PEER_CLOSED[len("[rank0]: RuntimeError: "):]]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["rule"] == "connection_failure.monitored_barrier_peer_closed"


def test_the_end_of_torchelastics_summary_alone_is_a_failure(tmp_path):
    _, d = diagnose_json(_write(tmp_path, "job.log", _summary(2, 1)[1:]))
    assert d["category"] == "unknown" and "exitcode" in d["evidence"][0]["text"]


def test_a_barrier_echo_of_a_rank_that_raised_shows_that_ranks_error(tmp_path):
    lines = ["[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x7 and 8x8)",
             DETAIL_BARRIER] + _summary(1, 1)
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == "unknown" and "mat1" in d["evidence"][0]["text"]


NPU_RAISE = [
    "[rank1]:   File \"/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py\", line 3703, in barrier",
    "[rank1]:     work.wait()",
    "[rank1]: RuntimeError: npuSynchronizeDevice:torch_npu/csrc/core/npu/NPUStream.cpp:363 NPU error, error code is 107020",
    "[rank1]: [ERROR] 2024-07-03-11:28:40 (PID:639, Device:0, RankID:1) ERR00100 PTA call acl api failed.",
    "[rank1]: EI9999: Inner Error!",
]


@pytest.mark.parametrize("reporter, expected", [
    # torch_npu raises a bare error code; CANN's report right under it says an HCCL task timed out
    ("rank1", "nccl_timeout"),
    # the report under the raise has no timeout; rank 0's timeout is an echo of rank 1's failure
    ("rank0", "unknown"),
])
def test_a_device_error_is_explained_only_by_its_own_rank_s_report_under_it(tmp_path, reporter, expected):
    lines = NPU_RAISE + [
        f"[{reporter}]: EI9999: 2024-07-03-11:28:40.419.527  The error from device(chipId:0, dieId:0), "
        "serial number is 1, hccl fftsplus task timeout occurred during task execution, stream_id:4",
    ]
    _, d = diagnose_json(_write(tmp_path, "job.log", lines))
    assert d["category"] == expected
