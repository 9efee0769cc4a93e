"""Ask the installed DeepSpeed what it accepts: its pydantic config models, the keys its dict
readers look up, its optimizer and scheduler signatures, its ZeRO-3 memory estimator.

Everything here imports deepspeed (and so torch) lazily, inside the functions; the log
diagnosis never reaches this module. DeepSpeed logs to *stdout* (deepspeed/utils/logging.py
attaches a StreamHandler(sys.stdout)), so every call is wrapped to keep `--format json` clean.
"""

import contextlib
import importlib
import inspect
import io
import logging
import sys
import typing
from collections.abc import Callable, Iterable, Iterator

from classifier.preflight.deepspeed import schema as ds_schema

if typing.TYPE_CHECKING:
    from types import ModuleType

    from pydantic import BaseModel

# Top-level sections whose contents DeepSpeed validates with a pydantic model.
MODEL_SECTIONS = {
    "zero_optimization": "deepspeed.runtime.zero.config:DeepSpeedZeroConfig",
    "fp16": "deepspeed.runtime.precision_config:DeepSpeedFP16Config",
    "bf16": "deepspeed.runtime.precision_config:DeepSpeedBF16Config",
    "bfloat16": "deepspeed.runtime.precision_config:DeepSpeedBF16Config",
    "tensorboard": "deepspeed.monitor.config:TensorBoardConfig",
    "wandb": "deepspeed.monitor.config:WandbConfig",
    "csv_monitor": "deepspeed.monitor.config:CSVConfig",
    "comet": "deepspeed.monitor.config:CometConfig",
    "comms_logger": "deepspeed.comm.config:CommsLoggerConfig",
    "hybrid_engine": "deepspeed.runtime.config:HybridEngineConfig",
    "compile": "deepspeed.compile.config:CompileConfig",
}
# Sections DeepSpeed reads key by key from a plain dict: the keys come from a recorded run.
PROBED_SECTIONS = ("activation_checkpointing", "flops_profiler", "aio", "checkpoint",
                   "data_types", "autotuning", "data_efficiency", "timers", "torch_autocast",
                   "optimizer", "scheduler")

_STATE = {}


def import_deepspeed() -> tuple["ModuleType | None", str | None]:
    """Return (deepspeed module, None) or (None, reason). Imports quietly, once."""
    if "module" in _STATE:
        return _STATE["module"], _STATE["reason"]
    module, reason = None, None
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            import deepspeed as module
    except ImportError as exc:
        reason = f"deepspeed is not importable ({exc})"
    except Exception as exc:  # a broken install raises anything at import time
        reason = f"importing deepspeed failed: {type(exc).__name__}: {exc}"
    # Its logger captured our buffer as "stdout": point it at stderr for later messages.
    for handler in logging.getLogger("DeepSpeed").handlers:
        if getattr(handler, "stream", None) is buffer:
            handler.setStream(sys.stderr)
    _STATE.update(module=module, reason=reason)
    return module, reason


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence DeepSpeed's logger and prints for the duration of one call."""
    logger = logging.getLogger("DeepSpeed")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


def _load(path):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


# --- schema from the installed release --------------------------------------------------------
class Schema:
    """What a config may contain: top-level specs (a dict spec is a section), plus extras."""

    def __init__(self, source: str, version: str, top: dict[str, str | dict[str, typing.Any]],
                 models: "dict[str, type[BaseModel]] | None" = None,
                 deprecated: dict[str, str] | None = None, removed: dict[str, str] | None = None,
                 removed_zero: dict[str, str] | None = None,
                 fallback_sections: Iterable[str] = ()) -> None:
        self.source = source
        self.version = version
        self.top = top
        self.models = models or {}
        self.deprecated = deprecated or {}
        self.removed = removed or {}
        self.removed_zero = removed_zero or {}
        self.fallback_sections = tuple(fallback_sections)


def builtin_schema() -> Schema:
    """dsdiag's own schema (classifier.preflight.deepspeed.schema), for when deepspeed is absent."""
    top = dict(ds_schema.TOP_LEVEL)
    top.update(ds_schema.SECTIONS)
    top.update({name: "object" for name in ds_schema.OPEN_SECTIONS})
    return Schema("builtin", ds_schema.SCHEMA_DEEPSPEED_VERSION, top,
                  deprecated=dict(ds_schema.DEPRECATED), removed=dict(ds_schema.REMOVED),
                  removed_zero=dict(ds_schema.REMOVED_ZERO))


def _annotation_spec(annotation, path, deprecated):
    from pydantic import BaseModel
    import enum
    nullable = ""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        rest = [a for a in args if a is not type(None)]
        nullable = "?" if len(rest) < len(args) else ""
        if len(rest) != 1:
            return "any"
        annotation = rest[0]
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return model_spec(annotation, path, deprecated)
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return "enum:" + "|".join(str(m.value) for m in annotation) + nullable
    if origin is typing.Literal:
        return "enum:" + "|".join(str(a) for a in args) + nullable
    if annotation is bool:
        return "bool" + nullable
    if annotation is int:
        return "int" + nullable
    if annotation is float:
        return "number" + nullable
    if annotation is str or getattr(annotation, "__name__", "") in ("Path", "PosixPath"):
        return "str" + nullable
    if annotation in (list, tuple) or origin in (list, tuple):
        return "list" + nullable
    if annotation is dict or origin is dict:
        return "object" + nullable
    return "any"


def model_spec(cls: "type[BaseModel]", path: str, deprecated: dict[str, str]
               ) -> dict[str, str | dict[str, typing.Any]]:
    """A section spec (field name and alias -> spec) from a pydantic model class."""
    spec = {}
    for name, info in cls.model_fields.items():
        sub = _annotation_spec(info.annotation, f"{path}.{name}", deprecated)
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        for key in {name, info.alias} - {None}:
            spec[key] = sub
            if extra.get("deprecated"):
                new = extra.get("new_param") or "nothing (remove it)"
                alias = cls.model_fields[new].alias if new in cls.model_fields else None
                deprecated[f"{path}.{key}"] = f"{new} ({alias})" if alias else new
    return spec


class _Recorder(dict):
    """A dict that records every key looked up in it (and in the dicts nested in it)."""

    def __init__(self, data, seen, path=""):
        super().__init__({k: _Recorder(v, seen, f"{path}.{k}".strip(".")) if isinstance(v, dict)
                          else v for k, v in data.items()})
        self._seen, self._path = seen, path

    def _see(self, key):
        self._seen.setdefault(self._path, set()).add(key)

    def get(self, key, default=None):
        self._see(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self._see(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self._see(key)
        return super().__contains__(key)

    def keys(self):
        outer = self

        class _Keys:
            def __contains__(self, key):
                outer._see(key)
                return dict.__contains__(outer, key)

            def __iter__(self):
                return iter(dict.keys(outer))

            def __len__(self):
                return dict.__len__(outer)
        return _Keys()


def probe_keys(sections: Iterable[str] = ()) -> dict[str, set[str]]:
    """Keys DeepSpeedConfig looks up: {"": top-level keys, section: keys read inside it}."""
    from deepspeed.runtime.config import DeepSpeedConfig
    seen = {}
    for section in (None,) + tuple(sections):
        config = {"train_batch_size": 1}
        if section:
            config[section] = {}
        with quiet():
            try:
                DeepSpeedConfig(_Recorder(config, seen))
            except Exception:
                pass  # keys read before the failure are still recorded
    return seen


def deepspeed_schema() -> Schema | None:
    """The schema of the installed DeepSpeed, or None when it is not importable."""
    module, _ = import_deepspeed()
    if module is None:
        return None
    from deepspeed.runtime import config as ds_config
    removed = dict(getattr(ds_config, "_REMOVED_TOP_LEVEL_CONFIG_KEYS", {}))
    removed_zero = dict(getattr(ds_config, "_REMOVED_ZERO_CONFIG_KEYS", {}))
    seen = probe_keys(PROBED_SECTIONS)
    top = {key: ds_schema.TOP_LEVEL.get(key, "any") for key in seen.get("", ())}
    top.update(ds_schema.TOP_LEVEL)
    for key in removed:
        top.pop(key, None)
    models, deprecated, fallback = {}, {}, []
    for section in set(ds_schema.SECTIONS) | set(MODEL_SECTIONS) | set(PROBED_SECTIONS):
        if section in MODEL_SECTIONS:
            try:
                cls = _load(MODEL_SECTIONS[section])
            except (ImportError, AttributeError):
                cls = None
            if cls is not None:
                models[section] = cls
                top[section] = model_spec(cls, section, deprecated)
                continue
            fallback.append(section)
        spec = dict(ds_schema.SECTIONS.get(section, {}))
        for key in seen.get(section, ()):
            spec.setdefault(key, "any")
        if section in seen.get("", ()) or spec:
            top[section] = spec or "object"
    for name in ds_schema.OPEN_SECTIONS:
        top[name] = "object"
    version = getattr(module, "__version__", "unknown")
    return Schema("deepspeed", version, top, models, deprecated, removed, removed_zero, fallback)


# --- checks that run DeepSpeed's own code ----------------------------------------------------
def validate_with_model(section: str, data: dict[str, typing.Any], schema: Schema
                        ) -> list[tuple[tuple[str, ...], str]]:
    """Run the section's pydantic model on `data` as DeepSpeed does; return its complaints as
    (location tuple, message) pairs, unknown keys left out (the key walk reports those)."""
    from pydantic import ValidationError
    cls = schema.models[section]
    with quiet():
        try:
            cls(**data)
        except ValidationError as exc:
            return [(tuple(str(p) for p in err["loc"]), err["msg"]) for err in exc.errors()
                    if err["type"] != "extra_forbidden"]
        except (AssertionError, ValueError, TypeError) as exc:
            return [((), str(exc))]
    return []


def deepspeed_rejects(data: dict[str, typing.Any]) -> str | None:
    """Build DeepSpeedConfig from a dict as deepspeed.initialize would; return its error or None.

    dist is not initialised here, so DeepSpeed takes world size 1: the caller passes batch
    values already resolved for one process (its own arithmetic covers the real world size).
    """
    from deepspeed.runtime.config import DeepSpeedConfig
    with quiet():
        try:
            DeepSpeedConfig(data)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
    return None


def callable_params(target: Callable[..., object]) -> tuple[dict[str, object], bool]:
    """(keyword parameter -> default or ds_schema.REQUIRED, accepts **kwargs) of a class/callable."""
    params, var_kw = {}, False
    for name, p in list(inspect.signature(target).parameters.items()):
        if name in ("self", "optimizer", "params", "model_params") or p.kind == p.VAR_POSITIONAL:
            continue
        if p.kind == p.VAR_KEYWORD:
            var_kw = True
            continue
        params[name] = ds_schema.REQUIRED if p.default is inspect.Parameter.empty else p.default
    return params, var_kw


def optimizer_params(class_path: str) -> tuple[dict[str, object], bool] | None:
    """The keyword parameters of the optimizer class DeepSpeed would build, or None."""
    try:
        with quiet():
            cls = _load(class_path)
    except (ImportError, AttributeError):
        return None
    return callable_params(cls)


def scheduler_params(name: str) -> tuple[dict[str, object], bool] | None:
    """Parameters of a scheduler type as DeepSpeed resolves it (its own lr_schedules first,
    then torch.optim.lr_scheduler), or None when neither has it."""
    from deepspeed.runtime import lr_schedules
    import torch
    target = getattr(lr_schedules, name, None) or getattr(torch.optim.lr_scheduler, name, None)
    if target is None or not inspect.isclass(target):
        return None
    return callable_params(target)


def torch_names(module_name: str) -> list[str]:
    """Class names of torch.optim or torch.optim.lr_scheduler, for did-you-mean."""
    module = importlib.import_module(module_name)
    return sorted(n for n in dir(module) if n[:1].isupper() and inspect.isclass(getattr(module, n)))


def estimate_zero3(total_params: int, largest_layer_params: int, gpus_per_node: int, nodes: int,
                   offload_optimizer: bool, offload_param: bool) -> tuple[float, int]:
    """DeepSpeed's own ZeRO-3 model-state estimate: (cpu bytes, gpu bytes per device)."""
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    with quiet():
        cpu, gpu, _ = estimate_zero3_model_states_mem_needs(
            total_params, largest_layer_params, num_gpus_per_node=gpus_per_node,
            num_nodes=nodes, cpu_offload=offload_optimizer, cpu_offload_params=offload_param,
            zero_init=True)
    return cpu, gpu
