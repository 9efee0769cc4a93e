#!/usr/bin/env python3
"""Generate real failure logs by running tiny torch + DeepSpeed jobs on this CPU box.

Each scenario is one command (a `deepspeed` or `torchrun` launch of 2 gloo ranks on
127.0.0.1, or a small bash wrapper around plain python ranks).  Its merged stdout+stderr
is captured byte for byte into corpus/<category>/<scenario>.log, and a sidecar
corpus/<category>/<scenario>.yaml records the label, the evidence lines (found by
searching the captured log for the scenario's signature regexes), the exact command,
the versions and the scenario family.

Stdlib only.  The python that runs the jobs (a venv with torch + deepspeed) is given by
--python or $DSDIAG_GEN_PYTHON; its bin/ must also hold `deepspeed` and `torchrun`.

    python corpus/generate/run.py --list
    python corpus/generate/run.py --only NAME [--only NAME2 ...]
    python corpus/generate/run.py --all
"""
import argparse
import contextlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCEN = HERE / "scenarios"
CORPUS = HERE.parent
DEFAULT_TIMEOUT = 120

# Variables a parent shell may have set that would change what a job does.
SCRUB = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
         "GROUP_RANK", "CUDA_VISIBLE_DEVICES", "DS_ACCELERATOR", "TORCHELASTIC_ERROR_FILE",
         "TORCH_EXTENSIONS_DIR", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "CXX", "CC")


# --------------------------------------------------------------------------- scenarios
# Placeholders in cmd / env values / signatures:
#   {py} venv python   {ds} deepspeed launcher   {torchrun} torchrun   {bin} venv bin dir
#   {port} a free high port   {work} a scratch dir for this scenario (removed afterwards)
# env: scenario-specific variables (value None removes the variable; DS_ACCELERATOR=cpu is
#      set unless the scenario overrides it).
# signature: regexes, each must match at least one log line; every matching line is evidence,
#            unless `evidence` (regexes) is given: then only lines matching those are evidence.
# expect: "fail" (non-zero exit) or "ok" (exit 0).
# xfail: a reason, written to the sidecar, when dsdiag is known to get the case wrong
#        (tests/corpus/test_corpus_cases.py runs such a case as a strict xfail).
# setup: names of context managers below (listen_port, tmpfs, cext, fresh_ext, nocxx_path).

DS = ["{ds}", "--num_gpus", "2", "--master_port", "{port}"]
TR = ["{torchrun}", "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port", "{port}"]


def two_ranks(cmd, env0="", env1="", world=2):
    """A bash wrapper that starts ranks 0 and 1 as plain processes and waits for both."""
    return ["bash", "-c",
            f"RANK=0 LOCAL_RANK=0 WORLD_SIZE={world} {env0} {cmd} & p0=$!; "
            f"RANK=1 LOCAL_RANK=1 WORLD_SIZE={world} {env1} {cmd}; r1=$?; "
            f"wait $p0; r0=$?; echo \"rank exit codes: $r0 $r1\"; exit $((r0 > r1 ? r0 : r1))"]


SCENARIOS = []


def scenario(name, category, family, cmd, signature, expect="fail", env=None, setup=(),
             timeout=DEFAULT_TIMEOUT, note="", evidence=None, xfail="", culprit=None,
             label_reason="", keep=(), form=""):
    SCENARIOS.append(dict(name=name, category=category, family=family, cmd=cmd,
                          signature=signature, expect=expect, env=env or {}, setup=tuple(setup),
                          timeout=timeout, note=note, evidence=evidence, xfail=xfail,
                          culprit=culprit, label_reason=label_reason, keep=tuple(keep), form=form))


# Two fake nodes of two ranks each: DeepSpeed's own per-node launcher (launcher/launch.py, what
# pdsh runs on every node) started twice on 127.0.0.1 with node_rank 0 and 1, each node's output
# labelled `node-a: ` / `node-b: ` the way pdsh labels it. world_info is {"node-a": [0, 1],
# "node-b": [0, 1]}, base64 as runner.py passes it.
WORLD_INFO_2X2 = "eyJub2RlLWEiOiBbMCwgMV0sICJub2RlLWIiOiBbMCwgMV19"


def two_nodes(args):
    """A bash wrapper that runs DeepSpeed's per-node launcher for node-a and node-b, pdsh-style."""
    node = ("{py} -u -m deepspeed.launcher.launch --world_info=" + WORLD_INFO_2X2 +
            " --node_rank=%d --master_addr=127.0.0.1 --master_port={port} multi_node.py " + args)
    return ["bash", "-c",
            f"set -o pipefail; ({node % 0} 2>&1 | sed -u 's/^/node-a: /') & p=$!; "
            f"({node % 1} 2>&1 | sed -u 's/^/node-b: /'); r1=$?; wait $p; r0=$?; "
            "exit $((r0 > r1 ? r0 : r1))"]


def ds_train(cfg, *extra):
    return ["ds_train.py", "--config", f"configs/{cfg}", *extra]


# ---- config_field_error
scenario("cfg_zero_key_typo_ds", "config_field_error", "config_unknown_key",
         DS + ds_train("zero_key_typo.json"),
         [r"ValidationError", r"overlap_com\s*$", r"Extra inputs are not permitted"])
scenario("cfg_zero_key_typo_torchrun_record", "config_field_error", "config_unknown_key",
         TR + ds_train("zero_key_typo.json", "--record"),
         [r"ValidationError", r"Extra inputs are not permitted"])
scenario("cfg_zero_stage_type_ds", "config_field_error", "config_wrong_type",
         DS + ds_train("zero_stage_type.json"),
         [r"ValidationError", r"Input should be"])
scenario("cfg_optimizer_param_typo_ds", "config_field_error", "optimizer_param_typo",
         DS + ds_train("optimizer_param_typo.json"),
         [r"unexpected keyword argument 'beta'"])
scenario("cfg_torch_optimizer_param_typo_torchrun", "config_field_error", "optimizer_param_typo",
         TR + ds_train("torch_optimizer_param_typo.json"),
         [r"unexpected keyword argument 'momentun'"])

# ---- precision_conflict
scenario("prec_fp16_bf16_ds", "precision_conflict", "fp16_and_bf16",
         DS + ds_train("fp16_bf16.json"), [r"bfloat16 and fp16 modes cannot be simultaneously enabled"])
scenario("prec_fp16_bf16_torchrun", "precision_conflict", "fp16_and_bf16",
         TR + ds_train("fp16_bf16.json", "--record"), [r"bfloat16 and fp16 modes cannot be simultaneously enabled"])

# ---- batch_size_mismatch
scenario("batch_mismatch_ds", "batch_size_mismatch", "batch_arithmetic",
         DS + ds_train("batch_mismatch.json"), [r"train_batch_size is not equal to"])
scenario("batch_mismatch_torchrun", "batch_size_mismatch", "batch_arithmetic",
         TR + ds_train("batch_mismatch.json"), [r"train_batch_size is not equal to"])
scenario("batch_gas_zero_ds", "batch_size_mismatch", "grad_accum_zero",
         DS + ds_train("batch_gas_zero.json"), [r"Gradient accumulation steps: 0 has to be greater than 0"])

# ---- config_json_syntax
scenario("json_comments_jsonload_ds", "config_json_syntax", "json_load_strict",
         DS + ds_train("commented.json", "--fail", "json_load"), [r"JSONDecodeError"])
scenario("json_trailing_comma_jsonload_torchrun", "config_json_syntax", "json_load_strict",
         TR + ds_train("trailing_comma.json", "--fail", "json_load", "--record"), [r"JSONDecodeError"])
scenario("json_truncated_hjson_ds", "config_json_syntax", "hjson_truncated",
         DS + ds_train("truncated.json"), [r"HjsonDecodeError"])
scenario("json_truncated_hjson_torchrun", "config_json_syntax", "hjson_truncated",
         TR + ds_train("truncated.json"), [r"HjsonDecodeError"])

# ---- scheduler_config
scenario("sched_warmupdecay_no_total_ds", "scheduler_config", "warmupdecay_total_steps",
         DS + ds_train("warmupdecay_no_total.json"), [r"total_num_steps"])
scenario("sched_warmupdecay_no_total_torchrun", "scheduler_config", "warmupdecay_total_steps",
         TR + ds_train("warmupdecay_no_total.json", "--record"), [r"total_num_steps"])

scenario("sched_onecycle_no_params_ds", "scheduler_config", "scheduler_missing_params",
         DS + ds_train("onecycle_no_params.json"), [r"OneCycle.*missing \d+ required positional argument"])
scenario("sched_unknown_type_ds", "scheduler_config", "scheduler_unknown_type",
         DS + ds_train("unknown_scheduler.json"), [r"WarmupLinearLR"], evidence=[r"Error.*WarmupLinearLR"])

# ---- env_var_missing
scenario("env_no_master_addr_plain", "env_var_missing", "master_addr_unset",
         two_ranks("{py} plain_dist.py", env0="MASTER_PORT={port}", env1="MASTER_PORT={port}"),
         [r"MASTER_ADDR"], timeout=60)
scenario("env_no_world_size_plain", "env_var_missing", "world_size_unset",
         ["bash", "-c", "RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT={port} {py} plain_dist.py & p=$!; "
                        "RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT={port} {py} plain_dist.py; r=$?; wait $p; "
                        "r0=$?; exit $((r0 > r ? r0 : r))"],
         [r"WORLD_SIZE expected, but not set"], timeout=60)
scenario("env_no_master_addr_ds_mpi_fallback", "env_var_missing", "ds_mpi_discovery",
         two_ranks("{py} ds_train.py --config configs/ok.json --fail init_only",
                   env0="MASTER_PORT={port}", env1="MASTER_PORT={port}"),
         [r"mpi4py"], timeout=60)
scenario("env_none_set_ds_mpi_fallback", "env_var_missing", "ds_mpi_discovery",
         ["bash", "-c", "{py} ds_train.py --config configs/ok.json --fail init_only & p=$!; "
                        "{py} ds_train.py --config configs/ok.json --fail init_only; r=$?; wait $p; exit $r"],
         [r"mpi4py"], timeout=60)

# ---- port_conflict
scenario("port_held_ds", "port_conflict", "master_port_in_use",
         DS + ds_train("ok.json"), [r"(?i)address already in use|EADDRINUSE"], setup=["listen_port"])
scenario("port_held_torchrun", "port_conflict", "master_port_in_use",
         TR + ["plain_dist.py"], [r"(?i)address already in use|EADDRINUSE"], setup=["listen_port"])
scenario("port_held_plain_env", "port_conflict", "master_port_in_use",
         ["bash", "-c", "RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT={port} "
                        "{py} plain_dist.py"],
         [r"(?i)address already in use|EADDRINUSE"], setup=["listen_port"], timeout=90,
         note="rank 0 only: a rank 1 started beside it connects to the foreign listener and hangs "
              "past its timeout (seen at generation time), so it is not started")

# ---- connection_failure
scenario("conn_env_nobody_listens", "connection_failure", "store_unreachable",
         two_ranks("{py} plain_dist.py --timeout 15", env0="RANK=2 MASTER_ADDR=127.0.0.1 MASTER_PORT={port}",
                   env1="MASTER_ADDR=127.0.0.1 MASTER_PORT={port}", world=3),
         [r"client socket has timed out after \d+ms while trying to connect"], timeout=90,
         note="ranks 1 and 2 of a world of 3 whose rank 0 never started; nothing listens on the port")
scenario("conn_static_rdzv_nobody_listens", "connection_failure", "store_unreachable",
         ["{torchrun}", "--nnodes", "2", "--node_rank", "1", "--nproc_per_node", "2",
          "--master_addr", "127.0.0.1", "--master_port", "{port}", "--rdzv_conf", "timeout=20",
          "plain_dist.py"],
         [r"client socket has timed out after \d+ms while trying to connect"], timeout=90,
         note="node 1 of 2 in a static rendezvous; node 0 (the store host) never started")
scenario("conn_c10d_rdzv_nobody_listens", "connection_failure", "store_unreachable",
         ["{torchrun}", "--nnodes", "2", "--nproc_per_node", "2", "--rdzv_backend", "c10d",
          "--rdzv_endpoint", "127.0.0.1:{port}", "--rdzv_id", "job42",
          "--rdzv_conf", "is_host=false,read_timeout=20,join_timeout=20", "plain_dist.py"],
         [r"client socket has timed out after \d+ms while trying to connect",
          r"RendezvousConnectionError: The connection to the C10d store has failed"], timeout=90,
         note="a c10d rendezvous client whose endpoint has no store behind it")
scenario("conn_c10d_rdzv_join_timeout", "connection_failure", "rendezvous_join_timeout",
         ["{torchrun}", "--nnodes", "2", "--nproc_per_node", "2", "--rdzv_backend", "c10d",
          "--rdzv_endpoint", "127.0.0.1:{port}", "--rdzv_id", "job43",
          "--rdzv_conf", "join_timeout=15", "plain_dist.py"],
         [r"RendezvousTimeoutError$"], timeout=90,
         note="this node hosts the rendezvous but the second node never joins")

# ---- nccl_timeout (gloo collective timeout)
scenario("coll_timeout_gloo_ds", "nccl_timeout", "collective_timeout",
         DS + ds_train("ok.json", "--fail", "stall", "--timeout", "10"),
         [r"Timed out waiting \d+ms for recv operation"], timeout=120)
scenario("coll_timeout_gloo_torchrun", "nccl_timeout", "collective_timeout",
         TR + ["plain_dist.py", "--fail", "stall", "--timeout", "10"],
         [r"Timed out waiting \d+ms for recv operation"], timeout=120)

scenario("coll_timeout_monitored_barrier_torchrun", "nccl_timeout", "collective_timeout",
         TR + ["plain_dist.py", "--fail", "stall_barrier", "--timeout", "10"],
         [r"failed to pass monitoredBarrier"], timeout=120)

# ---- host_oom
scenario("oom_sigkill_torchrun", "host_oom", "rank_sigkilled",
         TR + ["plain_dist.py", "--fail", "sigkill", "--timeout", "15"], [r"exitcode\s*: -9|SIGKILL"], timeout=90,
         note="rank 1 SIGKILLs itself, standing in for the kernel OOM killer")
# Launched another way (--variant sweeps), each once misdiagnosed: with torch's DETAIL debugging the
# survivor reports the killed rank as missing its monitored barrier before the launcher reports
# the kill; with four ranks the ranks that reached the barrier echo its root's failure.
scenario("oom_sigkill_torchrun_detail", "host_oom", "rank_sigkilled",
         TR + ["plain_dist.py", "--fail", "sigkill", "--timeout", "15"], [r"exitcode\s*: -9|SIGKILL"], timeout=90,
         env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "TORCH_CPP_LOG_LEVEL": "INFO", "LOGLEVEL": "INFO"},
         note="rank 1 SIGKILLs itself under TORCH_DISTRIBUTED_DEBUG=DETAIL: rank 0 reports it failed the "
              "monitored barrier first")
scenario("coll_timeout_monitored_barrier_torchrun_4", "nccl_timeout", "collective_timeout",
         ["{torchrun}", "--nproc_per_node", "4"] + TR[3:] + ["plain_dist.py", "--fail", "stall_barrier", "--timeout", "10"],
         [r"failed to pass monitoredBarrier", r"successfully reached monitoredBarrier"], timeout=120)
scenario("oom_sigkill_ds", "host_oom", "rank_sigkilled",
         DS + ds_train("ok.json", "--fail", "sigkill", "--timeout", "15"), [r"return code = -9|SIGKILL"],
         timeout=90, note="rank 1 SIGKILLs itself, standing in for the kernel OOM killer")
scenario("oom_enomem_ulimit_torchrun", "host_oom", "alloc_enomem",
         ["bash", "-c", "ulimit -v 8000000; exec " + " ".join(TR) + " plain_dist.py --fail alloc --record"],
         [r"(?i)can't allocate memory|Cannot allocate memory|out of memory"], timeout=90)

# ---- culprits: which rank and node of a 4-rank, 2-node job started the failure
scenario("culprit_stall_gloo_2x2_ds", "nccl_timeout", "culprit_straggler",
         two_nodes("--fail stall --culprit 2 --timeout 4 --stall 40"),
         [r"Timed out waiting \d+ms for recv operation"], timeout=90, culprit={"ranks": [2], "hosts": ["node-b"]},
         note="rank 2 (node-b) sleeps before the third allreduce; the other three time out in it")
scenario("culprit_sigkill_gloo_2x2_ds", "host_oom", "culprit_sigkilled",
         two_nodes("--fail sigkill --culprit 2"),
         [r"exits with return code = -9"], timeout=90, culprit={"ranks": [2], "hosts": ["node-b"]},
         note="rank 2 (node-b) is killed by SIGKILL, as the OOM killer does; the launcher's line "
              "shows the last command it spawned (local rank 1), not the dead rank's")
scenario("culprit_exit_early_gloo_2x2_ds", "unknown", "culprit_exit_early",
         two_nodes("--fail exit --culprit 3"),
         [r"Connection closed by peer"], timeout=90, culprit={"ranks": [3], "hosts": ["node-b"]},
         note="rank 3 (node-b) leaves with exit code 3 and no exception; its peers lose it "
              "mid-allreduce. The lost connection is all the log says of the failure, and no "
              "category is for a silent early exit: unknown; the culprit names the rank that left")

# ---- unknown (an ordinary bug in user code)
scenario("user_exc_torchrun_record", "unknown", "user_exception",
         TR + ["plain_dist.py", "--fail", "user_exc", "--record", "--timeout", "15"], [r"KeyError: 'label_ids'"])
scenario("user_exc_torchrun_norecord", "unknown", "user_exception",
         TR + ["plain_dist.py", "--fail", "user_exc", "--timeout", "15"], [r"KeyError: 'label_ids'"])
scenario("user_exc_ds", "unknown", "user_exception",
         DS + ds_train("ok.json", "--fail", "user_exc", "--timeout", "15"), [r"ValueError: expected input of shape"])

# ---- version_mismatch
scenario("undefined_symbol_ext_torchrun", "version_mismatch", "undefined_symbol",
         TR + ["import_ext.py", "--ext-dir", "{work}/ext"], [r"undefined symbol: ds_fused_adam_step_v2"],
         setup=["cext"])
scenario("undefined_symbol_ext_ds", "version_mismatch", "undefined_symbol",
         DS + ["import_ext.py", "--ext-dir", "{work}/ext"], [r"undefined symbol: ds_fused_adam_step_v2"],
         setup=["cext"])
scenario("cuda_on_cpu_torch_torchrun", "version_mismatch", "torch_without_cuda",
         TR + ["plain_dist.py", "--fail", "cuda", "--record"], [r"Torch not compiled with CUDA enabled"])
scenario("cuda_on_cpu_torch_ds", "version_mismatch", "torch_without_cuda",
         DS + ["plain_dist.py", "--fail", "cuda"], [r"Torch not compiled with CUDA enabled"])

# ---- op_build_error
scenario("op_no_compiler_cpu_adam_torchrun", "op_build_error", "no_compiler",
         TR + ["op_load.py", "--op", "cpu_adam"], [r"Error building extension 'cpu_adam'", r"c\+\+: not found"],
         env={"PATH": "{bin}:{work}/nocxx"}, setup=["fresh_ext", "nocxx_path"], timeout=120)
scenario("op_no_compiler_shm_comm_ds", "op_build_error", "no_compiler",
         DS + ds_train("ok.json"), [r"Error building extension 'deepspeed_shm_comm'", r"c\+\+: not found"],
         env={"PATH": "{bin}:{work}/nocxx"}, setup=["fresh_ext", "nocxx_path"], timeout=120)
scenario("op_async_io_no_libaio_ds", "op_build_error", "async_io_libaio",
         DS + ["op_load.py", "--op", "async_io"],
         [r"Unable to JIT load the async_io op"], timeout=120,
         note="no libaio on the box; load() does not print the libaio hint, only the generic RuntimeError")
scenario("op_cuda_builder_no_devices_torchrun", "op_build_error", "cuda_op_on_cpu",
         TR + ["op_load.py", "--op", "FusedAdamBuilder"], [r"found no CUDA devices"],
         env={"DS_ACCELERATOR": "cuda"}, setup=["fresh_ext"], timeout=120,
         note="DS_ACCELERATOR=cuda on a box without GPUs; the JIT build cannot pick a CUDA arch")
scenario("op_cuda_builder_no_cuda_home_torchrun", "op_build_error", "cuda_op_on_cpu",
         TR + ["op_load.py", "--op", "FusedAdamBuilder"], [r"CUDA_HOME environment variable is not set"],
         env={"DS_ACCELERATOR": "cuda", "TORCH_CUDA_ARCH_LIST": "8.0"}, setup=["fresh_ext"], timeout=120,
         note="DS_ACCELERATOR=cuda with an explicit arch list; no CUDA toolkit on the box")
scenario("op_cuda_op_on_cpu_ds", "op_build_error", "cuda_op_on_cpu",
         DS + ds_train("lamb.json"), [r"This op had not been implemented on CPU backend"], timeout=120,
         note="optimizer type Lamb maps to FusedLamb, a CUDA-only op")

# ---- device_visibility
scenario("dev_cuda_accelerator_no_gpu_ds", "device_visibility", "no_gpu_resources",
         ["{ds}", "--master_port", "{port}", "ds_train.py", "--config", "configs/ok.json"],
         [r"Unable to proceed, no GPU resources available"], env={"DS_ACCELERATOR": "cuda"}, timeout=60)
scenario("dev_autodetect_cpu_one_rank_ds", "device_visibility", "accelerator_not_detected",
         ["{ds}", "--master_port", "{port}", "ds_train.py", "--config", "configs/ok.json"],
         [r"Setting accelerator to CPU\. If you have GPU or other accelerator, we were unable to detect it",
          r"dist_world_size=1", r"8 != 4 \* 1 \* 1"], env={"DS_ACCELERATOR": None}, timeout=60,
         evidence=[r"we were unable to detect it", r"dist_world_size=1"],
         xfail="dsdiag answers batch_size_mismatch (the 8 != 4 * 1 * 1 assertion the missed devices cause); "
               "the cause is the accelerator fallback warning and dist_world_size=1 before it",
         note="launcher without DS_ACCELERATOR or --num_gpus: no GPU detected, one rank started, and the batch "
              "arithmetic written for 2 ranks fails")
scenario("dev_include_missing_slot_ds", "device_visibility", "missing_launcher_slot",
         ["{ds}", "--include", "localhost:5", "--master_port", "{port}", "ds_train.py", "--config",
          "configs/ok.json"], [r"No slot '5' specified on host 'localhost'"], timeout=60)

# ---- disk_full (1 MiB tmpfs)
scenario("disk_full_torch_save_torchrun", "disk_full", "tmpfs_full",
         TR + ["plain_dist.py", "--fail", "save", "--out", "{work}/disk/out"],
         [r"basic_ios::clear: iostream error", r"inline_container\.cc:\d+\] \. unexpected pos"], setup=["tmpfs"],
         note="torch.save on a full filesystem never says 'No space left on device'")
scenario("disk_full_save_checkpoint_ds", "disk_full", "tmpfs_full",
         DS + ds_train("ok.json", "--fail", "save_ckpt", "--hidden", "512", "--ckpt-dir", "{work}/disk/ckpt"),
         [r"basic_ios::clear: iostream error", r"inline_container\.cc:\d+\] \. unexpected pos"], setup=["tmpfs"],
         note="engine.save_checkpoint (torch.save underneath) on a full filesystem")
scenario("disk_full_plain_write_torchrun", "disk_full", "tmpfs_full",
         TR + ["plain_dist.py", "--fail", "write", "--out", "{work}/disk/out", "--record"],
         [r"OSError: \[Errno 28\] No space left on device"], setup=["tmpfs"])

# ---- job_cancelled (SIGTERM from outside, as scancel, a time limit or a pod deletion send it)
# Rank 1 sleeps in a step while rank 0 waits in all_reduce; then SIGTERM comes from outside.
scenario("sigterm_launcher_torchrun", "job_cancelled", "launcher_sigterm",
         ["bash", "-c", "{torchrun} --nproc_per_node 2 --master_addr 127.0.0.1 --master_port {port} "
                        "plain_dist.py --fail stall --timeout 120 & p=$!; sleep 12; kill -TERM $p; wait $p"],
         [r"SignalException: Process \d+ got signal: 15", r"death signal, shutting down workers"],
         timeout=90, note="the agent turns the SIGTERM into SignalException and stops its workers")

# ---- none (healthy)
scenario("ok_ds", "none", "healthy", DS + ds_train("ok.json"), [r"rank [01] done", r"exits successfully"],
         expect="ok")
scenario("ok_torchrun", "none", "healthy", TR + ds_train("ok.json"), [r"rank [01] done"], expect="ok")
scenario("ok_plain_torchrun", "none", "healthy", TR + ["plain_dist.py"], [r"rank [01] done"], expect="ok")
scenario("ok_zero_opt_key_ignored_ds", "none", "healthy_silent_key",
         DS + ds_train("zero_opt_ignored.json"), [r"rank [01] done"], expect="ok",
         note="top-level `zero_opt` (not zero_optimization) is silently ignored; the run is healthy")
scenario("ok_warmuplr_defaults_ds", "none", "healthy_scheduler_defaults",
         DS + ds_train("warmuplr_defaults.json"), [r"rank [01] done"], expect="ok",
         note="WarmupLR with no params: warmup_num_steps defaults to 1000, so after 3 steps the lr is still "
              "~1.6e-4 of the 1e-3 it is meant to reach")
scenario("ok_autodetect_cpu_num_gpus_ds", "none", "healthy_autodetect_cpu",
         DS + ds_train("ok.json"), [r"rank [01] done"], expect="ok", env={"DS_ACCELERATOR": None},
         note="launcher without DS_ACCELERATOR but with --num_gpus 2: DeepSpeed warns that it fell back "
              "to the CPU accelerator, and the job is healthy")


# --------------------------------------------------------------------------- setups
def free_port():
    for _ in range(200):
        port = random.randint(20000, 60000)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        # the port must also be free for the workers' second port (torchrun/ds use port+1 rarely)
        return port
    raise RuntimeError("no free port found")


@contextlib.contextmanager
def setup_listen_port(ctx):
    """Another process's listener already holds the master port."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("0.0.0.0", int(ctx["port"])))
    s.listen(16)
    try:
        yield
    finally:
        s.close()


@contextlib.contextmanager
def setup_tmpfs(ctx):
    d = Path(ctx["work"]) / "disk"
    d.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)], check=True)
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(d)], check=False)


@contextlib.contextmanager
def setup_cext(ctx):
    py = ctx["py"]  # the include dir and suffix must be the job python's
    inc = subprocess.run([py, "-c", "import sysconfig;print(sysconfig.get_paths()['include'])"],
                         check=True, capture_output=True, text=True).stdout.strip()
    suffix = subprocess.run([py, "-c", "import sysconfig;print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                            check=True, capture_output=True, text=True).stdout.strip()
    ext = Path(ctx["work"]) / "ext"
    ext.mkdir(parents=True, exist_ok=True)
    # -shared leaves ds_fused_adam_step_v2 undefined; the loader finds out at import time.
    subprocess.run(["gcc", "-shared", "-fPIC", "-I", inc, str(SCEN / "cext" / "broken.c"),
                    "-o", str(ext / ("fused_adam_ext" + suffix))], check=True)
    yield


@contextlib.contextmanager
def setup_fresh_ext(ctx):
    """An empty torch extensions cache so that ops are (re)built by this run."""
    d = Path(ctx["work"]) / "torch_extensions"
    d.mkdir(parents=True, exist_ok=True)
    ctx["env"]["TORCH_EXTENSIONS_DIR"] = str(d)
    yield


NOCXX_TOOLS = ("sh", "bash", "env", "uname", "cat", "ls", "grep", "sed", "rm", "mkdir", "which",
               "dirname", "basename", "readlink", "ldconfig", "hostname", "nproc", "lscpu", "head",
               "tr", "cut", "sort", "id", "sleep", "ps", "kill", "numactl")


@contextlib.contextmanager
def setup_nocxx_path(ctx):
    """A PATH that holds the venv and a few basic tools but no C/C++ compiler."""
    d = Path(ctx["work"]) / "nocxx"
    d.mkdir(parents=True, exist_ok=True)
    for tool in NOCXX_TOOLS:
        src = shutil.which(tool)
        if src:
            (d / tool).symlink_to(src)
    yield


SETUPS = {"listen_port": setup_listen_port, "tmpfs": setup_tmpfs, "cext": setup_cext,
          "fresh_ext": setup_fresh_ext, "nocxx_path": setup_nocxx_path}

# More launch forms and failure kinds live in forms.py (this module is long enough already).
import forms  # noqa: E402

forms.register(scenario, DS, TR, ds_train, two_ranks)


# --------------------------------------------------------------------------- running
def versions(py):
    code = ("import json,sys,platform,torch,deepspeed;"
            "print('DSDIAG_VERSIONS'+json.dumps({'torch':torch.__version__,'deepspeed':deepspeed.__version__,"
            "'python':platform.python_version()}))")
    env = dict(os.environ, DS_ACCELERATOR="cpu")
    out = subprocess.run([py, "-c", code], capture_output=True, text=True, env=env, timeout=120).stdout
    for line in out.splitlines():
        if line.startswith("DSDIAG_VERSIONS"):
            return json.loads(line[len("DSDIAG_VERSIONS"):])
    raise RuntimeError("could not read versions from " + py)


def fill(s, ctx):
    for k in ("py", "ds", "torchrun", "bin", "port", "work"):
        s = s.replace("{" + k + "}", str(ctx[k]))
    return s


# A traceback's echo of source code (`raise RuntimeError("...")`) quotes the message but is not
# the message; such lines are not evidence.
SOURCE_ECHO = re.compile(r"^\s*(\[rank\d+\]:)?\s*(raise|assert)\b")


def kill_group(proc):
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def yaml_str(s):
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


# Variants rerun a scenario the way other users launch the same job, to check that a diagnosis
# holds beyond the one launch recorded in the corpus (`--variant`, output kept out of corpus/).
#   verbose  torch's distributed debug and C++ INFO logging on: far more chatter around the failure
#   tee      torchrun --tee 3: every line behind `[defaultN]:` (torchrun scenarios only)
#   four     four ranks instead of two (deepspeed and torchrun scenarios)
#   stderr   only the job's stderr kept (`2> err.log`: what a scheduler's error file holds)
VERBOSE_ENV = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "TORCH_CPP_LOG_LEVEL": "INFO",
               "LOGLEVEL": "INFO", "TORCH_SHOW_CPP_STACKTRACES": "1"}
VARIANTS = ("verbose", "tee", "four", "stderr")


def with_variant(sc, variant):
    """A copy of scenario `sc` launched as `variant`, or None when the variant does not apply."""
    cmd = list(sc["cmd"])
    if variant == "verbose":
        return dict(sc, name=f"{sc['name']}__verbose", env={**VERBOSE_ENV, **sc["env"]})
    if variant == "tee":
        if cmd[:1] != ["{torchrun}"]:
            return None
        return dict(sc, name=f"{sc['name']}__tee", cmd=cmd[:1] + ["--tee", "3"] + cmd[1:])
    if variant == "stderr":
        return dict(sc, name=f"{sc['name']}__stderr", capture="stderr")
    if variant == "four":
        for flag in ("--num_gpus", "--nproc_per_node"):
            if flag in cmd and cmd[cmd.index(flag) + 1] == "2" and "--nnodes" not in cmd:
                i = cmd.index(flag) + 1
                return dict(sc, name=f"{sc['name']}__four", cmd=cmd[:i] + ["4"] + cmd[i + 1:])
        return None
    raise ValueError(variant)


def run_one(sc, py, vers, out_root, keep_failed):
    bindir = str(Path(py).parent)
    work = Path(tempfile.mkdtemp(prefix=f"dsdiag-{sc['name']}-"))
    ctx = {"py": py, "bin": bindir, "ds": os.path.join(bindir, "deepspeed"),
           "torchrun": os.path.join(bindir, "torchrun"), "port": free_port(), "work": str(work), "env": {}}
    env = {k: v for k, v in os.environ.items() if k not in SCRUB}
    shown_env = {"DS_ACCELERATOR": "cpu", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    for k, v in sc["env"].items():
        shown_env[k] = None if v is None else v
    cmd = [fill(c, ctx) for c in sc["cmd"]]
    t0 = time.time()
    rc, timed_out = None, False
    log_path_tmp = work / "captured.log"
    with contextlib.ExitStack() as stack:
        for name in sc["setup"]:
            stack.enter_context(SETUPS[name](ctx))
        shown_env.update(ctx["env"])
        for k, v in shown_env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = fill(v, ctx)
        with open(log_path_tmp, "wb") as logf:
            only_err = sc.get("capture") == "stderr"
            proc = subprocess.Popen(cmd, cwd=SCEN, env=env, stdout=subprocess.DEVNULL if only_err else logf,
                                    stderr=logf if only_err else subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                rc = proc.wait(sc["timeout"])
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(proc)
                rc = proc.returncode
            # no stray ranks may outlive the scenario
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        kept = [p for g in sc["keep"] for p in sorted(work.glob(g)) if p.is_file()]
        kept = {str(p.relative_to(work)): p.read_bytes() for p in kept}
    elapsed = time.time() - t0
    data = log_path_tmp.read_bytes()
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    sigs = [re.compile(fill(s, ctx)) for s in sc["signature"]]
    evidence, missing = set(), []
    for rx in sigs:
        hits = [i + 1 for i, line in enumerate(lines) if rx.search(line) and not SOURCE_ECHO.search(line)]
        if not hits:
            missing.append(rx.pattern)
        if not sc["evidence"]:
            evidence.update(hits)
    for pat in sc["evidence"] or ():
        rx = re.compile(fill(pat, ctx))
        evidence.update(i + 1 for i, line in enumerate(lines) if rx.search(line) and not SOURCE_ECHO.search(line))
    rc_ok = (rc == 0) if sc["expect"] == "ok" else (rc not in (0, None))
    ok = not missing and rc_ok and not timed_out
    env_prefix = " ".join(f"{k}={shlex.quote(fill(v, ctx))}" for k, v in shown_env.items() if v is not None)
    unset = [k for k, v in shown_env.items() if v is None]
    produced_by = ("env " + " ".join(f"-u {k}" for k in unset) + " " if unset else "") + \
        f"{env_prefix} {shlex.join(cmd)}"
    produced_by = f"cd corpus/generate/scenarios && {produced_by}"
    status = "ok" if ok else "FAILED"
    why = []
    if missing:
        why.append("signature not found: " + ", ".join(missing))
    if not rc_ok:
        why.append(f"exit code {rc} (expected {'0' if sc['expect'] == 'ok' else 'non-zero'})")
    if timed_out:
        why.append(f"timed out after {sc['timeout']}s")
    if ok:
        dest = out_root / sc["category"]
    else:
        dest = Path(keep_failed) / sc["category"]
    dest.mkdir(parents=True, exist_ok=True)
    (dest / f"{sc['name']}.log").write_bytes(data)
    if kept:  # per-rank files the launch wrote beside the console log (`keep` globs under {work})
        shutil.rmtree(dest / f"{sc['name']}.ranks", ignore_errors=True)
        for rel, blob in kept.items():
            (dest / f"{sc['name']}.ranks" / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / f"{sc['name']}.ranks" / rel).write_bytes(blob)
    meta = [
        f"label: {sc['category']}",
        f"evidence_lines: [{', '.join(str(n) for n in sorted(evidence))}]",
        f"produced_by: {yaml_str(produced_by)}",
        "origin: real-run",
        "versions:",
        f"  torch: {yaml_str(vers['torch'])}",
        f"  deepspeed: {yaml_str(vers['deepspeed'])}",
        f"  python: {yaml_str(vers['python'])}",
        f"family: {sc['family']}",
        f"scenario: {sc['name']}",
        f"exit_code: {rc}",
        f"signature: [{', '.join(yaml_str(s) for s in sc['signature'])}]",
    ]
    if sc["setup"]:
        meta.append(f"setup: [{', '.join(sc['setup'])}]")
    if sc["form"]:
        meta.append(f"form: {yaml_str(sc['form'])}")
    if kept:
        meta.append(f"rank_files: [{', '.join(yaml_str(sc['name'] + '.ranks/' + r) for r in kept)}]")
    if sc["label_reason"]:
        meta.append(f"label_reason: {yaml_str(sc['label_reason'])}")
    if sc["note"]:
        meta.append(f"note: {yaml_str(sc['note'])}")
    if sc["xfail"]:
        meta.append(f"xfail: {yaml_str(sc['xfail'])}")
    if sc["culprit"]:
        c = sc["culprit"]
        meta.append(f"culprit: {{ranks: {c['ranks']}, hosts: [{', '.join(c['hosts'])}]}}")
        # scored for where the failure started; the model does not learn from them
        meta.append("train: false")
    (dest / f"{sc['name']}.yaml").write_text("\n".join(meta) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    print(f"{status:6} {sc['name']:42} [{sc['category']}] rc={rc} {elapsed:5.1f}s "
          f"evidence={len(evidence)} lines={len(lines)}" + (" -- " + "; ".join(why) if why else ""),
          flush=True)
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--list", action="store_true", help="list scenarios")
    g.add_argument("--only", action="append", metavar="NAME", help="run one scenario (repeatable; a prefix "
                   "ending in * selects several)")
    g.add_argument("--all", action="store_true", help="run every scenario")
    ap.add_argument("--python", default=os.environ.get("DSDIAG_GEN_PYTHON", "/work/venv-ds/bin/python"),
                    help="python of a venv with torch + deepspeed (default $DSDIAG_GEN_PYTHON)")
    ap.add_argument("--out", default=str(CORPUS), help="corpus root (default: corpus/)")
    ap.add_argument("--variant", choices=VARIANTS,
                    help="rerun the chosen scenarios launched another way (write them with --out elsewhere)")
    ap.add_argument("--failed-dir", default=os.path.join(tempfile.gettempdir(), "dsdiag-gen-failed"),
                    help="where logs of scenarios that did not show their signature go")
    a = ap.parse_args(argv)
    if a.list:
        for sc in SCENARIOS:
            print(f"{sc['name']:42} {sc['category']:20} {sc['family']}")
        return 0
    if a.all:
        chosen = SCENARIOS
    else:
        chosen = []
        for pat in a.only:
            sel = [s for s in SCENARIOS if (s["name"].startswith(pat[:-1]) if pat.endswith("*") else s["name"] == pat)]
            if not sel:
                ap.error(f"no scenario named {pat}")
            chosen += sel
    if a.variant:
        chosen = [v for v in (with_variant(sc, a.variant) for sc in chosen) if v is not None]
    py = a.python
    if not os.path.exists(py):
        ap.error(f"python {py} not found; set --python or DSDIAG_GEN_PYTHON")
    py = os.path.abspath(py)
    vers = versions(py)
    print(f"torch {vers['torch']}  deepspeed {vers['deepspeed']}  python {vers['python']}", flush=True)
    t0 = time.time()
    failed = [sc["name"] for sc in chosen if not run_one(sc, py, vers, Path(a.out), a.failed_dir)]
    print(f"{len(chosen) - len(failed)}/{len(chosen)} scenarios ok in {time.time() - t0:.0f}s"
          + (f"; failed: {', '.join(failed)} (logs in {a.failed_dir})" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
