"""Configs written for the Hugging Face integration (Trainer / accelerate): recognising one that
was checked without --hf, and HF argument names put where a DeepSpeed key belongs.

The mapping follows transformers' HfTrainerDeepSpeedConfig.trainer_config_process and
trainer_config_finalize, which copy these TrainingArguments into the DeepSpeed config.
"""

import json
from typing import Any

from classifier.preflight.deepspeed import schema as ds_schema

# TrainingArguments name -> the DeepSpeed key HF fills from it.
HF_ARGUMENTS = {
    "per_device_train_batch_size": "train_micro_batch_size_per_gpu",
    "per_gpu_train_batch_size": "train_micro_batch_size_per_gpu",  # its deprecated spelling
    "learning_rate": "optimizer.params.lr",
    "weight_decay": "optimizer.params.weight_decay",
    "adam_epsilon": "optimizer.params.eps",
    "adam_beta1": "optimizer.params.betas",
    "adam_beta2": "optimizer.params.betas",
    "max_grad_norm": "gradient_clipping",
    "warmup_steps": "scheduler.params.warmup_num_steps",
    "max_steps": "scheduler.params.total_num_steps",
    "fp16": "fp16.enabled",
    "bf16": "bf16.enabled",
}
# The same names inside "optimizer.params" / "scheduler.params": the parameter they become.
HF_PARAMETERS = {name: target.rsplit(".", 1)[1] for name, target in HF_ARGUMENTS.items()
                 if target.startswith(("optimizer.params.", "scheduler.params."))}
# A config is HF's when at least this many of the keys HF fills are "auto", and they are most
# of those keys present: a config meant for DeepSpeed alone has one stray "auto", not a pattern.
MIN_AUTO = 3


def auto_paths(data: dict[str, Any]) -> list[str]:
    """The keys HF fills that are "auto" in the config, if it looks written for HF; else []."""
    present = [path for path in sorted(ds_schema.HF_AUTO_KEYS) if _get(data, path) is not None]
    autos = [path for path in present if _get(data, path) == "auto"]
    return autos if len(autos) >= MIN_AUTO and 2 * len(autos) > len(present) else []


def _get(data, dotted):
    node = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def as_deepspeed(key: str, value: object) -> str:
    """How the HF argument `key` with `value` is written in a DeepSpeed config (a JSON snippet)."""
    target = HF_ARGUMENTS[key]
    if target.endswith(".betas"):
        value = [value, "<adam_beta2>"] if key == "adam_beta1" else ["<adam_beta1>", value]
    node: Any = value
    for part in reversed(target.split(".")[1:]):
        node = {part: node}
    head = target.split(".")[0]
    return f'"{head}": {json.dumps(node)}'


def hf_argument_message(key: str, value: object, dsname: str) -> tuple[str, str]:
    """(message, fix) for a top-level HF argument name in a DeepSpeed config."""
    target = HF_ARGUMENTS[key]
    message = (f'unknown top-level key "{key}": {dsname} never reads it and ignores it silently; '
               f'"{key}" is a Hugging Face TrainingArguments name, and DeepSpeed calls it '
               f'"{target}"')
    fix = (f"write {as_deepspeed(key, value)} (or pass --{key} to the HF Trainer and set "
           f'"{target}" to "auto")')
    return message, fix
