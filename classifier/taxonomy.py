"""The category contract: ids, layers and checklist items every other module keys on."""

# Layers follow the source chapter's troubleshooting order: env, then launch, then config;
# install problems come before all of them (nothing runs until the stack is consistent).
LAYERS = ("install", "env", "launch", "config")

# id -> (layer, short title). These ids are the public contract of the JSON output.
CATEGORIES = {
    "version_mismatch": ("install", "torch / CUDA / driver / DeepSpeed binaries do not fit together"),
    "op_build_error": ("install", "a DeepSpeed op failed to build or load"),
    "config_json_syntax": ("config", "the DeepSpeed config file does not parse"),
    "config_field_error": ("config", "a config field is misspelled, unknown or of the wrong type"),
    "batch_size_mismatch": ("config", "the batch-size arithmetic does not add up"),
    "precision_conflict": ("config", "mixed-precision settings contradict each other"),
    "scheduler_config": ("config", "the LR scheduler is misconfigured"),
    "env_var_missing": ("env", "a distributed environment variable is missing"),
    "device_visibility": ("env", "the process cannot see the GPU it was given"),
    "port_conflict": ("launch", "the master port is already in use"),
    "connection_failure": ("launch", "workers cannot reach the master / rendezvous"),
    "nccl_timeout": ("env", "a collective ran past its timeout"),
    "nccl_network": ("env", "NCCL transport or network failure"),
    "gpu_oom": ("config", "CUDA out of memory"),
    "host_oom": ("env", "host memory exhausted"),
    "fp16_overflow": ("config", "fp16 loss scale collapsed"),
    "gpu_hardware": ("env", "GPU hardware fault"),
    "disk_full": ("env", "no space left on device"),
}

# Outcomes that are not failure categories; they carry no layer.
UNKNOWN = "unknown"
NONE = "none"
ALL_IDS = tuple(CATEGORIES) + (UNKNOWN, NONE)


def layer_of(category):
    """Return the layer of a category id, or None for unknown/none."""
    entry = CATEGORIES.get(category)
    return entry[0] if entry else None
