"""More real-run scenarios: launch forms and failure kinds the first table (run.py) lacked.

Each one is still a real job on this box; what varies is how a user would have launched it
and what that launch does to the log: `python -m torch.distributed.run`, the deprecated
`torch.distributed.launch`, torchrun `--tee 3` and `--log-dir --redirects 3`, the deepspeed
launcher with `--num_nodes 1`, `--force_multi --no_ssh` and `--enable_each_rank_log`, plain
`python -c` ranks on env://, `2>&1 | tee`, and the debug variables users turn on (torch's
DETAIL and C++ INFO logging, NCCL_DEBUG, unbuffered output off).

Where a launch writes per-rank files, `keep` copies them next to the case
(`<scenario>.ranks/`); the case log is what the user would read first: the console, or for
`--enable_each_rank_log` (whose console holds only launcher lines) the failing rank's file.
"""

# Launch forms (placeholders are filled by run.py).
PYRUN = ["{py}", "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
         "--master_port", "{port}"]
PYLAUNCH = ["{py}", "-m", "torch.distributed.launch", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
            "--master_port", "{port}"]
DS_NODES = ["{ds}", "--num_nodes", "1", "--num_gpus", "2", "--master_addr", "127.0.0.1", "--master_port", "{port}"]
DS_MULTI = ["{ds}", "--force_multi", "--no_ssh", "--node_rank", "0", "--num_nodes", "1", "--num_gpus", "2",
            "--master_addr", "127.0.0.1", "--master_port", "{port}"]
DEBUG_ENV = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "TORCH_CPP_LOG_LEVEL": "INFO", "LOGLEVEL": "INFO"}
LOGDIR = ["--log-dir", "{work}/tlogs", "--redirects", "3"]
TLOGS = ["tlogs/**/*.log", "tlogs/**/*.json"]
RANKLOGS = ["ranklogs/*.log", "console.log"]


def tee_pipe(cmd):
    """`CMD 2>&1 | tee train.log`, as users keep a copy of what scrolls by (exit code of CMD)."""
    return ["bash", "-c", "set -o pipefail; " + " ".join(cmd) + " 2>&1 | /usr/bin/tee {work}/train.log"]


def each_rank_log(args, show_rank):
    """deepspeed --enable_each_rank_log: console to console.log, then the chosen rank's own file."""
    return ["bash", "-c", "{ds} --num_gpus 2 --master_port {port} --enable_each_rank_log {work}/ranklogs "
            + " ".join(args) + " > {work}/console.log 2>&1; r=$?; "
            f"cat {{work}}/ranklogs/*_rank{show_rank}.log; exit $r"]


def py_c(code, ranks=((0, ""), (1, "")), common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT={port}"):
    """Plain `python -c` ranks on env:// started by a shell loop; `ranks`: (rank, extra env) pairs."""
    starts = " ".join(f"RANK={r} {common} {extra} {{py}} -c '{code}' & p{r}=$!;" for r, extra in ranks)
    waits = " ".join(f"wait $p{r} || rc=$?;" for r, _ in ranks)
    return ["bash", "-c", f"rc=0; {starts} {waits} exit $rc"]


def outside_signal(launch, sig, after=10, target="launcher"):
    """Start `launch`, then send `sig` from outside to the launcher, its newest worker or its group.

    "group" is what a scheduler does (every process of the step gets it): the launch runs in its own
    process group (set -m), so whatever is left of that group is SIGKILLed afterwards.
    """
    if target == "group":
        return ["bash", "-c", "set -m; " + " ".join(launch) + f" & p=$!; sleep {after}; kill -{sig} -- -$p; "
                "wait $p; r=$?; sleep 2; kill -KILL -- -$p 2>/dev/null; exit $r"]
    who = "$p" if target == "launcher" else "$(pgrep -P $p -n)"
    return ["bash", "-c", " ".join(launch) + f" & p=$!; sleep {after}; kill -{sig} {who}; wait $p"]


PYC_INIT = ("import datetime, torch, torch.distributed as dist\n"
            "dist.init_process_group(\"gloo\", init_method=\"env://\", timeout=datetime.timedelta(seconds=15))\n"
            "rank = dist.get_rank()\n"
            "t = torch.ones(4) * (rank + 1)\n"
            "dist.all_reduce(t)\n"
            "print(\"rank\", rank, \"allreduce\", t.tolist(), flush=True)\n")
PYC_OK = PYC_INIT + "dist.barrier()\ndist.destroy_process_group()\nprint(\"rank\", rank, \"done\", flush=True)\n"
PYC_ZERODIV = (PYC_INIT + "tokens = [0, 0] if rank == 1 else [3, 5]\n"
               "mean_len = sum(tokens) / sum(1 for t in tokens if t)\n"
               "dist.all_reduce(torch.tensor([mean_len]))\nprint(\"rank\", rank, \"done\", flush=True)\n")


def register(scenario, DS, TR, ds_train, two_ranks):
    """Add this module's scenarios to run.py's table."""
    ds = DS
    tr_tee = TR[:1] + ["--tee", "3"] + TR[1:]
    tr_logdir = TR[:1] + LOGDIR + TR[1:]
    pyrun_tee = PYRUN[:3] + ["--tee", "3"] + PYRUN[3:]

    # ---- config_field_error
    scenario("cfg_offload_device_enum_ds_num_nodes", "config_field_error", "config_wrong_value",
             DS_NODES + ds_train("offload_device_gpu.json"),
             [r"ValidationError", r"Input should be 'none', 'cpu' or 'nvme'"], form="deepspeed --num_nodes 1",
             label_reason="pydantic rejects zero_optimization.offload_optimizer.device='gpu' (enum of none/cpu/nvme)")
    scenario("cfg_zero_bool_type_python_m_run", "config_field_error", "config_wrong_type",
             PYRUN + ds_train("zero_bool_type.json"), [r"ValidationError", r"Input should be a valid boolean"],
             form="python -m torch.distributed.run",
             label_reason="pydantic rejects contiguous_gradients='sometimes': not a boolean")
    scenario("cfg_offload_device_enum_each_rank_log", "config_field_error", "config_wrong_value",
             each_rank_log(ds_train("offload_device_gpu.json"), 1),
             [r"ValidationError", r"Input should be 'none', 'cpu' or 'nvme'"], keep=RANKLOGS,
             form="deepspeed --enable_each_rank_log (case log: rank 1's file)",
             label_reason="pydantic rejects offload_optimizer.device='gpu'; the rank's own log holds the error")

    # ---- config_json_syntax
    scenario("json_extra_brace_hjson_torchrun_tee", "config_json_syntax", "hjson_extra_data",
             tr_tee + ds_train("extra_brace.json"), [r"HjsonDecodeError: Extra data"], form="torchrun --tee 3",
             label_reason="one closing brace too many: hjson stops at `Extra data` when DeepSpeed reads the config")
    scenario("json_single_quotes_jsonload_each_rank_log", "config_json_syntax", "json_load_strict",
             each_rank_log(ds_train("single_quotes.json", "--fail", "json_load"), 0),
             [r"JSONDecodeError: Expecting property name enclosed in double quotes"], keep=RANKLOGS,
             form="deepspeed --enable_each_rank_log (case log: rank 0's file)",
             label_reason="the script's json.load rejects single-quoted keys in the DeepSpeed config",
             xfail="dsdiag answers unknown: config_json_syntax.json_decode_error's config_loader condition finds no "
                   "DeepSpeed context in a rank's own file (no launcher lines, no deepspeed frames); the frame "
                   "`config = json.load(f)` under main() of the script that was given --config is the DeepSpeed config")

    # ---- batch_size_mismatch
    scenario("batch_not_divisible_python_m_run_detail", "batch_size_mismatch", "batch_arithmetic",
             PYRUN + ds_train("batch_not_divisible.json"), [r"7 != 3 \* 1 \* 2"], env=DEBUG_ENV,
             form="python -m torch.distributed.run, TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO",
             label_reason="train_batch_size 7 does not split over 2 ranks: DeepSpeed's batch assertion 7 != 3 * 1 * 2")
    scenario("batch_mismatch_ds_force_multi_no_ssh", "batch_size_mismatch", "batch_arithmetic",
             DS_MULTI + ds_train("batch_mismatch.json"), [r"train_batch_size is not equal to"],
             form="deepspeed --force_multi --no_ssh --num_nodes 1",
             label_reason="DeepSpeed's batch assertion: train_batch_size != micro * grad_acc * world_size")

    # ---- scheduler_config
    scenario("sched_cosine_no_total_torchrun_logdir", "scheduler_config", "scheduler_missing_params",
             tr_logdir + ds_train("cosine_no_total.json", "--record"),
             [r"missing 1 required positional argument: 'total_num_steps'"], keep=TLOGS,
             form="torchrun --log-dir --redirects 3 (worker output only in per-rank files; @record summary)",
             label_reason="WarmupCosineLR needs total_num_steps and the config's scheduler params lack it")
    scenario("sched_warmup_param_typo_ds_tee_pipe", "scheduler_config", "scheduler_param_typo",
             tee_pipe(ds + ds_train("warmup_param_typo.json")),
             [r"unexpected keyword argument 'warmup_num_step'"], form="deepspeed 2>&1 | tee",
             label_reason="scheduler param misspelled (warmup_num_step): WarmupLR.__init__ rejects it")

    # ---- precision_conflict
    # fp16 on the CPU accelerator, launched two ways
    for name, launch, more, extra in (
            ("prec_fp16_on_cpu_ds_detail", ds, [],
             dict(env=DEBUG_ENV, form="deepspeed, TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO")),
            ("prec_fp16_on_cpu_torchrun_logdir_record", tr_logdir, ["--record"],
             dict(keep=TLOGS, form="torchrun --log-dir --redirects 3, @record"))):
        scenario(name, "precision_conflict", "fp16_unsupported_device", launch + ds_train("fp16_on_cpu.json", *more),
                 [r"Type fp16 is not supported on your device"],
                 label_reason="fp16 enabled on the CPU accelerator: DeepSpeed's sanity check refuses the dtype", **extra)
    scenario("prec_fp16_bf16_python_m_run_tee", "precision_conflict", "fp16_and_bf16",
             pyrun_tee + ds_train("fp16_bf16.json"), [r"bfloat16 and fp16 modes cannot be simultaneously enabled"],
             form="python -m torch.distributed.run --tee 3",
             label_reason="fp16 and bf16 both enabled in one DeepSpeed config")

    # ---- env_var_missing
    scenario("env_no_master_port_python_c", "env_var_missing", "master_port_unset",
             py_c(PYC_OK, common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1"), [r"MASTER_PORT expected, but not set"],
             timeout=60, form="two `python -c` ranks on env://",
             label_reason="env:// init with MASTER_PORT unset: torch names the missing variable")
    scenario("env_no_rank_python_c", "env_var_missing", "rank_unset",
             ["bash", "-c", "rc=0; for i in 0 1; do WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT={port} "
                            "{py} -c '" + PYC_OK + "' & done; wait -n || rc=$?; wait -n || rc=$?; exit $rc"],
             [r"RANK expected, but not set"], timeout=60, form="two `python -c` ranks on env://",
             label_reason="env:// init with RANK unset: torch names the missing variable")

    # ---- port_conflict
    scenario("port_held_python_m_run_cpp_info", "port_conflict", "master_port_in_use",
             PYRUN + ["plain_dist.py"], [r"(?i)address already in use|EADDRINUSE"], setup=["listen_port"],
             env={"TORCH_CPP_LOG_LEVEL": "INFO"}, form="python -m torch.distributed.run, TORCH_CPP_LOG_LEVEL=INFO",
             label_reason="another process listens on the master port; the store cannot bind it")
    scenario("port_held_ds_tee_pipe_nccl_debug", "port_conflict", "master_port_in_use",
             tee_pipe(ds + ds_train("ok.json")), [r"(?i)address already in use|EADDRINUSE"], setup=["listen_port"],
             env={"NCCL_DEBUG": "INFO", "NCCL_SOCKET_IFNAME": "lo"}, form="deepspeed 2>&1 | tee, NCCL_DEBUG=INFO",
             label_reason="another process listens on the master port; rank 0's TCPStore cannot bind it")
    scenario("port_held_ds_each_rank_log", "port_conflict", "master_port_in_use",
             each_rank_log(ds_train("ok.json"), 0), [r"(?i)address already in use|EADDRINUSE"],
             setup=["listen_port"], keep=RANKLOGS, form="deepspeed --enable_each_rank_log (case log: rank 0's file)",
             label_reason="another process listens on the master port; rank 0's TCPStore cannot bind it")

    # ---- connection_failure
    scenario("conn_nobody_listens_python_c_cpp_info", "connection_failure", "store_unreachable",
             py_c(PYC_OK, ranks=((1, ""),)), [r"client socket has timed out after \d+ms while trying to connect"],
             env={"TORCH_CPP_LOG_LEVEL": "INFO"}, timeout=90, form="`python -c` rank on env://, TORCH_CPP_LOG_LEVEL=INFO",
             label_reason="rank 1 alone: nothing listens on MASTER_ADDR:MASTER_PORT, its store client times out")
    scenario("conn_static_rdzv_node0_alone_python_m_run", "connection_failure", "rendezvous_join_timeout",
             ["{py}", "-m", "torch.distributed.run", "--nnodes", "2", "--node_rank", "0", "--nproc_per_node", "2",
              "--master_addr", "127.0.0.1", "--master_port", "{port}", "--rdzv_conf", "timeout=20", "plain_dist.py"],
             [r"(?i)timed out|timeout"], timeout=90, form="python -m torch.distributed.run --nnodes 2 --node_rank 0",
             label_reason="node 0 of a static 2-node rendezvous waits for node 1, which never starts")

    # ---- host_oom (SIGKILL standing in for the kernel OOM killer; ENOMEM under ulimit -v)
    scenario("oom_sigkill_ds_each_rank_log_console", "host_oom", "rank_sigkilled",
             ["{ds}", "--num_gpus", "2", "--master_port", "{port}", "--enable_each_rank_log", "{work}/ranklogs"]
             + ds_train("ok.json", "--fail", "sigkill", "--timeout", "15"), [r"return code = -9"],
             keep=["ranklogs/*.log"], timeout=90, form="deepspeed --enable_each_rank_log (case log: the console)",
             label_reason="rank 1 dies by SIGKILL (return code -9), what the kernel OOM killer sends")
    scenario("oom_outside_sigkill_torchrun_tee", "host_oom", "rank_sigkilled",
             outside_signal(tr_tee + ["plain_dist.py", "--fail", "stall", "--timeout", "60"], 9, target="worker"),
             [r"Signal 9 \(SIGKILL\)|exitcode\s*: -9"], timeout=90, form="torchrun --tee 3",
             label_reason="a worker is SIGKILLed from outside mid-run, as the OOM killer does; the agent reports -9")
    scenario("oom_ulimit_python_m_run_tee", "host_oom", "alloc_enomem",
             ["bash", "-c", "ulimit -v 8000000; exec " + " ".join(pyrun_tee) + " plain_dist.py --fail alloc"],
             [r"(?i)can't allocate memory|Cannot allocate memory|out of memory"], timeout=90,
             form="python -m torch.distributed.run --tee 3 under ulimit -v",
             label_reason="rank 1 asks for 64 GiB under an 8 GB address-space cap: the allocation fails with ENOMEM")

    # ---- job_cancelled (SIGTERM from outside)
    scenario("sigterm_launcher_ds", "job_cancelled", "launcher_sigterm",
             outside_signal(["{ds}", "--num_gpus", "2", "--master_port", "{port}"]
                            + ds_train("ok.json", "--fail", "stall", "--timeout", "120"), "TERM", after=20,
                            target="group"),
             [r"Main process received SIGTERM"], timeout=90, form="deepspeed",
             label_reason="every process of the job gets SIGTERM from outside, as scancel or a time limit sends it")
    scenario("sigterm_python_m_run_tee", "job_cancelled", "launcher_sigterm",
             outside_signal(pyrun_tee + ["plain_dist.py", "--fail", "stall", "--timeout", "120"], "TERM", after=12),
             [r"SignalException: Process \d+ got signal: 15"], timeout=90, form="python -m torch.distributed.run --tee 3",
             label_reason="the agent gets SIGTERM from outside and turns it into SignalException")
    scenario("sigterm_one_worker_torchrun", "job_cancelled", "worker_sigterm",
             outside_signal(TR + ["plain_dist.py", "--fail", "stall", "--timeout", "120"], "TERM", after=12,
                            target="worker"),
             [r"Signal 15 \(SIGTERM\)|exitcode\s*: -15"], timeout=90, form="torchrun",
             label_reason="one worker is ended by SIGTERM from outside (a scheduler's or operator's kill)",
             xfail="dsdiag answers unknown: job_cancelled reads the agent's own SIGTERM and DeepSpeed's -15, not "
                   "torchelastic's `Root Cause (first observed failure)` entry with exitcode -15 (SIGTERM); nothing "
                   "failed before it, so the SIGTERM came from outside (the agent SIGTERMs rank 0 only afterwards)")

    # ---- disk_full (1 MiB tmpfs)
    scenario("disk_full_save_ckpt_ds_tee_pipe", "disk_full", "tmpfs_full",
             tee_pipe(ds + ds_train("ok.json", "--fail", "save_ckpt", "--hidden", "512",
                                    "--ckpt-dir", "{work}/disk/ckpt")),
             [r"basic_ios::clear: iostream error|unexpected pos|No space left"], setup=["tmpfs"],
             form="deepspeed 2>&1 | tee", label_reason="save_checkpoint onto a full 1 MiB tmpfs")
    scenario("disk_full_write_python_m_run_tee", "disk_full", "tmpfs_full",
             pyrun_tee + ["plain_dist.py", "--fail", "write", "--out", "{work}/disk/out"],
             [r"OSError: \[Errno 28\] No space left on device"], setup=["tmpfs"],
             form="python -m torch.distributed.run --tee 3", label_reason="writing 4 MiB per rank onto a 1 MiB tmpfs")
    scenario("disk_full_one_rank_then_peer_lost_torchrun", "disk_full", "tmpfs_full_cascade",
             TR + ["plain_dist.py", "--fail", "write_one", "--out", "{work}/disk/out", "--record"],
             [r"OSError: \[Errno 28\] No space left on device"], setup=["tmpfs"], form="torchrun, @record",
             label_reason="rank 1's write hits ENOSPC first; rank 0's later barrier failure only follows from it")

    # ---- nccl_timeout (gloo collective timeout)
    scenario("coll_timeout_python_m_run_debug_noise", "nccl_timeout", "collective_timeout",
             PYRUN + ["plain_dist.py", "--fail", "stall", "--timeout", "10"],
             [r"Timed out waiting \d+ms|failed to pass monitoredBarrier"],
             env={**DEBUG_ENV, "NCCL_DEBUG": "INFO"}, timeout=120,
             form="python -m torch.distributed.run, DETAIL + C++ INFO + NCCL_DEBUG=INFO",
             label_reason="rank 1 stalls; DETAIL's monitored barrier in rank 0's allreduce runs past 10 s "
                          "(the agent then SIGTERMs rank 1, which is not the cause)")
    scenario("coll_timeout_ds_tee_pipe_buffered", "nccl_timeout", "collective_timeout",
             tee_pipe(ds + ds_train("ok.json", "--fail", "stall", "--timeout", "10")), [r"Timed out waiting \d+ms"],
             env={"PYTHONUNBUFFERED": None}, timeout=120, form="deepspeed 2>&1 | tee, PYTHONUNBUFFERED unset",
             label_reason="rank 1 stalls; rank 0's allreduce runs past the 10 s process-group timeout")

    # ---- op_build_error (no C++ compiler on PATH, empty extension cache)
    nocxx = {"PATH": "{bin}:{work}/nocxx"}
    scenario("op_no_compiler_cpu_adam_ds_tee_pipe", "op_build_error", "no_compiler",
             tee_pipe(ds + ["op_load.py", "--op", "cpu_adam"]), [r"Error building extension 'cpu_adam'"],
             env=nocxx, setup=["fresh_ext", "nocxx_path"], form="deepspeed 2>&1 | tee",
             label_reason="DeepSpeedCPUAdam's JIT build finds no c++ compiler")
    scenario("op_no_compiler_shm_python_m_run_tee", "op_build_error", "no_compiler",
             pyrun_tee + ds_train("ok.json"), [r"Error building extension 'deepspeed_shm_comm'"],
             env=nocxx, setup=["fresh_ext", "nocxx_path"], form="python -m torch.distributed.run --tee 3",
             label_reason="the shm comm op's JIT build at init_distributed finds no c++ compiler")

    # ---- unknown (bugs in user code, a launcher missing; several failures in one log)
    scenario("user_shape_mismatch_torchrun_tee_detail", "unknown", "user_exception",
             tr_tee + ["plain_dist.py", "--fail", "shape", "--timeout", "15"],
             [r"mat1 and mat2 shapes cannot be multiplied"], env=DEBUG_ENV, form="torchrun --tee 3, DETAIL + INFO",
             label_reason="rank 1 feeds a 7-wide batch to Linear(8, 8): a bug in the script; peers fail after it")
    scenario("user_zero_division_python_c", "unknown", "user_exception",
             py_c(PYC_ZERODIV), [r"ZeroDivisionError"], timeout=60, form="two `python -c` ranks on env://",
             label_reason="rank 1 divides by zero in user code; rank 0's next allreduce loses its peer after it")
    scenario("launcher_pdsh_missing_ds_force_multi", "unknown", "launcher_not_installed",
             ["{ds}", "--force_multi", "--num_nodes", "1", "--num_gpus", "2", "--master_port", "{port}"]
             + ds_train("ok.json"), [r"launcher 'pdsh' not installed"], timeout=60, form="deepspeed --force_multi",
             label_reason="--force_multi picks the pdsh launcher, which is not installed; no category covers it")

    # ---- none (healthy, some noisy)
    scenario("ok_torchrun_tee_detail_warnings", "none", "healthy_noisy",
             tr_tee + ["plain_dist.py", "--warn"], [r"rank [01] done"], expect="ok", env=DEBUG_ENV,
             form="torchrun --tee 3, DETAIL + C++ INFO, Python warnings",
             label_reason="exit 0, every rank prints done; only warnings and debug chatter")
    scenario("ok_torch_distributed_launch_deprecated", "none", "healthy_noisy",
             PYLAUNCH + ["plain_dist.py", "--warn"], [r"rank [01] done"], expect="ok",
             form="python -m torch.distributed.launch (deprecated)",
             label_reason="exit 0, every rank prints done; the launcher's deprecation notice is no failure")
    scenario("ok_ds_each_rank_log_noisy", "none", "healthy_noisy",
             each_rank_log(ds_train("noisy_ok.json", "--steps", "6"), 0), [r"rank 0 done"], expect="ok",
             keep=RANKLOGS, form="deepspeed --enable_each_rank_log (case log: rank 0's file)",
             label_reason="exit 0; ZeRO-1 with wall-clock breakdown prints timers, nothing fails")
    scenario("ok_python_c_env_nccl_debug", "none", "healthy",
             py_c(PYC_OK), [r"rank [01] done"], expect="ok", env={"NCCL_DEBUG": "INFO", **DEBUG_ENV}, timeout=60,
             form="two `python -c` ranks on env://, DETAIL + C++ INFO", label_reason="exit 0, both ranks print done")
    scenario("ok_ds_silent_act_ckpt_typo_tee_pipe", "none", "healthy_silent_key",
             tee_pipe(DS_NODES + ds_train("act_ckpt_typo.json", "--steps", "40")), [r"rank [01] done"], expect="ok",
             form="deepspeed --num_nodes 1 2>&1 | tee, 40 steps",
             label_reason="exit 0: the misspelled activation_checkpointing key is silently ignored, nothing fails")

    # ---- device_visibility: GPU lists the deepspeed launcher cannot read as slot numbers (probe 51,
    # when the GPU machine gave no answer). With neither --include nor --num_gpus the launcher copies
    # CUDA_VISIBLE_DEVICES into --include; since DeepSpeed 0.16 parse_node_config int()s every slot.
    plain_ds = ["{ds}", "--master_port", "{port}"] + ds_train("ok.json")
    uuid_reason = "the launcher reads the GPU list as integers and dies on a UUID entry before any rank starts"
    scenario("dev_visible_devices_gpu_uuid_ds", "device_visibility", "visible_devices_uuid", plain_ds,
             [r"invalid literal for int\(\) with base 10: 'GPU-"], timeout=60,
             env={"CUDA_VISIBLE_DEVICES": "GPU-5a1c0de0-0000-4000-8000-00000000beef"},
             form="deepspeed, CUDA_VISIBLE_DEVICES=GPU-<uuid>", label_reason=uuid_reason)
    scenario("dev_visible_devices_mig_uuid_ds_tee_pipe", "device_visibility", "visible_devices_uuid",
             tee_pipe(plain_ds), [r"invalid literal for int\(\) with base 10: 'MIG-"], timeout=60,
             env={"CUDA_VISIBLE_DEVICES": "MIG-4f1c7a52-0b8e-5d6b-9a7e-3c2d1e0f9a8b"},
             form="deepspeed 2>&1 | tee, CUDA_VISIBLE_DEVICES=MIG-<uuid>", label_reason=uuid_reason)
    scenario("dev_visible_devices_trailing_comma_ds", "device_visibility", "visible_devices_typo", plain_ds,
             [r"invalid literal for int\(\) with base 10: ''"], timeout=60, env={"CUDA_VISIBLE_DEVICES": "0,1,"},
             form="deepspeed, CUDA_VISIBLE_DEVICES=0,1,",
             label_reason="a trailing comma in CUDA_VISIBLE_DEVICES leaves an empty slot the launcher cannot parse")
    scenario("dev_include_trailing_comma_ds", "device_visibility", "include_typo",
             ["{ds}", "--include", "localhost:0,1,", "--master_port", "{port}"] + ds_train("ok.json"),
             [r"invalid literal for int\(\) with base 10: ''"], timeout=60, form="deepspeed --include localhost:0,1,",
             label_reason="the --include filter has an empty slot; the launcher stops before any rank starts")
    scenario("dev_visible_devices_minus_one_ds", "device_visibility", "visible_devices_hidden", plain_ds,
             [r"No slot '-1' specified on host 'localhost'"], timeout=60, env={"CUDA_VISIBLE_DEVICES": "-1"},
             form="deepspeed, CUDA_VISIBLE_DEVICES=-1",
             label_reason="-1 (the usual way to hide every GPU) becomes --include localhost:-1, a slot that does not exist")
    scenario("dev_num_gpus_with_include_ds", "device_visibility", "launcher_flags_conflict",
             ["{ds}", "--num_gpus", "2", "--include", "localhost:0", "--master_port", "{port}"] + ds_train("ok.json"),
             [r"Cannot specify num_nodes/gpus with include/exclude"], timeout=60,
             form="deepspeed --num_gpus 2 --include localhost:0",
             label_reason="two ways of choosing the GPUs at once; the launcher refuses before any rank starts")
    scenario("dev_exclude_every_slot_ds", "device_visibility", "launcher_no_slots_left",
             ["{ds}", "--exclude", "localhost:0", "--master_port", "{port}"] + ds_train("ok.json"),
             [r"IndexError: list index out of range"], timeout=60, form="deepspeed --exclude localhost:0 (one slot)",
             evidence=[r"IndexError: list index out of range", r"WORLD INFO DICT: \{\}"],
             label_reason="the filter removed the only slot: world_info is empty and the per-node launcher "
                          "finds no entry for its node")
