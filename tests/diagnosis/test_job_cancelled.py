"""A job the scheduler ended is `job_cancelled`, unless something failed before the end."""

import pytest

from classifier.jobs.group import group_key
from conftest import diagnose_json, run_dsdiag

STEP = "[2024-05-11 09:59:40,111] [INFO] [logging.py:128:log_dist] [Rank 0] step=9800, skipped=0, lr=[2.9e-05]"
TIME_LIMIT = "slurmstepd: error: *** JOB 4412093 ON gpu-a-12 CANCELLED AT 2024-05-11T10:00:02 DUE TO TIME LIMIT ***"
# What torchrun prints once Slurm's SIGTERM reaches it: until now this echo was the evidence of
# an `unknown` diagnosis.
TEARDOWN = [
    "W0511 10:00:02.311000 4011 torch/distributed/elastic/agent/server/api.py:704] Received "
    "Signals.SIGTERM death signal, shutting down workers",
    "W0511 10:00:02.312000 4011 torch/distributed/elastic/multiprocessing/api.py:858] Sending process "
    "4021 closing signal SIGTERM",
    "Traceback (most recent call last):",
    '  File "/usr/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4011 got signal: 15",
]
SIGKILL_LATER = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 "
                 "(pid: 4021) of binary: /usr/bin/python3")
OOM = ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a "
       "total capacity of 79.15 GiB of which 1.07 GiB is free.")
WATCHDOG = ("[rank1]:[E1002 14:31:10.000000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")
CONFIG = ("[rank0]: ValueError: Check batch related parameters. train_batch_size is not equal to "
          "micro_batch_per_gpu * gradient_acc_step * world_size 256 != 4 * 8 * 4")
UNEXPLAINED = "[rank1]: ValueError: too many values to unpack (expected 2)"


def _log(tmp_path, lines, name="slurm-4412093.out"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("end,rule", [
    (TIME_LIMIT, "job_cancelled.slurm_time_limit"),
    (TIME_LIMIT.replace("TIME LIMIT", "PREEMPTION"), "job_cancelled.slurm_preempted"),
    (TIME_LIMIT.replace("TIME LIMIT", "NODE FAILURE"), "job_cancelled.slurm_node_failure"),
    (TIME_LIMIT.replace(" DUE TO TIME LIMIT", ""), "job_cancelled.slurm_cancelled"),
    ("0: " + TIME_LIMIT.replace("JOB 4412093", "STEP 4412093.0"), "job_cancelled.slurm_time_limit"),
])
def test_a_job_the_scheduler_ended_is_job_cancelled(tmp_path, end, rule):
    code, d = diagnose_json(_log(tmp_path, [STEP, end] + TEARDOWN + [SIGKILL_LATER]))
    assert (code, d["category"], d["rule"], d["layer"]) == (0, "job_cancelled", rule, "launch")
    assert d["evidence"][0]["text"].endswith(end.removeprefix("0: "))
    assert d["retryable"] is True and "checkpoint" in d["retry_reason"]
    assert any("checkpoint" in step for step in d["remediation"])


def test_time_limit_remediation_names_the_job_and_the_signal_lead(tmp_path):
    _, d = diagnose_json(_log(tmp_path, [STEP, TIME_LIMIT] + TEARDOWN))
    text = "\n".join(d["remediation"])
    assert "Job 4412093" in text and "--time" in text and "--requeue" in text
    assert "--signal=B:USR1@120" in text


def test_a_sigterm_from_outside_alone_is_job_cancelled(tmp_path):
    _, d = diagnose_json(_log(tmp_path, [STEP] + TEARDOWN))
    assert (d["category"], d["rule"]) == ("job_cancelled", "job_cancelled.launcher_got_sigterm")


@pytest.mark.parametrize("message,category,rule,fact", [
    # the resource the job used up is the cause: memory as the OOM killer's, disk as ENOSPC
    ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 42860Ki. "
     "Container train was using 247Gi, request is 200Gi, has larger consumption of memory. ",
     "host_oom", "host_oom.k8s_memory_eviction", ("container", "train")),
    ("The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: "
     "8123456Ki. Container train was using 96Gi, which exceeds its request of 0. ",
     "disk_full", "disk_full.k8s_storage_eviction", ("resource", "ephemeral-storage")),
    # another resource: the cluster ended the job
    ("The node was low on resource: pids. Threshold quantity: 1000, available: 12. ",
     "job_cancelled", "job_cancelled.k8s_evicted", ("resource", "pids")),
])
def test_a_kubernetes_eviction_is_filed_under_the_resource_it_names(tmp_path, message, category,
                                                                     rule, fact):
    describe = ["Name:             ds-train-worker-1", "Status:           Failed",
                "Reason:           Evicted", "Message:          " + message]
    _, d = diagnose_json(_log(tmp_path, describe, "describe.txt"))
    assert (d["category"], d["rule"], d["facts"].get(fact[0])) == (category, rule, fact[1])


def test_an_eviction_naming_no_resource_is_job_cancelled(tmp_path):
    _, d = diagnose_json(_log(tmp_path, ["Status:           Failed", "Reason:           Evicted"],
                              "describe.txt"))
    assert (d["category"], d["rule"]) == ("job_cancelled", "job_cancelled.k8s_evicted")


@pytest.mark.parametrize("before,category", [
    (OOM, "gpu_oom"),                 # a cause before the end
    (CONFIG, "batch_size_mismatch"),  # a config error before the end
    (WATCHDOG, "nccl_timeout"),       # a hang the watchdog caught, then the time limit
    (UNEXPLAINED, "unknown"),         # an error no rule explains is still the answer
])
def test_a_failure_before_the_end_is_never_hidden_by_it(tmp_path, before, category):
    _, d = diagnose_json(_log(tmp_path, [STEP, before, TIME_LIMIT] + TEARDOWN + [SIGKILL_LATER]))
    assert d["category"] == category
    if category != "unknown":
        assert "job_cancelled" in [s["category"] for s in d["secondary"]]


def test_a_failure_in_another_rank_file_without_time_order_is_not_hidden(tmp_path):
    # No timestamps join the two files, so the watchdog may have come first: it wins.
    ended = _log(tmp_path, [TIME_LIMIT], "rank0.log")
    hung = _log(tmp_path, [WATCHDOG.removeprefix("[rank1]:")], "rank1.log")
    _, d = diagnose_json(ended, hung)
    assert d["category"] == "nccl_timeout"


def test_a_step_cancelled_after_a_task_failed_is_only_an_echo(tmp_path):
    # srun tears the step down after one task exits: the cancel is no reason of its own.
    lines = [STEP, UNEXPLAINED, "srun: error: gpu-a-12: task 1: Exited with exit code 1",
             "slurmstepd: error: *** STEP 4412093.0 ON gpu-a-12 CANCELLED AT 2024-05-11T10:00:02 ***"]
    _, d = diagnose_json(_log(tmp_path, lines))
    assert d["category"] == "unknown"


def test_a_step_srun_tore_down_after_a_failed_launch_is_no_cancel(tmp_path):
    # No exception at all: srun says the launch failed, then the step is cancelled on the rest.
    cancel = "slurmstepd: error: *** STEP 47.0 ON n-c72 CANCELLED AT 2020-07-04T14:40:39 ***"
    lines = ["srun: error: Task launch for 47.0 failed on node n-c122: Invalid job credential",
             "srun: error: Application launch failed: Invalid job credential",
             "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."] + ["n-c72"] * 4 + [cancel]
    _, d = diagnose_json(_log(tmp_path, lines))
    assert d["category"] == "unknown" and d["evidence"][0]["text"].startswith("srun: error: Task launch")
    # the cancel alone, with nothing failing before it, stays what it was
    _, d = diagnose_json(_log(tmp_path, [STEP, cancel]))
    assert d["rule"] == "job_cancelled.slurm_step_cancelled"


def test_exit_code_for_pod_failure_policy(tmp_path):
    path = _log(tmp_path, [STEP, TIME_LIMIT] + TEARDOWN)
    proc = run_dsdiag("--k8s-termination-log", tmp_path / "termination-log", path)
    assert proc.returncode == 85, proc.stderr.decode()
    assert "job_cancelled" in (tmp_path / "termination-log").read_text()


def test_time_limit_jobs_group_together_whatever_their_job_id_node_and_time(tmp_path):
    first = _log(tmp_path, [STEP, TIME_LIMIT], "slurm-4412093.out")
    other = TIME_LIMIT.replace("4412093", "4419001").replace("gpu-a-12", "gpu-b-07").replace("10:00:02", "22:00:09")
    second = _log(tmp_path, [STEP, other], "slurm-4419001.out")
    keys = {group_key(diagnose_json(path)[1]) for path in (first, second)}
    assert keys == {"job_cancelled.slurm_time_limit"}


def test_what_sigterm_does_to_the_ranks_is_no_unexplained_error_before_an_eviction(tmp_path):
    # `kubectl logs` pasted above `kubectl describe`: the ranks' SIGTERM deaths come first.
    lines = [STEP, "[rank0]: RuntimeError: DataLoader worker (pid 30412) is killed by signal: Terminated. ",
             "Status:           Failed", "Reason:           Evicted",
             "Message:          The node was low on resource: memory. Threshold quantity: 100Mi, available: 61212Ki. "]
    _, d = diagnose_json(_log(tmp_path, lines, "paste.txt"))
    assert d["rule"] == "host_oom.k8s_memory_eviction"
    lines[-1] = "Message:          The node was low on resource: pids. Threshold quantity: 1000, available: 12. "
    _, d = diagnose_json(_log(tmp_path, lines, "paste.txt"))
    assert d["rule"] == "job_cancelled.k8s_evicted"


SUBMITIT_END = [
    "submitit WARNING (2024-05-11 09:58:02,004) - Caught signal SIGUSR2 on gpu-a-12: this job is timed-out.",
    "submitit INFO (2024-05-11 09:58:02,005) - Job has timed out. Ran 2878 minutes out of requested 2880 minutes.",
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/submitit/core/job_environment.py", line 227, in '
    "checkpoint_and_try_requeue",
    "    raise utils.UncompletedJobError(message)",
    "submitit.core.utils.UncompletedJobError: Job not requeued because: timed-out and not checkpointable.",
]


def test_submitit_reporting_slurm_s_signal_is_job_cancelled(tmp_path):
    _, d = diagnose_json(_log(tmp_path, [STEP] * 3 + SUBMITIT_END, name="4412093_0_log.err"))
    assert d["category"] == "job_cancelled" and d["rule"] == "job_cancelled.submitit_signal"
    assert d["facts"]["case"] == "timed-out" and d["facts"]["node"] == "gpu-a-12"
    # a CUDA OOM before submitit's signal is what ended the run
    assert diagnose_json(_log(tmp_path, [STEP, OOM] + SUBMITIT_END))[1]["category"] == "gpu_oom"


def test_submitit_s_uncompleted_job_state_decides_between_cancel_and_memory(tmp_path):
    head = ["Traceback (most recent call last):", '  File "launch.py", line 40, in <module>',
            "    job.result()",
            "submitit.core.utils.UncompletedJobError: Job 6029915_3 (task: 0) with path "
            "/checkpoint/u/jobs/6029915_3/6029915_3_0_result.pkl"]
    for state, category in (("TIMEOUT", "job_cancelled"), ("PREEMPTED", "job_cancelled"),
                            ("OUT_OF_MEMORY", "host_oom")):
        lines = head + [f"has not produced any output (state: {state})", "No output/error stream produced !"]
        assert diagnose_json(_log(tmp_path, lines))[1]["category"] == category, state


# Probe 60a: SIGTERM to rank 0 of torchrun (c10d rendezvous, torch 2.13, gloo). Rank 1, in an
# all_reduce with it, reports the lost connection before the agent notices rank 0's exit; the
# summary names rank 0's SIGTERM as the first observed failure, so the lost connection is its echo.
def _stopped_rank(root_rank, root_exit):
    return [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/tmp/job/train.py", line 41, in main',
        "[rank1]:     dist.all_reduce(p_.grad)",
        "[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
        "Connection closed by peer [127.0.0.1]:29397. This is typically caused by a remote worker crashing.",
        "W1206 05:58:50.735000 24423 torch/distributed/elastic/multiprocessing/api.py:1028] Sending "
        "process 24446 closing signal SIGTERM",
        f"E1206 05:58:50.862000 24423 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
        f"(exitcode: {root_exit}) local_rank: {root_rank} (pid: 24445) of binary: /usr/bin/python3",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-06_05:58:50",
        "  host      : localhost",
        f"  rank      : {root_rank} (local_rank: {root_rank})",
        f"  exitcode  : {root_exit} (pid: 24445)",
        "  error_file: <N/A>",
    ]


def test_a_peers_lost_connection_is_the_echo_of_the_root_ranks_sigterm(tmp_path):
    _, d = diagnose_json(_log(tmp_path, [STEP] + _stopped_rank(0, -15)))
    assert (d["category"], d["rule"]) == ("job_cancelled", "job_cancelled.elastic_first_failure_sigterm")


def test_a_lost_connection_on_the_root_rank_itself_is_no_echo(tmp_path):
    # the rank that lost the connection is the one torchelastic saw fail first: its own failure
    _, d = diagnose_json(_log(tmp_path, [STEP] + _stopped_rank(1, 1)))
    assert d["category"] != "job_cancelled"
