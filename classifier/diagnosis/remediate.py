"""Stage 5: the checklist item and the concrete next steps, filled with values from the log."""

from collections.abc import Collection, Mapping

from classifier.precompiled import re_compile
from classifier.facts import fact_text, typed_facts
from classifier.numbers import finite_float

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.rules.model import CategoryInfo, Rule

_PLACEHOLDER = re_compile(r"\{([a-z_][a-z0-9_]*)\}")

# The environment variable that pre-compiles one DeepSpeed op at `pip install` time, by the op's
# name as logs print it (`Error building extension 'cpu_adam'`, torch_extensions/<name>/): each
# builder's NAME and BUILD_VAR in deepspeed/ops/op_builder (0.19; tests check the installed one).
OP_BUILD_VARS = {
    "async_io": "DS_BUILD_AIO",
    "cpu_adagrad": "DS_BUILD_CPU_ADAGRAD",
    "cpu_adam": "DS_BUILD_CPU_ADAM",
    "cpu_lion": "DS_BUILD_CPU_LION",
    "cutlass_ops": "DS_BUILD_CUTLASS_OPS",
    "dc": "DS_BUILD_DEEP_COMPILE",
    "deepspeed_ccl_comm": "DS_BUILD_CCL_COMM",
    "deepspeed_shm_comm": "DS_BUILD_SHM_COMM",
    "evoformer_attn": "DS_BUILD_EVOFORMER_ATTN",
    "fp_quantizer": "DS_BUILD_FP_QUANTIZER",
    "fused_adam": "DS_BUILD_FUSED_ADAM",
    "fused_lamb": "DS_BUILD_FUSED_LAMB",
    "fused_lion": "DS_BUILD_FUSED_LION",
    "gds": "DS_BUILD_GDS",
    "inference_core_ops": "DS_BUILD_INFERENCE_CORE_OPS",
    "pin_memory": "DS_BUILD_PIN_MEMORY",
    "quantizer": "DS_BUILD_QUANTIZER",
    "ragged_device_ops": "DS_BUILD_RAGGED_DEVICE_OPS",
    "ragged_ops": "DS_BUILD_RAGGED_OPS",
    "random_ltd": "DS_BUILD_RANDOM_LTD",
    "spatial_inference": "DS_BUILD_SPATIAL_INFERENCE",
    "stochastic_transformer": "DS_BUILD_STOCHASTIC_TRANSFORMER",
    "transformer": "DS_BUILD_TRANSFORMER",
    "transformer_inference": "DS_BUILD_TRANSFORMER_INFERENCE",
    "utils": "DS_BUILD_UTILS",
}
_OP_IN_PATH = re_compile(r"torch_extensions/[^/]+/(\w+)/|/deepspeed/ops/\S*?(\w+?)_op\.cpython")
# Extensions built against torch whose own install instructions say `--no-build-isolation`
# (pip would otherwise build them against a throwaway torch): the .so name -> the pip name.
TORCH_EXTENSIONS = {"flash_attn": "flash-attn"}
# A mangled name from libstdc++'s C++11 ABI: `std::__cxx11::basic_string` or an `[abi:cxx11]` tag.
CXX11_ABI = re_compile(r"__cxx11|B5cxx11")


def _as_int(value):
    number = finite_float(str(value).replace(",", ""))
    return None if number is None else int(number)


def derive_facts(category: str, facts: Mapping[str, object],
                 ranks_seen: Collection[int], bf16_run: bool = False) -> dict[str, object]:
    """Add values computed from the captured ones (corrected batch sizes, world size, op), and
    type them all for the JSON contract (classifier/facts.py)."""
    out = dict(facts)
    if bf16_run and category == "fp16_overflow":
        out["precision"] = "bf16"  # the run's own config says so: no fp16 advice (rules/fp16_overflow.yaml)
    library_path = str(out.get("library", ""))
    library = library_path.rsplit("/", 1)[-1]
    # The op also shows in a JIT build's path (torch_extensions/py310_cu121/fused_adam/) and in
    # a pre-compiled op's file name (cpu_adam_op.cpython-310-x86_64-linux-gnu.so).
    op = str(out.get("op") or "")
    m = _OP_IN_PATH.search(library_path)
    op = op or (m.group(1) or m.group(2) if m else "")
    if op in OP_BUILD_VARS:
        out["op_build_var"] = OP_BUILD_VARS[op]
    for prefix, package in TORCH_EXTENSIONS.items():
        if library.startswith(prefix):
            out["extension"] = package
    if CXX11_ABI.search(str(out.get("symbol", ""))):
        out["abi"] = "C++11 (_GLIBCXX_USE_CXX11_ABI=1)"
    if "world_size" not in out and len(ranks_seen) > 1:
        out["world_size"] = max(ranks_seen) + 1
    if category == "batch_size_mismatch":
        tbs = _as_int(out.get("train_batch_size"))
        micro = _as_int(out.get("micro_batch"))
        gas = _as_int(out.get("grad_acc"))
        world = _as_int(out.get("world_size"))
        if micro and gas and world:
            out["expected_train_batch_size"] = micro * gas * world
        if tbs and micro and world and tbs % (micro * world) == 0:
            out["suggested_grad_acc"] = tbs // (micro * world)
    return typed_facts(out)


def fill(template: str, facts: Mapping[str, object]) -> str | None:
    """Fill `{name}` placeholders; None when a named value is missing from the facts."""
    missing = False

    def sub(m):
        nonlocal missing
        value = facts.get(m.group(1))
        if value is None:
            missing = True
            return m.group(0)
        # A template puts values in `code`; a backtick from the log would end that span early.
        return fact_text(value).replace("`", "'")

    text = _PLACEHOLDER.sub(sub, template)
    return None if missing else text


def _what_the_log_shows(facts: Mapping[str, object]) -> str | None:
    """Say what a diagnosis rests on when the log did not show the whole message."""
    if "message_cut" not in facts:
        return None
    if "raised_in" in facts:
        return (f"The log stops before the exception's message, so this rests on its frames: it "
                f"was raised in {facts['raised_in']}. Get the full log of that rank (or rerun "
                f"with the output unbuffered) to read the message itself.")
    return ("The log ends in the middle of this message; what it shows is enough to name the "
            "failure, but read the full log of that rank for the rest (values, the rank it names).")


def _applies(step, facts: Mapping[str, object]) -> str | None:
    """A step's text when its `when` facts hold and its `unless` facts do not, else None."""
    if isinstance(step, str):
        return step
    when, unless = step.get("when") or {}, step.get("unless") or {}
    if any(str(facts.get(k)) != v for k, v in when.items()):
        return None
    if any(str(facts.get(k)) == v for k, v in unless.items()):
        return None
    return step["text"]


def remediation_for(category_info: "CategoryInfo | None", rule: "Rule | None",
                    facts: Mapping[str, object]) -> list[str]:
    """Checklist item first, then the rule's own steps, then the category's, all filled."""
    steps = []
    if category_info is not None and category_info.checklist:
        steps.append("Checklist: " + category_info.checklist.strip())
    read_from = _what_the_log_shows(facts)
    if read_from:
        steps.append(read_from)
    templates = list(rule.remediation if rule is not None else ())
    if category_info is not None:
        templates += list(category_info.remediation)
    for step in templates:
        template = _applies(step, facts)
        if template is None:
            continue
        text = fill(template.strip(), facts)
        if text and text not in steps:
            steps.append(text)
    return steps
