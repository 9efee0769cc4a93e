"""The culprit: which rank and host a multi-rank failure started on, and when the log cannot say."""

import pytest

from conftest import LOGS, diagnose_json, run_dsdiag

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.topology import Topology, expand_hostlist, host_from_path
from classifier.integrations.k8s import termination_message
from classifier.integrations.slurm import comment_text

CULPRIT = LOGS / "culprit"

JUDGED = [
    # log, category, ranks, hosts
    ("nccl_straggler_16r_2h.log", "nccl_timeout", [5], ["gpu-a"]),
    ("xid_one_of_4_hosts_32r.log", "gpu_hardware", [19], ["gpu-node-3"]),
    # DeepSpeed's -9 line shows the last command it spawned, not the dead rank's: host only
    ("host_oom_one_of_4_workers.log", "host_oom", [], ["worker-2"]),
    ("rendezvous_one_of_4_nodes.log", "connection_failure", [], ["llm-worker-2"]),
]


@pytest.mark.parametrize("name,category,ranks,hosts", JUDGED, ids=[j[0] for j in JUDGED])
def test_multi_rank_jobs_name_the_rank_and_host(name, category, ranks, hosts):
    code, d = diagnose_json(CULPRIT / name)
    assert (code, d["category"]) == (0, category)
    c = d["culprit"]
    assert (c["ranks"], c["hosts"]) == (ranks, hosts)
    assert 0.5 <= c["confidence"] <= 1 and c["reason"]
    assert set(c) == {"ranks", "hosts", "reason", "confidence"}


def _diagnose(tmp_path, text, name="job.log"):
    path = tmp_path / name
    path.write_text(text)
    return diagnose_job([str(path)])


def _watchdog(rank, seq, op="ALLREDUCE"):
    return (f"[E302 10:44:12.514627 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=8, NumelOut=8, "
            f"Timeout(ms)=600000) ran for 600081 milliseconds before timing out.")


def test_the_rank_whose_sequence_number_lags_under_srun_gets_its_node_from_the_node_list(tmp_path):
    lines = ["SLURM_JOB_NODELIST=node-[07-08]", "SLURM_TASKS_PER_NODE=4"]
    lines += [f"{r}: {_watchdog(r, 51 if r == 6 else 52, 'BROADCAST')}" for r in range(8)]
    d = _diagnose(tmp_path, "\n".join(lines) + "\n")
    assert d["category"] == "nccl_timeout"
    c = d["culprit"]
    assert (c["ranks"], c["hosts"]) == ([6], ["node-08"])
    assert "#51" in c["reason"] and "#52" in c["reason"]
    assert c["confidence"] < 0.75  # the host is read from the layout, not seen on its lines


def test_the_kernel_oom_killer_names_the_host_and_its_pid_the_rank(tmp_path):
    lines = []
    for n, host in enumerate(("worker-0", "worker-1")):
        lines.append(f"{host}: [2026-03-04 02:10:13,220] [INFO] [launch.py:152:main] nnodes=2, "
                     f"num_local_procs=4, node_rank={n}")
        for lr in range(4):
            lines.append(f"{host}: [2026-03-04 02:10:13,240] [INFO] [launch.py:256:main] process "
                         f"{5200 + n * 10 + lr} spawned with command: ['/usr/bin/python3', '-u', "
                         f"'train.py', '--local_rank={lr}']")
    lines.append("Mar  4 02:44:50 worker-1 kernel: Out of memory: Killed process 5213 (python3) "
                 "total-vm:181231212kB, anon-rss:120987424kB, file-rss:0kB, shmem-rss:0kB")
    d = _diagnose(tmp_path, "\n".join(lines) + "\n")
    assert d["category"] == "host_oom"
    assert (d["culprit"]["ranks"], d["culprit"]["hosts"]) == ([7], ["worker-1"])


def test_per_rank_files_named_after_their_host(tmp_path):
    # gloo: ranks 0, 1 and 3 time out in recv; rank 2 (node-b) never entered the collective
    job = tmp_path / "job"
    job.mkdir()
    for rank, host in enumerate(("node-a", "node-a", "node-b", "node-b")):
        text = f"step 12 rank {rank}\n"
        if rank != 2:
            text += ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
                     "Timed out waiting 3000ms for recv operation to complete\n")
        (job / f"{host}.rank{rank}.log").write_text(text)
    code, d = diagnose_json(job)
    assert d["category"] == "nccl_timeout"
    assert (d["culprit"]["ranks"], d["culprit"]["hosts"]) == ([2], ["node-b"])


NO_CULPRIT = {
    # every rank reports the same collective: the log does not single one out
    "all_ranks_timed_out": "\n".join(f"[rank{r}]:{_watchdog(r, 740)}" for r in range(8)),
    # only rank 0's file of a 16-rank job: fifteen ranks unheard is no evidence against them
    "one_rank_of_sixteen": "node1:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 busId 18000 - Init COMPLETE\n"
                           + f"[rank0]:{_watchdog(0, 740)}",
    # a config error every rank raises is nobody's node
    "config_on_every_rank": "\n".join(
        f"node-{r // 4}: [rank{r}]: AssertionError: Check batch related parameters. train_batch_size is not "
        f"equal to micro_batch_per_gpu * gradient_acc_step * world_size 32 != 4 * 2 * 8" for r in range(8)),
    # Xids on two hosts: which one started it is not in the log
    "xid_on_two_hosts": "Mar  2 11:02:41 gpu-1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, "
                        "GPU has fallen off the bus.\nMar  2 11:02:42 gpu-2 kernel: NVRM: Xid (PCI:0000:3b:00): "
                        "79, pid=2, name=python, GPU has fallen off the bus.",
    # ranks spread over four sequence numbers: no straggler behind a crowd that agrees
    "spread_sequence_numbers": "\n".join(f"{r}: {_watchdog(r, 884120 + r)}" for r in range(4)),
    # two groups' collectives (pipeline stages): their sequence numbers do not compare
    "two_collectives": "\n".join(f"{r}: {_watchdog(r, 12 if r else 11, 'BROADCAST' if r % 2 else 'ALLREDUCE')}"
                                  for r in range(4)),
    # every node fails to reach the rendezvous: no node is singled out
    "every_node_unreachable": "\n".join(
        f"[pod/w-{i}/pytorch] torch.distributed.DistNetworkError: The client socket has timed out after "
        f"900s while trying to connect to (w-0.svc, 29400)." for i in range(4)),
}


@pytest.mark.parametrize("name", sorted(NO_CULPRIT))
def test_no_culprit_when_the_log_cannot_say(tmp_path, name):
    d = _diagnose(tmp_path, NO_CULPRIT[name] + "\n")
    assert d["category"] not in ("none", "unknown"), d["category"]
    assert d["culprit"] is None


def test_a_healthy_log_has_a_null_culprit():
    _, d = diagnose_json(LOGS / "healthy.log")
    assert d["category"] == "none" and d["culprit"] is None


def test_the_first_rank_with_a_real_error_is_the_culprit_of_its_echoes():
    _, d = diagnose_json(LOGS / "srun_torchrun_rank13.log")
    assert d["category"] == "gpu_oom"
    assert d["culprit"]["ranks"] == [13]


def test_every_output_shows_the_culprit_in_one_line():
    path = CULPRIT / "nccl_straggler_16r_2h.log"
    _, d = diagnose_json(path)
    line = "rank 5 on gpu-a: its log stops at step 740; it never reached the ALLREDUCE"
    for fmt in ("text", "markdown"):
        out = run_dsdiag("--format", fmt, str(path)).stdout.decode()
        assert line in out, fmt
    assert line in comment_text(d)
    assert line in termination_message(d)


def test_hostlists_file_names_and_bus_ids():
    assert expand_hostlist("node-[01-03,07],gpu5") == ["node-01", "node-02", "node-03", "node-07", "gpu5"]
    assert host_from_path("logs/node-b.rank2.log") == "node-b"
    assert host_from_path("gpu-node-3.dmesg") == "gpu-node-3"
    assert host_from_path("rank2.log") is None and host_from_path("slurm-123.4.out") is None
    topo = Topology()
    topo._comms.append(("gpu-3", 19, 32, "5d000"))
    topo.finish()
    assert topo.rank_of_bus("gpu-3", "0000:5d:00") == 19 and topo.rank_of_bus("gpu-2", "0000:5d:00") is None


def _old_torch_straggler(rdzv):
    """torch < 2.2: no `[rankN]:` label, the rank only inside the message; pdsh host labels."""
    lines = []
    if rdzv:
        for n, host in enumerate(("gpu-a", "gpu-b")):
            ranks = ", ".join(str(8 * n + i) for i in range(8))
            lines.append(f"{host}: I0302 10:14:05.000000 77 torch/distributed/elastic/agent/server/api.py:555] "
                         f"[default] Rendezvous complete for workers. Result: restart_count=0 master_addr=gpu-a "
                         f"master_port=29500 group_rank={n} group_world_size=2 local_ranks=[0, 1, 2, 3, 4, 5, 6, 7] "
                         f"role_ranks=[{ranks}] global_ranks=[{ranks}] role_world_sizes=[16] global_world_sizes=[16]")
    for r in range(16):
        if r != 12:
            lines.append(f"{'gpu-a' if r < 8 else 'gpu-b'}: [E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught "
                         "collective operation timeout: WorkNCCL(SeqNum=9012, OpType=ALLGATHER, NumelIn=1, "
                         "NumelOut=16, Timeout(ms)=1800000) ran for 1800312 milliseconds before timing out.")
    return "\n".join(lines) + "\n"


def test_a_silent_rank_of_an_old_torch_log_gets_its_host_from_the_block_layout(tmp_path):
    d = _diagnose(tmp_path, _old_torch_straggler(rdzv=False))
    assert (d["culprit"]["ranks"], d["culprit"]["hosts"]) == ([12], ["gpu-b"])
    guessed = d["culprit"]["confidence"]
    d = _diagnose(tmp_path, _old_torch_straggler(rdzv=True))  # torchelastic says where rank 12 ran
    assert (d["culprit"]["ranks"], d["culprit"]["hosts"]) == ([12], ["gpu-b"])
    assert d["culprit"]["confidence"] > guessed


def test_a_per_host_dmesg_file_and_torchelastic_s_pid_name_host_and_rank(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.log").write_text(
        "[rank9]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-03-02_11:02:44\n"
        "  host      : gpu-node-2\n  rank      : 9 (local_rank: 1)\n  exitcode  : -6 (pid: 48113)\n")
    (job / "dmesg-gpu-node-2.log").write_text(
        "[812330.448818] NVRM: Xid (PCI:0000:2a:00): 79, pid=48113, name=python, GPU has fallen off the bus.\n")
    (job / "dmesg-gpu-node-1.log").write_text("[812331.102938] perf: interrupt took too long (2504 > 2500)\n")
    d = diagnose_job([str(p) for p in sorted(job.iterdir())])
    assert d["category"] == "gpu_hardware"
    assert (d["culprit"]["ranks"], d["culprit"]["hosts"]) == ([9], ["gpu-node-2"])


@pytest.mark.parametrize("local,ranks", [(5, [21]), (7, [])])
def test_the_launcher_s_local_rank_counts_only_when_it_cannot_be_its_last_command(tmp_path, local, ranks):
    lines = [f"worker-{n}: [2026-03-04 02:10:13,220] [INFO] [launch.py:152:main] nnodes=4, "
             f"num_local_procs=8, node_rank={n}" for n in range(4)]
    lines.append(f"worker-2: [2026-03-04 02:44:51,734] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', "
                 f"'-u', 'train.py', '--local_rank={local}'] exits with return code = -9")
    d = _diagnose(tmp_path, "\n".join(lines) + "\n")
    assert (d["culprit"]["ranks"], d["culprit"]["hosts"]) == (ranks, ["worker-2"])


def test_localhost_is_never_a_host_to_drain(tmp_path):
    lines = ["[2026-11-30 01:41:38,772] [INFO] [launch.py:169:main] global_rank_mapping=defaultdict(<class 'list'>, "
             "{'localhost': [0, 1, 2, 3]})"]
    lines += [f"localhost: [rank{r}]:{_watchdog(r, 40)}" for r in (0, 1, 3)] + ["localhost: [rank2]: step 39"]
    d = _diagnose(tmp_path, "\n".join(lines) + "\n")
    assert (d["culprit"]["ranks"], d["culprit"]["hosts"]) == ([2], [])


def test_srun_node_list_alone_places_ranks_in_equal_blocks(tmp_path):
    lines = ["SLURM_JOB_NODELIST=gpu-[101-102]"]
    lines += [f"{r}: [rank{r}]:{_watchdog(r, 740)}" for r in range(16) if r != 11]
    lines.append("11: [rank11]: step 739 loss 2.01")
    d = _diagnose(tmp_path, "\n".join(lines) + "\n")
    assert (d["culprit"]["ranks"], d["culprit"]["hosts"]) == ([11], ["gpu-102"])
