"""The checks `dsdiag check-config` runs on a parsed DeepSpeed config: keys and types at every
level, then the batch arithmetic, precision, optimizer and ZeRO memory.

Each check reads the position-carrying tree from classifier.preflight.config.parse and a Schema (the
installed DeepSpeed's, or dsdiag's own from ds_schema), and adds Findings to the Context.
The precision checks live in precision, the optimizer and scheduler ones in optim, the ZeRO
ones in zero. Messages quote what DeepSpeed itself would say where it says anything, and say
"silently" where it says nothing.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from classifier.preflight.config import hf
from classifier.preflight.deepspeed import introspect as ds_introspect
from classifier.preflight.deepspeed import schema as ds_schema
from classifier.preflight.finding import Finding, did_you_mean

if TYPE_CHECKING:
    from classifier.preflight.config.parse import Node

STRICT_SECTIONS = set(ds_introspect.MODEL_SECTIONS)  # pydantic, extra="forbid": unknown = fatal


@dataclass(slots=True)
class World:
    size: int | None = None
    nodes: int = 1
    gpus_per_node: int | None = None

    @property
    def known(self) -> bool:
        """Whether the world size was given."""
        return self.size is not None


@dataclass(slots=True)
class Context:
    root: "Node"  # the whole config (an object node)
    schema: ds_introspect.Schema
    world: World
    hf: bool = False
    params: float | None = None
    largest_layer: int = 0
    gpu_memory_gib: float | None = None
    findings: list[Finding] = field(default_factory=list)
    data: dict[str, Any] = field(init=False)  # the config as plain Python (last duplicate wins)
    batch: tuple[int, int, int] | None = field(init=False, default=None)  # (tbs, micro, accum)

    def __post_init__(self):
        self.data = self.root.to_python()

    def add(self, category: str, severity: str, key: str, message: str, fix: str = "",
            **facts: object) -> None:
        """Append a Finding placed at the line:col of `key` (a dotted path)."""
        line, col = locate(self.root, key)
        self.findings.append(Finding(category, severity, message, fix, line, col, key, facts))

    @property
    def dsname(self) -> str:
        """'DeepSpeed X.Y.Z' for the installed release, else 'DeepSpeed'."""
        if self.schema.source == "deepspeed":
            return f"DeepSpeed {self.schema.version}"
        return "DeepSpeed"

    @property
    def refuser(self) -> str:
        """Who refuses a removed section: the installed release, or the one the schema follows."""
        if self.schema.source == "deepspeed":
            return self.dsname
        return f"DeepSpeed {self.schema.version} (older releases read it)"

    def get(self, dotted: str, default: Any = None) -> Any:
        """The value at a dotted path in the config data, or default when it is absent."""
        node = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node


def locate(root: "Node", dotted: str) -> tuple[int, int]:
    """line:col of the deepest existing key on a dotted path (1:1 for the empty path)."""
    line, col = 1, 1
    node = root
    for part in [p for p in dotted.split(".") if p] if dotted else []:
        member = node.member(part) if node is not None and node.kind == "object" else None
        if member is None:
            break
        line, col, node = member.line, member.col, member.value
    return line, col


def truthy(value: object) -> bool:
    """How DeepSpeed's bool fields read a value (pydantic lax mode); "auto" reads as unset."""
    if isinstance(value, str):
        return value.lower() in ("true", "1", "yes", "on", "t", "y")
    return bool(value) and value is not None


def is_int(value: object) -> bool:
    """Whether value is an int and not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def as_stage(value: object) -> int | None:
    """The ZeRO stage as DeepSpeed's model reads it ("3" and 3.0 are 3), or None."""
    if value is None:
        return 0
    if ds_schema.matches("enum:0|1|2|3", value) and not isinstance(value, bool):
        return int(float(value))
    return None


# --- keys and types ---------------------------------------------------------------------------
def check_keys(ctx: Context) -> None:
    """Check every key against the schema: removed, unknown, wrong type, refused by a model."""
    schema = ctx.schema
    for member in ctx.root.value:
        key = member.key
        if key in schema.removed:
            ctx.add("config_field_error", "error", key,
                    f'"{key}" is refused by {ctx.refuser}: {schema.removed[key]}',
                    f'delete the "{key}" section')
            continue
        spec = schema.top.get(key)
        if spec is None:
            _unknown_top_level(ctx, key)
            continue
        if isinstance(spec, dict):
            _check_section(ctx, key, member.value, spec, strict=key in STRICT_SECTIONS)
        else:
            _check_value(ctx, key, member.value, spec)


def _unknown_top_level(ctx, key):
    if key.startswith(("_", "#", "//")) or key.lower() in ("comment", "comments", "description"):
        ctx.add("config_field_error", "note", key,
                f'"{key}" is not a DeepSpeed key; DeepSpeed ignores it, which is fine for a comment')
        return
    if key in hf.HF_ARGUMENTS:
        message, fix = hf.hf_argument_message(key, ctx.get(key), ctx.dsname)
        ctx.add("config_field_error", "warning", key, message, fix,
                suggestion=hf.HF_ARGUMENTS[key])
        return
    guess = did_you_mean(key, [k for k in ctx.schema.top if k not in ctx.schema.removed])
    consequence = ""
    if guess == "zero_optimization":
        consequence = ", so ZeRO stays off (stage 0) and nothing in the log says so"
    elif guess in ("fp16", "bf16"):
        consequence = ", so training runs in fp32"
    elif isinstance(ctx.schema.top.get(guess), dict):
        consequence = f', so everything in it is dropped and "{guess}" keeps its defaults'
    ctx.add("config_field_error", "warning", key,
            f'unknown top-level key "{key}": {ctx.dsname} never reads it and ignores the whole '
            f"value silently{consequence}",
            f'rename "{key}" to "{guess}"' if guess else
            f'delete "{key}" or move it to the section it belongs to', suggestion=guess)


def _check_section(ctx, path, node, spec, strict):
    if node.kind != "object":
        if path == "zero_optimization" and node.kind == "bool":
            ctx.add("config_field_error", "note", path,
                    '"zero_optimization": true/false is the deprecated form: DeepSpeed reads it '
                    "as stage 1 (true) or 0 (false)", 'write {"stage": 1} instead')
            return
        if node.value == "auto":
            return  # reported by check_auto
        if path in ("fp16", "bf16") and node.kind == "bool":
            # TrainingArguments' form; DeepSpeedConfig does DeepSpeedFP16Config(**value)
            ctx.add("config_field_error", "error", path,
                    f'"{path}": {str(node.value).lower()} is the Hugging Face TrainingArguments '
                    f"form; {ctx.dsname} wants an object and stops at start-up (TypeError: "
                    "argument after ** must be a mapping, not bool)",
                    f'write "{path}": {{"enabled": {str(node.value).lower()}}}',
                    suggestion=f"{path}.enabled")
            return
        ctx.add("config_field_error", "error", path,
                f'"{path}" must be an object ({{...}}), not {node.kind} {node.to_python()!r}',
                f'write "{path}": {{ ... }}')
        return
    model_section = path in ctx.schema.models
    for member in node.value:
        key, sub = member.key, f"{path}.{member.key}"
        if path == "zero_optimization" and key in ctx.schema.removed_zero:
            ctx.add("config_field_error", "error", sub,
                    f'"{sub}" is refused by {ctx.refuser}: '
                    f"{ctx.schema.removed_zero[key]}", f'delete "{key}"')
            continue
        if key not in spec:
            _unknown_nested(ctx, path, key, spec, strict)
            continue
        if sub in ctx.schema.deprecated:
            ctx.add("config_field_error", "note", sub,
                    f'"{sub}" is deprecated; DeepSpeed maps it onto its replacement with a warning',
                    f"use {ctx.schema.deprecated[sub]} instead")
        if isinstance(spec[key], dict):
            _check_section(ctx, sub, member.value, spec[key], strict)
        elif not model_section:
            _check_value(ctx, sub, member.value, spec[key])
    if model_section:
        _validate_model(ctx, path, node)


def _unknown_nested(ctx, path, key, spec, strict):
    sub = f"{path}.{key}"
    guess = did_you_mean(key, list(spec))
    if strict:
        message = (f'unknown key "{key}" in "{path}": DeepSpeed validates this section with a '
                   "pydantic model that forbids extra keys, so it stops at start-up "
                   "(ValidationError: Extra inputs are not permitted)")
        severity = "error"
    else:
        message = f'unknown key "{key}" in "{path}": {ctx.dsname} never reads it and ignores ' \
                  "it silently"
        severity = "warning"
    ctx.add("config_field_error", severity, sub, message,
            f'rename "{key}" to "{guess}"' if guess else f'delete "{key}"; valid keys: '
            + ", ".join(sorted(spec)[:12]) + (" ..." if len(spec) > 12 else ""), suggestion=guess)


def _check_value(ctx, path, node, spec):
    value = node.to_python()
    if value == "auto" or spec == "any":
        return
    if not ds_schema.matches(spec, value):
        ctx.add("config_field_error", "error", path,
                f'"{path}" is {value!r}, but DeepSpeed expects {ds_schema.describe(spec)}',
                f'set "{path}" to {ds_schema.describe(spec)}', value=value)


def strip_auto(value: Any) -> Any:
    """The value with every "auto" entry dropped from its (nested) dicts."""
    if isinstance(value, dict):
        return {k: strip_auto(v) for k, v in value.items() if v != "auto"}
    return value


def _validate_model(ctx, path, node):
    """Let DeepSpeed's own pydantic model judge the section's values."""
    model = ctx.schema.models[path].__name__
    for loc, message in ds_introspect.validate_with_model(path, strip_auto(node.to_python()),
                                                          ctx.schema):
        key = ".".join((path,) + loc)
        value = ctx.get(key)
        shown = f"{value!r} " if loc and value is not None else ""
        ctx.add("config_field_error", "error", key,
                f'"{key}" {shown}is rejected by {ctx.dsname} ({model}): {message}',
                f'fix "{key}" to what the message asks for', value=value)


# --- "auto" -----------------------------------------------------------------------------------
def check_auto(ctx: Context) -> None:
    """Report each "auto" value that no one fills in before DeepSpeed reads it."""
    for path, value in _walk(ctx.data):
        if value != "auto":
            continue
        if ctx.hf and path in ds_schema.HF_AUTO_KEYS:
            continue
        section = path.split(".")[0]
        dropped = section in STRICT_SECTIONS and path.count(".") == 1
        if ctx.hf:
            why = "HF fills \"auto\" only for its own list of keys and leaves this one as is"
        else:
            why = 'only the Hugging Face integration (Trainer / accelerate) fills in "auto"'
        if dropped:
            message = f'"{path}" is "auto": {why}; DeepSpeed drops it and silently uses the default'
            severity = "warning"
        else:
            message = f'"{path}" is "auto": {why}; DeepSpeed gets the string and fails'
            severity = "error"
        fix = "set a real value" + ("" if ctx.hf else ", or pass --hf if the config goes "
                                    "through HF Trainer/accelerate")
        ctx.add("config_field_error", severity, path, message, fix)


def _walk(value, prefix=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, prefix)
    else:
        yield prefix, value


# --- batch arithmetic ---------------------------------------------------------------------------
BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")


def check_batch(ctx: Context) -> None:
    """train_batch_size = micro batch x accumulation x world size (runtime/config.py,
    _set_batch_related_parameters and _batch_assertion); resolved values go into ctx.batch."""
    values = {k: ctx.get(k) for k in BATCH_KEYS}
    if any(v == "auto" for v in values.values()):
        return  # HF fills them (or check_auto reported them)
    given = {k: v for k, v in values.items() if v is not None}
    if any(not (is_int(v) or (isinstance(v, float) and v.is_integer())) for v in given.values()):
        return  # the type check already reported it
    given = {k: int(v) for k, v in given.items()}
    for key, value in given.items():
        if value <= 0:
            ctx.add("batch_size_mismatch", "error", key,
                    f'"{key}" is {value}; DeepSpeed requires it to be greater than 0',
                    f'set "{key}" to a positive integer')
            return
    tbs, mb, gas = (given.get(k) for k in BATCH_KEYS)
    if tbs is None and mb is None:
        ctx.add("batch_size_mismatch", "error", "",
                "neither train_batch_size nor train_micro_batch_size_per_gpu is set: DeepSpeed "
                "stops at start-up ('Either train_batch_size or train_micro_batch_size_per_gpu "
                "needs to be provided')",
                'set "train_micro_batch_size_per_gpu" (and "gradient_accumulation_steps")')
        return
    ws = ctx.world.size
    if ws is None:
        _batch_without_world(ctx, tbs, mb, gas)
        return
    # The same derivation as DeepSpeed's, then its assertion.
    if tbs is not None and mb is not None and gas is None:
        gas = tbs // mb // ws
    elif tbs is not None and gas is not None and mb is None:
        mb = tbs // ws // gas
    elif tbs is not None and mb is None and gas is None:
        gas, mb = 1, tbs // ws
    elif tbs is None:
        gas = gas or 1
        tbs = mb * gas * ws
    facts = dict(world_size=ws, train_batch_size=tbs, micro_batch=mb, grad_accum=gas)
    if mb == 0 or gas == 0 or tbs != mb * gas * ws:
        _batch_mismatch(ctx, given, tbs, mb, gas, ws, facts)
        return
    ctx.batch = (tbs, mb, gas)
    ctx.add("batch_size_mismatch", "note", "train_batch_size" if "train_batch_size" in given
            else "", f"batch arithmetic holds for world size {ws}: train_batch_size {tbs} = "
            f"{mb} (micro batch per GPU) x {gas} (accumulation) x {ws}", **facts)


def _batch_mismatch(ctx, given, tbs, mb, gas, ws, facts):
    tbs_given = given.get("train_batch_size")
    mb_given = given.get("train_micro_batch_size_per_gpu")
    gas_given = given.get("gradient_accumulation_steps")
    derived = [k for k in BATCH_KEYS if k not in given]
    shown_tbs = tbs_given if tbs_given is not None else tbs
    expected = f"{mb_given if mb_given is not None else mb} x " \
               f"{gas_given if gas_given is not None else gas} x {ws}"
    message = (f"train_batch_size {shown_tbs} != train_micro_batch_size_per_gpu x "
               f"gradient_accumulation_steps x world size = {expected}"
               + (f" (DeepSpeed derives {', '.join(derived)} by integer division)" if derived else "")
               + ": DeepSpeed stops at start-up with 'Check batch related parameters'")
    options = []
    if mb_given and gas_given:
        options.append(f'set "train_batch_size" to {mb_given * gas_given * ws}')
    if tbs_given and mb_given and tbs_given % (mb_given * ws) == 0:
        options.append(f'set "gradient_accumulation_steps" to {tbs_given // (mb_given * ws)}')
    if tbs_given and gas_given and tbs_given % (gas_given * ws) == 0:
        options.append(f'set "train_micro_batch_size_per_gpu" to {tbs_given // (gas_given * ws)}')
    if tbs_given and not options:
        step = (mb_given or 1) * (gas_given or 1) * ws
        low = max(step, tbs_given // step * step)
        options.append(f'make "train_batch_size" a multiple of {step} (e.g. {low} or '
                       f"{low + step}) for world size {ws}")
    if tbs_given and mb_given:
        options.append('or drop "train_batch_size" and let DeepSpeed compute it')
    ctx.add("batch_size_mismatch", "error", "train_batch_size" if tbs_given else
            "train_micro_batch_size_per_gpu", message, "; ".join(options), **facts)


def _batch_without_world(ctx, tbs, mb, gas):
    if tbs is not None and mb is not None:
        per_world = mb * (gas or 1)
        if tbs % per_world:
            ctx.add("batch_size_mismatch", "error", "train_batch_size",
                    f"train_batch_size {tbs} is not a multiple of train_micro_batch_size_per_gpu "
                    f"{mb} x gradient_accumulation_steps {gas or 1} = {per_world}: no world size "
                    "makes the arithmetic hold", f'set "train_batch_size" to a multiple of '
                    f"{per_world} (= {per_world} x the number of GPUs)")
            return
        if gas is not None:
            ctx.add("batch_size_mismatch", "note", "train_batch_size",
                    f"the batch values hold only for world size {tbs // per_world}; pass "
                    "--world-size (or --nodes and --gpus-per-node) to check the real one")
            return
    ctx.add("batch_size_mismatch", "note", "",
            "world size not given: the batch arithmetic was not checked (pass --world-size N, "
            "or --nodes N --gpus-per-node M)")
