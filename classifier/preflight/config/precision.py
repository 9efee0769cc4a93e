"""Precision settings of a DeepSpeed config: fp16 and bf16 (and its old name bfloat16) against
each other, data_types.param_dtype against the enabled mode, and lamb's dynamic loss scaling.
"""

from typing import TYPE_CHECKING

from classifier.preflight.config.checks import truthy

if TYPE_CHECKING:
    from classifier.preflight.config.checks import Context


def check_precision(ctx: "Context") -> None:
    """Check fp16/bf16 against each other, data_types.param_dtype and the lamb optimizer."""
    fp16 = truthy(ctx.get("fp16.enabled")) and ctx.get("fp16.enabled") != "auto"
    bf16_key = "bf16" if ctx.get("bf16") is not None else "bfloat16"
    bf16 = truthy(ctx.get(f"{bf16_key}.enabled")) and ctx.get(f"{bf16_key}.enabled") != "auto"
    if fp16 and bf16:
        ctx.add("precision_conflict", "error", f"{bf16_key}.enabled",
                "fp16 and bf16 are both enabled: DeepSpeed stops at start-up ('bfloat16 and fp16 "
                "modes cannot be simultaneously enabled')",
                'keep one: bf16 on A100/H100-class GPUs (no loss scaling needed) and set '
                '"fp16": {"enabled": false}; fp16 only on GPUs without bf16 (V100, T4)')
    if ctx.get("bf16") is not None and ctx.get("bfloat16") is not None:
        ctx.add("precision_conflict", "warning", "bfloat16",
                'both "bf16" and its old name "bfloat16" are present: DeepSpeed reads "bf16" '
                'and silently ignores "bfloat16"', 'merge them into "bf16"')
    param_dtype = ctx.get("data_types.param_dtype")
    if isinstance(param_dtype, str) and param_dtype != "auto":
        mode = "fp16" if fp16 else "bf16" if bf16 else "fp32"
        aliases = {"fp16": ("fp16", "float16", "half", "torch.float16"),
                   "bf16": ("bf16", "bfloat16", "torch.bfloat16"),
                   "fp32": ("fp32", "float32", "float", "torch.float32")}
        if param_dtype.lower() not in aliases[mode]:
            ctx.add("precision_conflict", "error", "data_types.param_dtype",
                    f'data_types.param_dtype is "{param_dtype}" but the enabled precision mode '
                    f"is {mode}: DeepSpeed stops in deepspeed.initialize (conflicts with the "
                    "enabled precision mode)", 'omit "param_dtype" or enable the matching mode')
    optimizer = ctx.get("optimizer.type")
    loss_scale = ctx.get("fp16.loss_scale", 0)
    if isinstance(optimizer, str) and optimizer.lower() == "lamb" and fp16 and loss_scale not in (
            0, "auto", None):
        ctx.add("precision_conflict", "error", "fp16.loss_scale",
                f"the lamb optimizer needs dynamic loss scaling, but fp16.loss_scale is "
                f"{loss_scale} (static): DeepSpeed refuses it in deepspeed.initialize",
                'set "fp16.loss_scale" to 0 (dynamic)')
