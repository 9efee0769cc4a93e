"""dsdiag's own picture of a DeepSpeed config: used when deepspeed is not importable.

The facts follow DeepSpeed 0.19.8 (deepspeed/runtime/config.py, constants.py, the pydantic
models in runtime/zero/config.py, runtime/zero/offload_config.py, runtime/precision_config.py,
monitor/config.py, comm/config.py, compile/config.py, the dict readers of
activation_checkpointing, flops_profiler, aio, checkpoint and data_types, the optimizer
constructors in ops/ and the schedulers in runtime/lr_schedules.py). When deepspeed is
importable, classifier.preflight.deepspeed.introspect reads the same facts from the installed release instead,
and tests/preflight/test_check_config.py holds this file to that release.

Field types use a small notation: "bool", "int", "number", "str", "list", "object" (any
mapping, not checked inside), "any"; a trailing "?" accepts null; "enum:a|b|c" lists the values;
a dict is a nested section. Types are checked the way pydantic's lax mode does ("5" is an int,
1 and "true" are bools), since that is what DeepSpeed's models accept.
"""

import re
from typing import Any

SCHEMA_DEEPSPEED_VERSION = "0.19.8"

DTYPE = "enum:fp16|bf16|fp32?"

OFFLOAD_PARAM = {
    "device": "enum:none|cpu|nvme", "nvme_path": "str?", "buffer_count": "int",
    "buffer_size": "int", "max_in_cpu": "int", "pin_memory": "bool",
}
OFFLOAD_OPTIMIZER = {
    "device": "enum:none|cpu|nvme", "nvme_path": "str?", "buffer_count": "int",
    "pin_memory": "bool", "pipeline_read": "bool", "pipeline_write": "bool", "fast_init": "bool",
    "ratio": "number", "super_offload": "bool", "cpuadam_cores_perc": "number",
}
ZENFLOW = {
    "topk_ratio": "number", "select_strategy": "str", "select_interval": "any",
    "update_interval": "any", "overlap_step": "bool", "offload": "bool", "auto_ratio": "number",
    "full_warm_up_rounds": "int", "pt_reserved_cores_perc": "number", "steps_per_epoch": "int?",
}
ZERO = {
    "stage": "enum:0|1|2|3", "contiguous_gradients": "bool", "reduce_scatter": "bool",
    "reduce_bucket_size": "int", "use_multi_rank_bucket_allreduce": "bool",
    "allgather_partitions": "bool", "allgather_bucket_size": "int", "overlap_comm": "bool?",
    "compute_grad_norm": "bool", "load_from_fp32_weights": "bool", "elastic_checkpoint": "bool",
    "offload_param": OFFLOAD_PARAM, "offload_optimizer": OFFLOAD_OPTIMIZER, "zenflow": ZENFLOW,
    "sub_group_size": "int", "cpu_offload_param": "bool?", "cpu_offload_use_pin_memory": "bool?",
    "cpu_offload": "bool?",
    # ZeRO-3 knobs: DeepSpeed's model takes both the stage3_ alias and the bare field name.
    "stage3_prefetch_bucket_size": "int", "prefetch_bucket_size": "int",
    "stage3_param_persistence_threshold": "int", "param_persistence_threshold": "int",
    "stage3_model_persistence_threshold": "int", "model_persistence_threshold": "int",
    "stage3_max_live_parameters": "int", "max_live_parameters": "int",
    "stage3_max_reuse_distance": "int", "max_reuse_distance": "int",
    "stage3_gather_16bit_weights_on_model_save": "bool",
    "gather_16bit_weights_on_model_save": "bool",
    "stage3_module_granularity_threshold": "int", "module_granularity_threshold": "int",
    "stage3_use_all_reduce_for_fetch_params": "bool", "use_all_reduce_for_fetch_params": "bool",
    "stage3_allgather_sequential": "bool", "allgather_sequential": "bool",
    "stage3_gather_fp16_weights_on_model_save": "bool",
    "ignore_unused_parameters": "bool", "legacy_stage1": "bool", "round_robin_gradients": "bool",
    "parameter_alignment": "bool", "zero_hpz_partition_size": "int",
    "zero_quantized_weights": "bool", "zero_quantized_nontrainable_weights": "bool",
    "zero_quantized_gradients": "bool", "memory_efficient_linear": "bool",
    "pipeline_loading_checkpoint": "bool", "override_module_apply": "bool",
    "log_trace_cache_warnings": "bool", "enable_sanity_checks": "bool",
    "save_muon_momentum_buffer_in_memory": "bool",
    "leaf_module": {"classes": "list", "names": "list", "name_suffixes": "list"},
}
# Deprecated ZeRO fields DeepSpeed still maps onto their replacement (with a warning).
DEPRECATED = {
    "zero_optimization.cpu_offload": "offload_optimizer",
    "zero_optimization.cpu_offload_param": "offload_param",
    "zero_optimization.cpu_offload_use_pin_memory": "offload_param or offload_optimizer",
    "zero_optimization.stage3_gather_fp16_weights_on_model_save":
        "gather_16bit_weights_on_model_save (stage3_gather_16bit_weights_on_model_save)",
}

FP16 = {
    "enabled": "bool", "auto_cast": "bool", "loss_scale": "number", "initial_scale_power": "int",
    "loss_scale_window": "int", "hysteresis": "int", "consecutive_hysteresis": "bool",
    "min_loss_scale": "int", "fp16_master_weights_and_grads": "bool",
}
BF16 = {
    "enabled": "bool", "immediate_grad_update": "bool", "check_grad_overflow": "bool",
    "bf16_master_weights_and_grads": "bool", "bf16_optimizer_states": "bool",
}
MONITOR_FILE = {"enabled": "bool", "output_path": "str", "job_name": "str"}

SECTIONS = {
    "zero_optimization": ZERO,
    "fp16": FP16,
    "bf16": BF16,
    "bfloat16": BF16,  # the old name, read when "bf16" is absent
    "torch_autocast": {"enabled": "bool", "dtype": "str?", "lower_precision_safe_modules": "list"},
    "optimizer": {"type": "str", "params": "object", "legacy_fusion": "bool"},
    "scheduler": {"type": "str", "params": "object"},
    "activation_checkpointing": {
        "partition_activations": "bool", "number_checkpoints": "int?",
        "contiguous_memory_optimization": "bool", "synchronize_checkpoint_boundary": "bool",
        "profile": "bool", "cpu_checkpointing": "bool",
    },
    "flops_profiler": {
        "enabled": "bool", "recompute_fwd_factor": "number", "profile_step": "int",
        "module_depth": "int", "top_modules": "int", "detailed": "bool", "output_file": "str?",
    },
    "tensorboard": MONITOR_FILE,
    "csv_monitor": MONITOR_FILE,
    "wandb": {"enabled": "bool", "group": "str?", "team": "str?", "project": "str"},
    "comet": {
        "enabled": "bool", "samples_log_interval": "int", "project": "str?", "workspace": "str?",
        "api_key": "str?", "experiment_name": "str?", "experiment_key": "str?",
        "online": "bool?", "mode": "str?",
    },
    "comms_logger": {"enabled": "bool", "prof_all": "bool", "prof_ops": "list",
                     "verbose": "bool", "debug": "bool"},
    "checkpoint": {"tag_validation": "enum:WARN|IGNORE|FAIL|warn|ignore|fail",
                   "load_universal": "bool", "use_node_local_storage": "bool",
                   "parallel_write": "object", "checkpoint_serialization": "bool",
                   "writer": "object?"},
    "data_types": {"grad_accum_dtype": DTYPE, "param_dtype": DTYPE, "buffer_dtype": DTYPE,
                   "keep_in_fp32_modules": "any"},
    "aio": {"block_size": "int", "queue_depth": "int", "intra_op_parallelism": "int",
            "single_submit": "bool", "overlap_events": "bool", "use_gds": "bool"},
    "hybrid_engine": {"enabled": "bool", "max_out_tokens": "int", "inference_tp_size": "int",
                      "release_inference_cache": "bool", "pin_parameters": "bool",
                      "tp_gather_partition_size": "int", "enable_cuda_graph": "bool"},
    "timers": {"throughput": "object"},
    "compile": {**{k: "bool" for k in (
        "deepcompile", "autoep_non_moe", "free_activation", "offload_activation",
        "offload_activation_pin_memory", "offload_opt_states", "double_buffer", "symmetric_memory",
        "debug_log", "offload_parameters", "sync_before_reduce", "sync_after_reduce",
        "sync_before_allgather", "sync_after_allgather", "keep_int_input_tensors",
        "keep_all_input_tensors")}, "free_activation_threshold": "int", "passes": "list?"},
    "autotuning": {k: "any" for k in (
        "enabled", "fast", "results_dir", "exps_dir", "overwrite", "start_profile_step",
        "end_profile_step", "metric_path", "metric", "tuner_type", "tuner_early_stopping",
        "tuner_num_trials", "arg_mappings", "model_info", "model_info_path", "mp_size",
        "max_train_batch_size", "min_train_batch_size", "max_train_micro_batch_size_per_gpu",
        "min_train_micro_batch_size_per_gpu", "num_tuning_micro_batch_sizes")},
    "data_efficiency": {"enabled": "bool", "seed": "int", "data_sampling": "object",
                        "data_routing": "object"},
}

# Sections DeepSpeed accepts but whose inside dsdiag does not check without deepspeed.
OPEN_SECTIONS = ("pipeline", "tensor_parallel", "weight_quantization",
                 "datastates_ckpt", "expert_parallel")

# Top-level scalars, read with get_scalar_param in deepspeed/runtime/config.py.
TOP_LEVEL = {
    "train_batch_size": "int", "train_micro_batch_size_per_gpu": "int",
    "gradient_accumulation_steps": "int", "steps_per_print": "int?",
    "gradient_clipping": "number", "prescale_gradients": "bool",
    "gradient_predivide_factor": "number", "gradient_allreduce_op": "enum:mean|sum",
    "communication_data_type": DTYPE, "seq_parallel_communication_data_type": DTYPE,
    "disable_allgather": "bool", "dump_state": "bool", "disable_python_gc": "bool",
    "wall_clock_breakdown": "bool", "memory_breakdown": "bool", "vocabulary_size": "int?",
    "dataloader_drop_last": "bool", "zero_allow_untested_optimizer": "bool",
    "zero_force_ds_cpu_optimizer": "bool", "managed_gradient_accumulation": "bool",
    "use_data_before_expert_parallelism": "bool", "log_level": "str?",
    "sequence_parallel_size": "int",
}

# Top-level sections DeepSpeed 0.19.8 refuses outright (DeepSpeedConfigError): the features
# behind them were removed. Older releases read them.
REMOVED = {
    "nebula": "Nebula checkpointing was removed; checkpoints are written with torch.save",
    "compression_training": "the compression library was removed",
    "amp": "the NVIDIA Apex AMP integration was removed; use fp16, bf16 or torch_autocast",
    "quantize_training": "MoQ / quantize_training was removed",
    "sparse_gradients": "sparse compression of dense embedding gradients was removed",
    "eigenvalue": "eigenvalue-based MoQ was removed",
    "sparse_attention": "DeepSpeed Sparse Attention was removed",
    "elasticity": "elastic training was removed; set the three batch keys directly",
    "graph_harvesting": "graph harvesting was removed",
    "curriculum_learning": "top-level curriculum_learning was removed; use "
                           "data_efficiency.data_sampling.curriculum_learning",
    "progressive_layer_drop": "Progressive Layer Dropping was removed",
}
REMOVED_ZERO = {
    "mics_shard_size": "MiCS sharding was removed",
    "mics_hierarchical_params_gather": "MiCS sharding was removed",
    "zeropp_loco_param": "LoCo-ZeRO++ was removed",
}

# The keys HF Trainer fills when their value is "auto" (transformers, integrations/deepspeed.py,
# HfTrainerDeepSpeedConfig.trainer_config_process / trainer_config_finalize). Any other "auto"
# reaches DeepSpeed unchanged.
HF_AUTO_KEYS = {
    "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "train_batch_size",
    "gradient_clipping", "optimizer.params.lr", "optimizer.params.betas",
    "optimizer.params.eps", "optimizer.params.weight_decay", "scheduler.params.warmup_min_lr",
    "scheduler.params.warmup_max_lr", "scheduler.params.warmup_num_steps",
    "scheduler.params.total_num_steps", "fp16.enabled", "bf16.enabled",
    "zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
    "zero_optimization.stage3_param_persistence_threshold",
}

# --- optimizers -------------------------------------------------------------------------------
# DeepSpeed lower-cases these names and builds its own optimizer (engine.py,
# _configure_basic_optimizer); any other "type" is looked up as torch.optim.<type>, exactly.
DEEPSPEED_OPTIMIZERS = ("adam", "adamw", "lamb", "lion", "adagrad", "muadam", "muadamw", "musgd",
                        "muon")
TORCH_OPTIMIZERS = ("ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS",
                    "Muon", "NAdam", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam")
# Optimizers ZeRO runs without "zero_allow_untested_optimizer" (runtime/zero/utils.py,
# ZERO_SUPPORTED_OPTIMIZERS, by the class each type builds).
ZERO_TESTED_TYPES = ("adam", "adamw", "adagrad", "lion", "muon", "Adam", "AdamW", "Adagrad")

# Which class a type builds, by where the optimizer runs: "gpu" (fused), "cpu" (ZeRO offload
# of the optimizer to cpu/nvme) or "torch" (torch_adam: true). Each entry: the class DeepSpeed
# builds, its keyword parameters, and the ones the engine passes itself (so the config must not).
OPTIMIZER_CLASSES = {
    ("adam", "gpu"): ("deepspeed.ops.adam:FusedAdam", "lr bias_correction betas eps adam_w_mode "
                      "weight_decay amsgrad set_grad_none", "adam_w_mode"),
    ("adam", "cpu"): ("deepspeed.ops.adam:DeepSpeedCPUAdam", "lr bias_correction betas eps "
                      "weight_decay amsgrad adamw_mode fp32_optimizer_states",
                      "adamw_mode fp32_optimizer_states"),
    ("adam", "torch"): ("torch.optim:AdamW", "lr betas eps weight_decay amsgrad maximize foreach "
                        "capturable differentiable fused", "foreach"),
    ("lamb", "gpu"): ("deepspeed.ops.lamb:FusedLamb", "lr bias_correction betas eps "
                      "eps_inside_sqrt weight_decay max_grad_norm max_coeff min_coeff amsgrad", ""),
    ("lion", "gpu"): ("deepspeed.ops.lion:FusedLion", "lr betas weight_decay set_grad_none", ""),
    ("lion", "cpu"): ("deepspeed.ops.lion:DeepSpeedCPULion", "lr betas weight_decay "
                      "fp32_optimizer_states", ""),
    ("adagrad", "gpu"): ("torch.optim:Adagrad", "lr lr_decay weight_decay "
                         "initial_accumulator_value eps foreach maximize differentiable fused", ""),
    ("adagrad", "cpu"): ("deepspeed.ops.adagrad:DeepSpeedCPUAdagrad", "lr eps weight_decay amsgrad "
                         "fp32_optimizer_states", ""),
}
# Popped from the params by the engine before the optimizer is built (adam, adamw, muon).
ENGINE_OPTIMIZER_KEYS = ("adam_w_mode", "torch_adam", "fp32_optimizer_states")
# Parameter types every optimizer shares; a string "3e-5" fails the constructor's comparisons.
OPTIMIZER_PARAM_TYPES = {"lr": "number", "eps": "number", "weight_decay": "number",
                         "betas": "list", "momentum": "number", "bias_correction": "bool",
                         "amsgrad": "bool", "torch_adam": "bool", "adam_w_mode": "bool"}

# --- schedulers -------------------------------------------------------------------------------
# deepspeed/runtime/lr_schedules.py: name -> {param: default}; REQUIRED has no default.
REQUIRED = object()
SCHEDULERS = {
    "LRRangeTest": {"lr_range_test_min_lr": 1e-3, "lr_range_test_step_size": 2000,
                    "lr_range_test_step_rate": 1.0, "lr_range_test_staircase": False,
                    "last_batch_iteration": -1},
    "OneCycle": {"cycle_min_lr": REQUIRED, "cycle_max_lr": REQUIRED, "decay_lr_rate": 0.0,
                 "cycle_first_step_size": 2000, "cycle_second_step_size": None,
                 "cycle_first_stair_count": 0, "cycle_second_stair_count": None,
                 "decay_step_size": 0, "cycle_momentum": True, "cycle_min_mom": 0.8,
                 "cycle_max_mom": 0.9, "decay_mom_rate": 0.0, "last_batch_iteration": -1},
    "WarmupLR": {"warmup_min_lr": 0.0, "warmup_max_lr": None, "warmup_num_steps": 1000,
                 "warmup_type": "log", "last_batch_iteration": -1},
    "WarmupDecayLR": {"total_num_steps": REQUIRED, "warmup_min_lr": 0.0, "warmup_max_lr": 0.001,
                      "warmup_num_steps": 1000, "warmup_type": "log",
                      "last_batch_iteration": -1},
    "WarmupCosineLR": {"total_num_steps": REQUIRED, "warmup_min_ratio": 0.0,
                       "warmup_num_steps": 1000, "cos_min_ratio": 0.0001, "warmup_type": "log",
                       "last_batch_iteration": -1},
}
# Any other scheduler "type" is looked up in torch.optim.lr_scheduler (engine.py,
# _scheduler_from_config); its parameters are checked only when torch is importable.
TORCH_SCHEDULERS = ("ChainedScheduler", "ConstantLR", "CosineAnnealingLR",
                    "CosineAnnealingWarmRestarts", "CyclicLR", "ExponentialLR", "LambdaLR",
                    "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR", "PolynomialLR",
                    "ReduceLROnPlateau", "SequentialLR", "StepLR")
# WarmupLR raises unless warmup_num_steps is a positive int; the step counts must be ints.
SCHEDULER_INT_PARAMS = ("warmup_num_steps", "total_num_steps", "cycle_first_step_size",
                        "cycle_second_step_size", "decay_step_size", "lr_range_test_step_size",
                        "last_batch_iteration", "cycle_first_stair_count",
                        "cycle_second_stair_count")
SCHEDULER_NUMBER_PARAMS = ("warmup_min_lr", "warmup_max_lr", "cycle_min_lr", "cycle_max_lr",
                           "decay_lr_rate", "lr_range_test_min_lr", "lr_range_test_step_rate",
                           "warmup_min_ratio", "cos_min_ratio", "cycle_min_mom",
                           "cycle_max_mom", "decay_mom_rate")


# --- the type notation ------------------------------------------------------------------------
_INT_STRING = re.compile(r"[+-]?\d+(\.0*)?$")
_BOOL_STRINGS = {"true", "false", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n"}


def describe(spec: str | dict[str, Any]) -> str:
    """Human text for a type spec: 'an integer', 'one of cpu, nvme'..."""
    if isinstance(spec, dict):
        return "an object"
    nullable = spec.endswith("?")
    base = spec.rstrip("?")
    if base.startswith("enum:"):
        text = "one of " + ", ".join(base[5:].split("|"))
    else:
        text = {"bool": "true or false", "int": "an integer", "number": "a number",
                "str": "a string", "list": "a list", "object": "an object",
                "any": "any value"}[base]
    return text + (" (or null)" if nullable else "")


def matches(spec: str | dict[str, Any], value: object) -> bool:
    """Whether a parsed JSON value is accepted for a type spec (pydantic lax-mode semantics)."""
    if isinstance(spec, dict):
        return isinstance(value, dict)
    if value is None:
        return spec.endswith("?") or spec == "any"
    base = spec.rstrip("?")
    if base == "any":
        return True
    if base.startswith("enum:"):
        allowed = base[5:].split("|")
        if isinstance(value, bool):
            return False
        return str(value) in allowed or (isinstance(value, str) and value.lower() in allowed)
    if base == "bool":
        return isinstance(value, bool) or value in (0, 1) or (
            isinstance(value, str) and value.lower() in _BOOL_STRINGS)
    if base == "int":
        if isinstance(value, (bool, int)):
            return True  # pydantic lax mode takes a bool as 0/1
        if isinstance(value, float):
            return value.is_integer()
        return isinstance(value, str) and _INT_STRING.match(value.strip()) is not None
    if base == "number":
        if isinstance(value, (int, float)):
            return True
        try:
            float(value)
        except (TypeError, ValueError):
            return False
        return True
    if base == "str":
        return isinstance(value, str)
    if base == "list":
        return isinstance(value, list)
    if base == "object":
        return isinstance(value, dict)
    raise ValueError(f"unknown type spec {spec!r}")
