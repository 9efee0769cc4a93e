"""Optimizer and scheduler sections: each "type" checked against what that type accepts.

DeepSpeed passes `optimizer.params` and `scheduler.params` as keyword arguments to the class
the type names (engine.py, _configure_basic_optimizer and _scheduler_from_config), so an
unknown parameter is a TypeError at start-up and a missing required one too. With deepspeed
importable the accepted parameters come from the real constructors' signatures; otherwise from
classifier.preflight.deepspeed.schema.
"""

from typing import TYPE_CHECKING

from classifier.preflight.config import hf
from classifier.preflight.deepspeed import introspect as ds_introspect
from classifier.preflight.deepspeed import schema as ds_schema
from classifier.preflight.config.checks import as_stage, is_int, truthy
from classifier.preflight.finding import did_you_mean

if TYPE_CHECKING:
    from classifier.preflight.config.checks import Context


def _torch_names(ctx, module, fallback):
    if ctx.schema.source == "deepspeed":
        return ds_introspect.torch_names(module)
    return list(fallback)


# --- optimizer --------------------------------------------------------------------------------
def _typed_section(ctx, name, category, missing, fix):
    """(section, its "type") when both are there to check; a missing type is reported."""
    section = ctx.get(name)
    if not isinstance(section, dict):
        return None, None
    kind = section.get("type")
    if kind is None:
        ctx.add(category, "warning", name, missing, fix)
        return None, None
    if not isinstance(kind, str) or kind == "auto":
        return None, None
    return section, kind


def check_optimizer(ctx: "Context") -> None:
    """Check the optimizer type, its params against its constructor, and ZeRO's support of it."""
    section, kind = _typed_section(
        ctx, "optimizer", "config_field_error",
        '"optimizer" has no "type": DeepSpeed builds no optimizer from it and ignores its params',
        'add "type": "AdamW" (or the optimizer you meant)')
    if section is None:
        return
    torch_optimizers = _torch_names(ctx, "torch.optim", ds_schema.TORCH_OPTIMIZERS)
    lowered = kind.lower()
    if lowered not in ds_schema.DEEPSPEED_OPTIMIZERS and kind not in torch_optimizers:
        guess = did_you_mean(kind, list(ds_schema.DEEPSPEED_OPTIMIZERS) + [
            t for t in torch_optimizers if t != "Optimizer"])
        ctx.add("config_field_error", "error", "optimizer.type",
                f'optimizer type "{kind}" is neither a DeepSpeed optimizer '
                f"({', '.join(ds_schema.DEEPSPEED_OPTIMIZERS)}, any case) nor a class in "
                "torch.optim (exact case): DeepSpeed stops in deepspeed.initialize",
                f'use "{guess}"' if guess else 'use "AdamW"', suggestion=guess)
        return
    params = section.get("params")
    if isinstance(params, dict):
        _check_optimizer_params(ctx, kind, lowered, params)
    _check_zero_support(ctx, kind, lowered, params if isinstance(params, dict) else {})


def _strict_match(spec, value):
    """Optimizer constructors get the raw JSON values: no lax conversion as in pydantic."""
    if spec == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if spec == "bool":
        return isinstance(value, bool)
    return ds_schema.matches(spec, value)


def _optimizer_target(ctx, kind, lowered, params):
    """The class DeepSpeed builds for this type here, and the keys the engine handles itself."""
    device = ctx.get("zero_optimization.offload_optimizer.device")
    where = "cpu" if device in ("cpu", "nvme") else "gpu"
    family = "adam" if lowered in ("adam", "adamw") else lowered
    engine_keys = set(ds_schema.ENGINE_OPTIMIZER_KEYS) if family in ("adam", "muon") else set()
    if family == "adam" and truthy(params.get("torch_adam")):
        where = "torch"
    entry = ds_schema.OPTIMIZER_CLASSES.get((family, where)) or \
        ds_schema.OPTIMIZER_CLASSES.get((family, "gpu"))
    if entry:
        class_path, builtin, passed = entry
        if family == "adam" and where == "torch" and lowered == "adam" and \
                not truthy(params.get("adam_w_mode", True)):
            class_path = "torch.optim:Adam"
        return class_path, builtin.split(), set(passed.split()), engine_keys
    if lowered in ds_schema.DEEPSPEED_OPTIMIZERS:
        return None, None, set(), engine_keys  # muon / mup types: not checked
    return f"torch.optim:{kind}", None, set(), engine_keys


def _check_optimizer_params(ctx, kind, lowered, params):
    if "max_grad_norm" in params:
        ctx.add("config_field_error", "error", "optimizer.params.max_grad_norm",
                "max_grad_norm is not an optimizer parameter in DeepSpeed: deepspeed.initialize "
                "raises ValueError ('max_grad_norm' is not supported as an optimizer parameter)",
                f'delete it and set the top-level "gradient_clipping": {params["max_grad_norm"]}')
    for key, spec in ds_schema.OPTIMIZER_PARAM_TYPES.items():
        value = params.get(key)
        if value is None or value == "auto" or _strict_match(spec, value):
            if key == "betas" and isinstance(value, list) and (
                    len(value) != 2 or not all(ds_schema.matches("number", b) for b in value)):
                ctx.add("config_field_error", "error", "optimizer.params.betas",
                        f"optimizer.params.betas is {value!r}: it must be two numbers",
                        'e.g. "betas": [0.9, 0.999]')
            continue
        if spec == "number" and isinstance(value, str):
            problem = "a string: the optimizer compares it with numbers and raises TypeError"
        elif spec == "bool" and isinstance(value, str):
            problem = 'a string, and any non-empty string - "false" too - reads as true'
        else:
            problem = f"not {ds_schema.describe(spec)}"
        ctx.add("config_field_error", "error", f"optimizer.params.{key}",
                f'optimizer.params.{key} is {value!r}, {problem}',
                f'write it without quotes, e.g. "{key}": 3e-5' if spec == "number"
                else f"set it to {ds_schema.describe(spec)}", value=value)
    class_path, builtin, passed, engine_keys = _optimizer_target(ctx, kind, lowered, params)
    if class_path is None:
        return
    accepted = None
    if ctx.schema.source == "deepspeed":
        found = ds_introspect.optimizer_params(class_path)
        if found is not None:
            names, var_kw = found
            if var_kw:
                return
            accepted = set(names)
    if accepted is None and builtin is not None:
        accepted = set(builtin)
    if accepted is None:
        ctx.add("config_field_error", "note", "optimizer.params",
                f"the parameters of torch.optim.{kind} were not checked (torch is not importable)")
        return
    accepted = (accepted - passed) | engine_keys
    cls = class_path.split(":")[1]
    # max_grad_norm has its own finding (DeepSpeed refuses it with a ValueError first)
    _report_unknown_params(ctx, "config_field_error", "optimizer", f'optimizer "{kind}"',
                           f"builds {cls}(**params)", cls,
                           [k for k in params if k != "max_grad_norm"], sorted(accepted))


def _report_unknown_params(ctx, category, section, owner, call, cls, keys, accepted):
    """One error per parameter the constructor does not take, with a did-you-mean."""
    for key in keys:
        if key in accepted:
            continue
        guess = hf.HF_PARAMETERS.get(key)
        if guess not in accepted:  # an HF argument name maps to its parameter; else spelling
            guess = did_you_mean(key, list(accepted))
        ctx.add(category, "error", f"{section}.params.{key}",
                f'{owner} has no parameter "{key}": DeepSpeed {call} and it raises TypeError '
                f"(unexpected keyword argument '{key}')",
                (f'rename it to "{guess}"' if guess else f'delete "{key}"')
                + f"; {cls} takes: {', '.join(accepted)}", suggestion=guess)


def _check_zero_support(ctx, kind, lowered, params):
    stage = as_stage(ctx.get("zero_optimization.stage"))
    if not stage or truthy(ctx.get("zero_allow_untested_optimizer")):
        return
    tested = lowered in ("adam", "adamw", "adagrad", "lion", "muon") or \
        kind in ds_schema.ZERO_TESTED_TYPES
    if not tested:
        ctx.add("config_field_error", "error", "optimizer.type",
                f'optimizer "{kind}" is not one ZeRO was tested with: with ZeRO stage {stage} '
                "DeepSpeed stops ('You are using an untested ZeRO Optimizer')",
                'add "zero_allow_untested_optimizer": true at the top level, or use AdamW')


# --- scheduler --------------------------------------------------------------------------------
def check_scheduler(ctx: "Context") -> None:
    """Check the scheduler type, its params against its signature, and their values."""
    section, kind = _typed_section(
        ctx, "scheduler", "scheduler_config",
        '"scheduler" has no "type": DeepSpeed builds no LR scheduler and the learning rate stays '
        "constant", 'add "type": "WarmupLR" (or the scheduler you meant)')
    if section is None:
        return
    signature = _scheduler_signature(ctx, kind)
    if signature is False:
        names = list(ds_schema.SCHEDULERS) + _torch_names(
            ctx, "torch.optim.lr_scheduler", ds_schema.TORCH_SCHEDULERS)
        guess = did_you_mean(kind, names)
        ctx.add("scheduler_config", "error", "scheduler.type",
                f'scheduler type "{kind}" is neither in deepspeed.runtime.lr_schedules nor in '
                f"torch.optim.lr_scheduler (both exact case): DeepSpeed stops ('DeepSpeed does "
                f"not recognize LR scheduler {kind}')", f'use "{guess}"' if guess else
                f'use one of {", ".join(ds_schema.SCHEDULERS)}', suggestion=guess)
        return
    params = section.get("params", {})
    if params == "auto" or not isinstance(params, dict):
        return
    if signature is None:
        ctx.add("scheduler_config", "note", "scheduler.params",
                f"the parameters of torch.optim.lr_scheduler.{kind} were not checked "
                "(torch is not importable)")
    else:
        _check_scheduler_params(ctx, kind, params, signature)
    _check_scheduler_values(ctx, kind, params)


def _scheduler_signature(ctx, kind):
    """{param: default} of the type, None when it exists but cannot be inspected, False when
    DeepSpeed would not find it."""
    if ctx.schema.source == "deepspeed":
        found = ds_introspect.scheduler_params(kind)
        if found is None:
            return False
        names, var_kw = found
        return None if var_kw else names
    if kind in ds_schema.SCHEDULERS:
        return ds_schema.SCHEDULERS[kind]
    return None if kind in ds_schema.TORCH_SCHEDULERS else False


def _check_scheduler_params(ctx, kind, params, signature):
    _report_unknown_params(ctx, "scheduler_config", "scheduler", f"scheduler {kind}",
                           f"calls {kind}(optimizer, **params)", kind, list(params), list(signature))
    for key, default in signature.items():
        if default is ds_schema.REQUIRED and key not in params:
            ctx.add("scheduler_config", "error", "scheduler.params" if "params" in ctx.get(
                        "scheduler") else "scheduler.type",
                    f"{kind} needs {key} and the config does not set it: DeepSpeed raises "
                    f"TypeError (missing required argument '{key}') when it builds the scheduler",
                    f'add "{key}" to scheduler.params' + (
                        " (the total number of optimizer steps: samples x epochs / "
                        'train_batch_size; "auto" under HF Trainer)' if key == "total_num_steps"
                        else ""))
    if "warmup_num_steps" in signature and "warmup_num_steps" not in params:
        ctx.add("scheduler_config", "note", "scheduler.type",
                f"{kind} without warmup_num_steps warms up over the default "
                f"{signature['warmup_num_steps']} steps", 'set "warmup_num_steps" explicitly '
                "(a few percent of total_num_steps is common)")
    if kind == "WarmupLR" and "warmup_max_lr" in signature and "warmup_max_lr" not in params:
        ctx.add("scheduler_config", "note", "scheduler.type",
                "WarmupLR without warmup_max_lr warms up to the optimizer's lr")
    if kind == "WarmupDecayLR" and "warmup_max_lr" not in params:
        lr = ctx.get("optimizer.params.lr")
        default = signature.get("warmup_max_lr")
        if isinstance(lr, (int, float)) and lr != default:
            ctx.add("scheduler_config", "warning", "scheduler.type",
                    f"WarmupDecayLR without warmup_max_lr ramps to its default {default}, not to "
                    f"the optimizer's lr {lr}: the scheduler sets the learning rate every step",
                    f'add "warmup_max_lr": {lr} to scheduler.params')


def _check_scheduler_values(ctx, kind, params):
    for key in ds_schema.SCHEDULER_INT_PARAMS:
        value = params.get(key)
        if value is None or value == "auto":
            continue
        strict = key == "warmup_num_steps"  # WarmupLR: isinstance(..., int) and > 0, else raise
        ok = is_int(value) and (value > 0 or key in ("last_batch_iteration",) or
                                "stair" in key or key == "decay_step_size")
        if not ok and not strict and isinstance(value, float) and value.is_integer() and value > 0:
            continue
        if not ok:
            ctx.add("scheduler_config", "error", f"scheduler.params.{key}",
                    f"scheduler.params.{key} is {value!r}; it must be a positive integer"
                    + (" (WarmupLR raises ValueError otherwise)" if strict else ""),
                    f'write it as a plain integer, e.g. "{key}": 1000', value=value)
    for key in ds_schema.SCHEDULER_NUMBER_PARAMS:
        value = params.get(key)
        if value is None or value == "auto" or isinstance(value, list):
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            ctx.add("scheduler_config", "error", f"scheduler.params.{key}",
                    f"scheduler.params.{key} is {value!r}, not a number: the scheduler's "
                    "arithmetic raises TypeError", f'write it without quotes, e.g. "{key}": 1e-5',
                    value=value)
    warm, total = params.get("warmup_num_steps"), params.get("total_num_steps")
    if is_int(warm) and is_int(total) and warm >= total:
        ctx.add("scheduler_config", "warning", "scheduler.params.warmup_num_steps",
                f"warmup_num_steps {warm} >= total_num_steps {total}: the run ends before warm-up "
                "does, so the decay never happens", "make warmup_num_steps a small fraction of "
                "total_num_steps")
    warmup_type = params.get("warmup_type")
    if isinstance(warmup_type, str) and warmup_type not in ("log", "linear"):
        ctx.add("scheduler_config", "warning", "scheduler.params.warmup_type",
                f'warmup_type "{warmup_type}" is not log or linear: DeepSpeed logs a warning and '
                "uses log", 'use "linear" or "log"')
