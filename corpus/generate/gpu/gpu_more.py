"""Probe 51's GPU scenarios, added to run_gpu.py's table by register() (as forms.py does for run.py).

Kinds the first 21 lacked: the deepspeed launcher told of a second GPU the card does not have
(`--num_gpus 2`), LOCAL_RANK naming a second GPU, a GPU UUID in CUDA_VISIBLE_DEVICES; out of
memory in ZeRO-3's zero.Init, in backward, under the Trainer, in generate(), with
expandable segments, and in cuBLAS / cuDNN handle creation on a full card; Trainer and
DeepSpeed precision and scheduler contradictions; fp16 and bf16 both on; WarmupDecayLR
without total_num_steps; a NaN guard under torch.amp fp16; an extension built for sm_80 only;
an illegal address from a raw CuPy kernel; a checkpoint to a 1 MiB tmpfs; a healthy ZeRO-3
run with NCCL INFO and DETAIL debugging.

Lanes: "fill" jobs take the whole card, so they run one at a time before every other job,
beside the "nogpu" lane (a job that fails in the launcher, before any GPU is touched); the
"build" lane (an nvcc build, then a kernel launch) runs beside the "light" lanes afterwards.

RERUNS repeat earlier scenarios launched another way (torchrun --tee 3; stderr only, as a
scheduler's error file keeps it). They are diagnosed, never ingested.
"""

RERUNS = set()


def register(table, TR, DS):
    """Append this module's scenarios to run_gpu.py's SCENARIOS (same 8-field rows)."""
    ds_any = "deepspeed --master_addr 127.0.0.1 --master_port {port}"
    tr_tee = TR.replace("torch.distributed.run", "torch.distributed.run --tee 3")

    def add(name, category, family, lane, cmd, env, sig, expect="fail"):
        table.append((name, category, family, lane, cmd, env, sig, expect))

    def ds_config(name, category, family, config, sig):
        """A DeepSpeed config that initialize() refuses (gpu_job.py's `cfg` failure)."""
        add(name, category, family, "light", f"{DS} gpu_job.py --fail cfg --config configs/{config}", {}, sig)

    def trainer(name, category, family, config, sig, variant="", lane="light", launcher=DS):
        """The HF Trainer with a DeepSpeed config (more_job.py hf_trainer)."""
        flag = f" --variant {variant}" if variant else ""
        add(name, category, family, lane,
            f"{launcher} more_job.py hf_trainer{flag} --config configs/{config} --out {{work}}/out", {}, sig)

    # ---- device_visibility
    add("ds_num_gpus_2_one_card", "device_visibility", "num_gpus_beyond_card", "light",
        f"{ds_any} --num_gpus 2 gpu_job.py --fail none --config configs/zero2_bf16.json", {},
        [r"(?i)invalid device ordinal|invalid device id|device index"])
    add("local_rank_1_one_card", "device_visibility", "local_rank_beyond_card", "light",
        "python3 more_job.py local_rank",
        {"LOCAL_RANK": "1", "RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}"},
        [r"(?i)invalid device ordinal|invalid device id|device index"])
    add("ds_visible_devices_uuid", "device_visibility", "visible_devices_gpu_uuid", "nogpu",
        f"{ds_any} gpu_job.py --fail none --config configs/zero2_bf16.json",
        {"CUDA_VISIBLE_DEVICES": "GPU-5a1c0de0-0000-4000-8000-00000000beef"},
        [r"(?i)invalid literal for int|no CUDA GPUs|no GPU resources|no slot"])

    # ---- gpu_oom
    add("oom_zero3_init", "gpu_oom", "zero3_init_oom", "fill",
        f"{ds_any} --num_gpus 1 more_job.py zero3_init_oom --config configs/zero3_bf16.json", {},
        [r"CUDA out of memory"])
    add("oom_backward_torchrun", "gpu_oom", "backward_oom", "fill",
        f"{TR} 1 more_job.py oom_backward", {}, [r"CUDA out of memory"])
    trainer("oom_hf_trainer_ds", "gpu_oom", "hf_trainer_ds_oom", "hf_auto_zero2.json", [r"CUDA out of memory"],
            variant="oom", lane="fill", launcher=f"{ds_any} --num_gpus 1")
    add("oom_generate", "gpu_oom", "generate_oom", "fill", "python3 more_job.py hf_generate", {},
        [r"CUDA out of memory"])
    add("oom_expandable_segments", "gpu_oom", "alloc_oom_expandable_segments", "light",
        f"{TR} 1 gpu_job.py --fail oom_alloc", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
        [r"CUDA out of memory"])
    add("cublas_handle_full_card", "gpu_oom", "cublas_create_on_full_card", "fill",
        "python3 more_job.py fill_cublas", {}, [r"(?i)CUBLAS_STATUS_ALLOC_FAILED|out of memory"])
    add("cudnn_handle_full_card", "gpu_oom", "cudnn_create_on_full_card", "fill",
        "python3 more_job.py fill_cudnn", {}, [r"(?i)CUDNN_STATUS_\w+|out of memory"])

    # ---- config: precision, scheduler, Trainer contradictions
    ds_config("ds_fp16_and_bf16", "precision_conflict", "fp16_and_bf16_enabled", "fp16_and_bf16.json",
              [r"cannot be simultaneously enabled"])
    trainer("hf_fp16_vs_bf16", "precision_conflict", "hf_trainer_ds_precision", "hf_fp16_vs_bf16.json",
            [r"ds fp16\.enabled=True vs hf"])
    ds_config("ds_warmup_decay_no_total", "scheduler_config", "warmup_decay_without_total",
              "warmup_decay_no_total.json", [r"total_num_steps"])
    trainer("hf_scheduler_lr_mismatch", "scheduler_config", "hf_trainer_ds_scheduler", "hf_scheduler_lr.json",
            [r"ds scheduler\.params\.\w+=\S+ vs hf"])
    trainer("hf_lr_scheduler_type", "scheduler_config", "hf_bad_lr_scheduler_type", "hf_auto_zero2.json",
            [r"cosine_warmup.*(not a valid|SchedulerType)|(not a valid|invalid).*cosine_warmup"],
            variant="lr_scheduler_type")

    # ---- numerics, binaries, kernels, disk
    add("fp16_nan_guard_amp", "fp16_overflow", "amp_fp16_nan_guard", "light",
        f"{TR} 1 more_job.py fp16_nan_amp", {}, [r"Loss is (nan|inf)"])
    add("ext_built_for_sm80", "version_mismatch", "extension_arch_not_built", "build",
        "python3 more_job.py ext_wrong_arch", {"TORCH_CUDA_ARCH_LIST": "8.0", "TORCH_EXTENSIONS_DIR": "{work}/ext"},
        [r"no kernel image is available"])
    add("cupy_illegal_address", "unknown", "raw_kernel_out_of_bounds", "light",
        f"{TR} 1 more_job.py illegal_address", {}, [r"illegal memory access"])
    add("ds_ckpt_tmpfs_full", "disk_full", "checkpoint_to_full_tmpfs", "light",
        "mkdir -p {work}/ckpt && mount -t tmpfs -o size=1m tmpfs {work}/ckpt && "
        f"{DS} more_job.py ds_save --config configs/zero2_bf16.json --out {{work}}/ckpt", {},
        [r"(?i)No space left|file write failed|unexpected pos"])

    # ---- healthy
    add("healthy_zero3_detail", "none", "healthy_zero3_nccl_info_detail", "light",
        f"{DS} gpu_job.py --fail none --steps 5 --config configs/zero3_bf16.json",
        {"NCCL_DEBUG": "INFO", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"}, [r"NCCL INFO", r"^done"], "ok")

    # ---- reruns of earlier scenarios in other launch forms (diagnosed, not ingested)
    add("rerun_oom_alloc_tee", "gpu_oom", "plain_alloc_oom", "light",
        f"{tr_tee} 1 gpu_job.py --fail oom_alloc", {}, [r"CUDA out of memory"])
    add("rerun_invalid_ordinal_tee", "device_visibility", "more_ranks_than_gpus", "light",
        f"{tr_tee} 2 gpu_job.py --fail none", {}, [r"invalid device ordinal"])
    add("rerun_device_assert_stderr", "unknown", "embedding_index_assert", "light",
        f"{TR} 1 gpu_job.py --fail device_assert >/dev/null", {}, [r"device-side assert"])
    add("rerun_fp16_collapse_stderr", "fp16_overflow", "loss_scale_collapse", "light",
        f"{DS} gpu_job.py --fail fp16_collapse --steps 40 --config configs/zero1_fp16_collapse.json >/dev/null", {},
        [r"cannot decrease scale|loss scale already at minimum"])
    add("rerun_hf_batch_mismatch_stderr", "batch_size_mismatch", "hf_trainer_ds_batch", "light",
        f"{DS} hf_job.py trainer --config configs/hf_mismatch.json --out {{work}}/out >/dev/null", {},
        [r"mismatch TrainingArguments"])
    RERUNS.update(row[0] for row in table if row[0].startswith("rerun_"))
