"""ZeRO settings that do not do what they say, and the ZeRO-3 memory estimate.

ZeRO-3 without offload is the most frugal stage and the usual one on large clusters, so it is
only a problem when the model states do not fit: with `--params N` the per-GPU model-state
memory is estimated with DeepSpeed's own estimate_zero3_model_states_mem_needs when deepspeed
is importable, else with the same published formula, and `--gpu-memory` judges it.
"""

from typing import TYPE_CHECKING

from classifier.preflight.deepspeed import introspect as ds_introspect
from classifier.preflight.config.checks import as_stage, truthy

if TYPE_CHECKING:
    from classifier.preflight.config.checks import Context

GIB = 1024 ** 3


def check_zero(ctx: "Context") -> None:
    """Check the offload settings against the ZeRO stage, and ZeRO-3's memory."""
    zero = ctx.get("zero_optimization")
    if not isinstance(zero, dict):
        return
    stage = as_stage(zero.get("stage"))
    if stage is None:
        return  # the type check reported it
    devices = {}
    for kind, legacy in (("offload_optimizer", "cpu_offload"), ("offload_param", "cpu_offload_param")):
        section = zero.get(kind)
        device = section.get("device", "none") if isinstance(section, dict) else "none"
        if truthy(zero.get(legacy)) and device == "none":
            device = "cpu"
        devices[kind] = device if device in ("cpu", "nvme") else "none"
        if device == "nvme" and isinstance(section, dict) and not section.get("nvme_path"):
            ctx.add("config_field_error", "error", f"zero_optimization.{kind}.device",
                    f'{kind} goes to nvme but "nvme_path" is not set: the swapper has nowhere '
                    "to write and fails when ZeRO starts", f'add "nvme_path": "/local_nvme" to '
                    f'"{kind}" (a fast local disk), or use "device": "cpu"')
    if stage < 3 and devices["offload_param"] != "none":
        ctx.add("config_field_error", "warning", "zero_optimization.offload_param",
                f"offload_param works only with ZeRO stage 3; stage {stage} ignores it and keeps "
                "the parameters on the GPU", 'set "stage": 3, or remove "offload_param"')
    if stage == 0 and devices["offload_optimizer"] != "none":
        ctx.add("config_field_error", "warning", "zero_optimization.offload_optimizer",
                "offload_optimizer needs ZeRO stage 1, 2 or 3; stage 0 ignores it",
                'set "stage" to 1 or more, or remove "offload_optimizer"')
    if stage != 3:
        return
    opt_off = devices["offload_optimizer"] != "none"
    param_off = devices["offload_param"] != "none"
    estimate = _zero3_estimates(ctx, opt_off, param_off)
    if estimate is None:
        if not opt_off:
            ctx.add("gpu_oom", "note", "zero_optimization.stage",
                    "ZeRO-3 without offload keeps every state on the GPUs, sharded across them; "
                    "whether it fits depends on the model size and the number of GPUs",
                    "pass --params N --gpu-memory GIB (and the world size) for an estimate")
        return
    per_gpu = estimate["facts"]["gpu_bytes_per_device"]
    capacity = ctx.gpu_memory_gib * GIB if ctx.gpu_memory_gib else None
    if capacity is None or per_gpu <= capacity:
        text = estimate["text"]
        if capacity is not None:
            text += f"; {(capacity - per_gpu) / GIB:.1f} GiB per GPU left for activations"
        ctx.add("gpu_oom", "note", "zero_optimization.stage", text, **estimate["facts"])
        return
    # Only a config whose model states alone overflow the GPU is a problem: ZeRO-3 without
    # offload is the usual setup when enough GPUs share the states.
    short = (per_gpu - capacity) / GIB
    ctx.add("gpu_oom", "error", "zero_optimization.stage",
            f"the model states do not fit: {per_gpu / GIB:.1f} GiB per GPU, {short:.1f} GiB more "
            f"than the {ctx.gpu_memory_gib:g} GiB each GPU has; " + estimate["text"],
            _fit_fix(estimate, capacity, opt_off, param_off), shortfall_gib=round(short, 2),
            **estimate["facts"])


def _fit_fix(estimate, capacity, opt_off, param_off):
    """The first setting (in the estimate's order) whose model states fit, or more GPUs."""
    fits = [label for label, gib in estimate["facts"]["estimates_gib"].items()
            if gib * GIB <= capacity and label != "as configured"]
    if not opt_off and "offload_optimizer cpu" in fits:
        return 'add "offload_optimizer": {"device": "cpu", "pin_memory": true} to ' \
               '"zero_optimization"'
    if not param_off and fits:
        return 'add "offload_optimizer": {"device": "cpu"} and "offload_param": ' \
               '{"device": "cpu"} to "zero_optimization"'
    return "use more GPUs (the states shard across them), a smaller model, or larger GPUs"


def _zero3_estimates(ctx, opt_off, param_off):
    if not ctx.params:
        return None
    nodes = ctx.world.nodes if ctx.world.gpus_per_node else 1
    gpn = ctx.world.gpus_per_node or ctx.world.size or 1
    total = int(ctx.params)
    largest = int(ctx.largest_layer or 0)
    results = {}
    for label, o, p in (("as configured", opt_off, param_off), ("offload_optimizer cpu", True, False),
                        ("offload_optimizer+offload_param cpu", True, True)):
        results[label] = zero3_model_states(ctx.schema, total, largest, gpn, nodes, o, p)
    source = "DeepSpeed's estimate_zero3_model_states_mem_needs" \
        if ctx.schema.source == "deepspeed" else "dsdiag's copy of DeepSpeed's formula"
    current = results["as configured"]
    parts = [f"{label}: {gpu / GIB:.1f} GiB per GPU" for label, (cpu, gpu) in results.items()]
    text = (f"model states for {total / 1e9:.2f}B parameters on {gpn * nodes} GPU(s) ({source}, "
            f"{_largest_text(largest)}; activations come on top): "
            + "; ".join(parts))
    if ctx.gpu_memory_gib:
        text += f"; each GPU has {ctx.gpu_memory_gib:g} GiB"
    facts = dict(params=total, gpus=gpn * nodes, gpu_bytes_per_device=current[1],
                 cpu_bytes_per_node=current[0], estimator=source,
                 estimates_gib={k: round(v[1] / GIB, 2) for k, v in results.items()})
    return {"text": text, "facts": facts}


def zero3_model_states(schema: ds_introspect.Schema, total: int, largest: int, gpus_per_node: int,
                       nodes: int, opt_off: bool, param_off: bool) -> tuple[float, int]:
    """(cpu bytes per node, gpu bytes per GPU) for ZeRO-3 model states.

    With deepspeed importable this is DeepSpeed's own estimator; without it, the same published
    formula (https://deepspeed.readthedocs.io/en/latest/memory.html): 18 bytes per parameter
    sharded over the GPUs without offload, 2 with the optimizer offloaded, plus 4 bytes per
    parameter of the largest layer; ZeRO-Init assumed.
    """
    if schema.source == "deepspeed":
        return ds_introspect.estimate_zero3(total, largest, gpus_per_node, nodes, opt_off,
                                            param_off and opt_off)
    total_gpus = gpus_per_node * nodes
    largest_bytes = 4 * largest
    buffer = 1.5
    if opt_off and param_off:
        return int(total * 18 / nodes * buffer), largest_bytes
    if opt_off:
        return int(total * 16 / nodes * buffer), largest_bytes + int(2 * total / total_gpus)
    return int(largest * 4 * gpus_per_node * buffer), largest_bytes + int(18 * total / total_gpus)


def _largest_text(largest):
    if not largest:
        return "largest layer not given, counted as 0: pass --largest-layer-params"
    return f"largest layer {largest / 1e6:.0f}M params"
