"""`dsdiag check-config`: every check against the real DeepSpeed that `make test` installs,
the example configs that ship in examples/configs/, and the built-in schema with deepspeed,
torch and hjson blocked in a subprocess. Nothing here skips: without deepspeed these tests fail.
"""

import inspect
import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROOT, run_dsdiag

from classifier.preflight.config import parse as config_parse
from classifier.preflight.deepspeed import introspect as ds_introspect
from classifier.preflight.deepspeed import schema as ds_schema
from classifier.preflight.config.command import check_config, parse_count
from classifier.preflight.config.checks import World

CONFIGS = ROOT / "examples" / "configs"


@pytest.fixture(scope="module")
def ds():
    schema = ds_introspect.deepspeed_schema()
    _, reason = ds_introspect.import_deepspeed()
    assert schema is not None, f"deepspeed must be installed for the tests (make install-test): {reason}"
    return schema


@pytest.fixture(scope="module")
def builtin():
    return ds_introspect.builtin_schema()


def check(schema, config, world=None, **kw):
    text = config if isinstance(config, str) else json.dumps(config, indent=2)
    findings, _ = check_config(text, World(world) if world else World(), schema=schema, **kw)
    return findings


def problems(findings):
    return [f for f in findings if f.is_problem]


def one(findings, category, key=None, severity=None):
    hits = [f for f in findings if f.category == category and (key is None or f.key == key)
            and (severity is None or f.severity == severity)]
    assert len(hits) == 1, [(f.category, f.key, f.severity, f.message) for f in findings]
    return hits[0]


BASE = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}


# --- the shipped examples ---------------------------------------------------------------------
@pytest.mark.parametrize("name,hf", [("good_zero2_bf16.json", False),
                                     ("good_zero3_offload.json", False),
                                     ("good_hf_auto.json", True)])
@pytest.mark.parametrize("which", ["ds", "builtin"])
def test_good_examples_are_clean(name, hf, which, request):
    findings = check(request.getfixturevalue(which), (CONFIGS / name).read_text(), world=8, hf=hf)
    assert problems(findings) == []


EXPECTED = {  # file: (category, line, col, severity) of each problem, in file order
    "broken_zero_opt_typo.json": [("config_field_error", 6, 3, "warning")],
    "broken_comments_trailing_comma.json": [("config_json_syntax", 2, 3, "warning"),
                                            ("config_json_syntax", 7, 15, "warning")],
    "broken_batch_fp16_bf16.json": [("batch_size_mismatch", 2, 3, "error"),
                                    ("precision_conflict", 6, 12, "error")],
    "broken_scheduler_optimizer.json": [("config_field_error", 7, 16, "error"),
                                        ("config_field_error", 7, 30, "error"),
                                        ("config_field_error", 7, 66, "error"),
                                        ("scheduler_config", 11, 5, "error"),
                                        ("scheduler_config", 11, 59, "error")],
    "broken_zero3_key_typo.json": [("config_field_error", 9, 5, "error")],
    "broken_duplicate_key.json": [("config_json_syntax", 6, 3, "error")],
    "broken_syntax.json": [("config_json_syntax", 3, 3, "error")],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("which", ["ds", "builtin"])
def test_broken_examples_report_each_problem_where_it_is(name, which, request):
    findings = check(request.getfixturevalue(which), (CONFIGS / name).read_text(), world=8)
    got = [(f.category, f.line, f.col, f.severity) for f in problems(findings)]
    assert got == EXPECTED[name]


def test_every_shipped_example_is_covered():
    shipped = {p.name for p in CONFIGS.glob("*.json")}
    assert shipped == set(EXPECTED) | {"good_zero2_bf16.json", "good_zero3_offload.json",
                                       "good_hf_auto.json"}


# --- the command line -------------------------------------------------------------------------
def test_cli_text_lines_are_path_line_col_category_and_exit_1():
    path = CONFIGS / "broken_zero_opt_typo.json"
    proc = run_dsdiag("check-config", "--world-size", "8", path)
    out = proc.stdout.decode()
    assert proc.returncode == 1, proc.stderr.decode()
    problem = [line for line in out.splitlines() if ": config_field_error: " in line]
    assert problem == [f'{path}:6:3: warning: config_field_error: unknown top-level key "zero_opt": '
                       "DeepSpeed 0.19.8 never reads it and ignores the whole value silently, so "
                       "ZeRO stays off (stage 0) and nothing in the log says so"]
    assert '    fix: rename "zero_opt" to "zero_optimization"' in out
    assert out.splitlines()[-1].endswith("checked against DeepSpeed 0.19.8's own config models")


def test_cli_json_clean_config_exits_0_with_version():
    proc = run_dsdiag("check-config", "--format", "json", "--nodes", "2", "--gpus-per-node", "4",
                      CONFIGS / "good_zero2_bf16.json")
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)  # nothing but the JSON on stdout (DeepSpeed logs to stdout!)
    assert doc["problems"] == [] and doc["world_size"] == 8
    assert doc["checked_against"]["source"] == "deepspeed"
    import deepspeed
    assert doc["checked_against"]["deepspeed_version"] == deepspeed.__version__


def test_cli_unreadable_and_usage_exit_2(tmp_path):
    assert run_dsdiag("check-config", tmp_path / "missing.json").returncode == 2
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"a": "\xe9"}')
    proc = run_dsdiag("check-config", bad)
    assert proc.returncode == 2 and b"not UTF-8" in proc.stderr
    assert run_dsdiag("check-config", "--nodes", "2", bad).returncode == 2


def test_parameter_counts():
    assert parse_count("7B") == 7_000_000_000 and parse_count("350m") == 350_000_000
    assert parse_count("1.3b") == 1_300_000_000 and parse_count("7e9") == 7_000_000_000


# --- syntax: who breaks on what ---------------------------------------------------------------
def test_parser_keeps_positions_and_hjson_features():
    text = '{\n  // note\n  "a": {"b": 1,},\n  c: \'x\'\n  "d": [1, 2]\n}'
    parsed = config_parse.parse_config(text)
    assert parsed.error is None
    member = parsed.root.member("a").value.member("b")
    assert (member.line, member.col) == (3, 9)
    assert parsed.root.to_python() == {"a": {"b": 1}, "c": "x", "d": [1, 2]}
    kinds = [f.kind for f in parsed.features]
    assert kinds == ["comment", "trailing_comma", "quoteless_key", "single_quoted", "missing_comma"]


def test_consumer_verdicts_use_the_real_readers():
    text = '{"a": 1, # comment\n "b": 2}'
    parsed = config_parse.parse_config(text)
    strict = config_parse.json_verdict(text)
    assert not strict.ok and (strict.line, strict.col) == (1, 10)
    verdict = config_parse.deepspeed_verdict(text, parsed)
    assert verdict.ok and verdict.checked_by == "hjson"  # hjson comes with deepspeed
    dup = '{"a": 1, "a": 2}'
    assert config_parse.json_verdict(dup).ok
    assert not config_parse.deepspeed_verdict(dup, config_parse.parse_config(dup)).ok


def test_syntax_under_hf_is_an_error_and_quoteless_values_are_explained(ds):
    text = '{\n  "train_micro_batch_size_per_gpu": 4\n  "optimizer": {"type": AdamW,\n  }\n}'
    findings = check(ds, text, hf=True)
    kinds = {f.message.split(" (")[0].split(":")[0] for f in findings
             if f.category == "config_json_syntax"}
    assert all(f.severity == "error" for f in findings if f.category == "config_json_syntax")
    assert "an unquoted string value" in kinds
    quoteless = [f for f in findings if "unquoted string value" in f.message][0]
    assert 'the string "AdamW,"' in quoteless.message


def test_bom_breaks_json_load_only(ds):
    findings = check(ds, "\ufeff" + json.dumps(BASE))
    bom = one(findings, "config_json_syntax")
    assert "byte-order mark" in bom.message and bom.severity == "warning"


# --- keys and types ---------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["ds", "builtin"])
def test_unknown_keys_at_every_level_with_did_you_mean(which, request):
    config = dict(BASE, zero_optimisation={"stage": 2},
                  activation_checkpointing={"partition_activation": True},
                  zero_optimization={"stage": 3, "offload_optimizer": {"device": "cpu",
                                                                         "pin_memroy": True}})
    findings = check(request.getfixturevalue(which), config)
    top = one(findings, "config_field_error", "zero_optimisation")
    assert top.facts["suggestion"] == "zero_optimization" and top.severity == "warning"
    assert "ZeRO stays off" in top.message
    act = one(findings, "config_field_error", "activation_checkpointing.partition_activation")
    assert act.severity == "warning"  # a dict reader: ignored silently
    assert act.facts["suggestion"] == "partition_activations"
    nested = one(findings, "config_field_error", "zero_optimization.offload_optimizer.pin_memroy")
    assert nested.severity == "error"  # a pydantic model with extra="forbid": fatal
    assert nested.facts["suggestion"] == "pin_memory"


@pytest.mark.parametrize("which", ["ds", "builtin"])
def test_types_and_enums(which, request):
    config = dict(BASE, steps_per_print="often", zero_optimization={
        "stage": 5, "reduce_bucket_size": "big", "offload_optimizer": {"device": "gpu"}})
    findings = check(request.getfixturevalue(which), config)
    keys = {f.key for f in problems(findings)}
    assert {"steps_per_print", "zero_optimization.stage", "zero_optimization.reduce_bucket_size",
            "zero_optimization.offload_optimizer.device"} <= keys
    lax = check(request.getfixturevalue(which), dict(BASE, zero_optimization={
        "stage": "2", "overlap_comm": "true", "reduce_bucket_size": 5e8}))
    assert problems(lax) == []  # pydantic's lax mode takes these, so DeepSpeed does too
    stage3 = check(request.getfixturevalue(which), dict(BASE, zero_optimization={"stage": "3"}))
    assert one(stage3, "gpu_oom").severity == "note"  # "3" is stage 3 for DeepSpeed too


def test_model_validators_speak_through(ds):
    findings = check(ds, dict(BASE, fp16={"enabled": True, "loss_scale": -1}))
    error = one(findings, "config_field_error", "fp16.loss_scale")
    assert "DeepSpeedFP16Config" in error.message and ">= 0" in error.message


def test_removed_deprecated_and_comment_keys(ds):
    findings = check(ds, dict(BASE, elasticity={"enabled": True}, _comment="for humans",
                              zero_optimization={"stage": 2, "cpu_offload": True}))
    assert one(findings, "config_field_error", "elasticity").severity == "error"
    assert one(findings, "config_field_error", "_comment").severity == "note"
    note = one(findings, "config_field_error", "zero_optimization.cpu_offload")
    assert note.severity == "note" and "offload_optimizer" in note.fix


def test_auto_values_need_the_hf_integration(ds):
    config = dict(train_micro_batch_size_per_gpu="auto", gradient_accumulation_steps=1,
                  zero_optimization={"stage": 2, "reduce_bucket_size": "auto",
                                     "sub_group_size": "auto"})
    plain = check(ds, config)
    assert one(plain, "config_field_error", "train_micro_batch_size_per_gpu").severity == "error"
    assert one(plain, "config_field_error", "zero_optimization.reduce_bucket_size").severity == \
        "warning"  # DeepSpeedConfigModel drops "auto" and uses the default
    hf = check(ds, config, hf=True)
    assert [f.key for f in problems(hf)] == ["zero_optimization.sub_group_size"]  # HF skips it


# --- batch arithmetic -------------------------------------------------------------------------
def test_batch_mismatch_gives_corrected_values(ds):
    findings = check(ds, {"train_batch_size": 96, "train_micro_batch_size_per_gpu": 4,
                          "gradient_accumulation_steps": 2}, world=8)
    error = one(findings, "batch_size_mismatch", severity="error")
    assert "96 != " in error.message and "4 x 2 x 8" in error.message
    assert 'set "train_batch_size" to 64' in error.fix
    assert 'set "gradient_accumulation_steps" to 3' in error.fix
    assert 'set "train_micro_batch_size_per_gpu" to 6' in error.fix


def test_batch_derived_values_and_divisibility(ds):
    ok = check(ds, {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4}, world=8)
    note = one(ok, "batch_size_mismatch", severity="note")
    assert note.facts == {"world_size": 8, "train_batch_size": 64, "micro_batch": 4,
                          "grad_accum": 2}
    bad = check(ds, {"train_batch_size": 10}, world=4)
    error = one(bad, "batch_size_mismatch", severity="error")
    assert "multiple of 4" in error.fix and "(e.g. 8 or 12)" in error.fix
    assert one(check(ds, {"gradient_accumulation_steps": 2}), "batch_size_mismatch").severity == \
        "error"


def test_batch_without_world_size(ds):
    never = check(ds, {"train_batch_size": 100, "train_micro_batch_size_per_gpu": 4,
                       "gradient_accumulation_steps": 2})
    assert "no world size" in one(never, "batch_size_mismatch").message
    only = check(ds, {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4,
                      "gradient_accumulation_steps": 2})
    note = one(only, "batch_size_mismatch")
    assert note.severity == "note" and "world size 8" in note.message


def test_batch_arithmetic_agrees_with_deepspeed(ds):
    """DeepSpeed's own DeepSpeedConfig with world size 1 accepts exactly what we accept."""
    from classifier.preflight.deepspeed.introspect import deepspeed_rejects
    for tbs, mb, gas in [(8, 4, 2), (8, 4, None), (9, 4, None), (8, None, 2), (7, None, 2),
                         (6, None, None), (None, 3, 2), (0, 1, None)]:
        config = {k: v for k, v in zip(("train_batch_size", "train_micro_batch_size_per_gpu",
                                        "gradient_accumulation_steps"), (tbs, mb, gas))
                  if v is not None}
        ours = [f for f in check(ds, config, world=1) if f.category == "batch_size_mismatch"
                and f.severity == "error"]
        theirs = deepspeed_rejects(config)
        assert bool(ours) == bool(theirs), (config, ours, theirs)


# --- precision --------------------------------------------------------------------------------
def test_precision_conflicts(ds):
    both = check(ds, dict(BASE, fp16={"enabled": True}, bf16={"enabled": "true"}))
    assert "simultaneously" in one(both, "precision_conflict").message
    names = check(ds, dict(BASE, bf16={"enabled": True}, bfloat16={"enabled": False}))
    assert one(names, "precision_conflict", "bfloat16").severity == "warning"
    dtype = check(ds, dict(BASE, bf16={"enabled": True}, data_types={"param_dtype": "fp16"}))
    assert one(dtype, "precision_conflict", "data_types.param_dtype").severity == "error"
    lamb = check(ds, dict(BASE, fp16={"enabled": True, "loss_scale": 128},
                          optimizer={"type": "Lamb", "params": {"lr": 1e-3}}))
    assert "dynamic loss scaling" in one(lamb, "precision_conflict").message


# --- optimizer --------------------------------------------------------------------------------
def test_optimizer_type_and_params(ds):
    sgd = check(ds, dict(BASE, optimizer={"type": "sgd", "params": {"lr": 0.1}}))
    assert one(sgd, "config_field_error", "optimizer.type").facts["suggestion"] == "SGD"
    torch_sgd = check(ds, dict(BASE, optimizer={"type": "SGD", "params": {"lr": 0.1,
                                                                          "momentun": 0.9}}))
    assert one(torch_sgd, "config_field_error", "optimizer.params.momentun").facts[
        "suggestion"] == "momentum"
    flag = check(ds, dict(BASE, optimizer={"type": "AdamW", "params": {"bias_correction": "false"}}))
    assert "reads as true" in one(flag, "config_field_error").message


def test_optimizer_params_follow_the_class_deepspeed_builds(ds):
    """set_grad_none exists on FusedAdam (GPU) but not on DeepSpeedCPUAdam (offload)."""
    params = {"type": "AdamW", "params": {"lr": 1e-4, "set_grad_none": True}}
    gpu = check(ds, dict(BASE, optimizer=params, zero_optimization={"stage": 2}))
    assert problems(gpu) == []
    cpu = check(ds, dict(BASE, optimizer=params, zero_optimization={
        "stage": 2, "offload_optimizer": {"device": "cpu"}}))
    error = one(cpu, "config_field_error", "optimizer.params.set_grad_none")
    assert "DeepSpeedCPUAdam" in error.message


def test_untested_zero_optimizer(ds):
    config = dict(BASE, optimizer={"type": "Lamb", "params": {"lr": 1e-3}},
                  zero_optimization={"stage": 2})
    assert "untested ZeRO Optimizer" in one(check(ds, config), "config_field_error").message
    config["zero_allow_untested_optimizer"] = True
    assert problems(check(ds, config)) == []


# --- scheduler --------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["ds", "builtin"])
def test_scheduler_params_per_type(which, request):
    schema = request.getfixturevalue(which)
    warm = check(schema, dict(BASE, scheduler={"type": "WarmupLR", "params": {"warmup_max_lr": 1e-4}}))
    assert problems(warm) == []
    note = one(warm, "scheduler_config")
    assert note.severity == "note" and "default 1000 steps" in note.message
    decay = check(schema, dict(BASE, scheduler={"type": "WarmupDecayLR",
                                                "params": {"warmup_num_steps": 100}}))
    assert "total_num_steps" in one(decay, "scheduler_config", severity="error").message
    typo = check(schema, dict(BASE, scheduler={"type": "warmuplr"}))
    assert one(typo, "scheduler_config", "scheduler.type").facts["suggestion"] == "WarmupLR"
    strings = check(schema, dict(BASE, scheduler={"type": "WarmupLR", "params": {
        "warmup_num_steps": "1000"}}))
    assert one(strings, "scheduler_config", "scheduler.params.warmup_num_steps").severity == "error"


def test_scheduler_traps(ds):
    peak = check(ds, dict(BASE, optimizer={"type": "AdamW", "params": {"lr": 3e-5}},
                          scheduler={"type": "WarmupDecayLR", "params": {
                              "total_num_steps": 1000, "warmup_num_steps": 50}}))
    assert "ramps to its default 0.001" in one(peak, "scheduler_config", severity="warning").message
    short = check(ds, dict(BASE, scheduler={"type": "WarmupDecayLR", "params": {
        "total_num_steps": 100, "warmup_num_steps": 500, "warmup_max_lr": 1e-4}}))
    assert one(short, "scheduler_config", severity="warning").key == \
        "scheduler.params.warmup_num_steps"
    torch_step = check(ds, dict(BASE, scheduler={"type": "StepLR", "params": {"gamma": 0.5}}))
    assert "step_size" in one(torch_step, "scheduler_config", severity="error").message


# --- ZeRO -------------------------------------------------------------------------------------
def test_zero3_without_offload_and_deepspeeds_estimate(ds):
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    config = dict(BASE, zero_optimization={"stage": 3})
    plain = one(check(ds, config), "gpu_oom")
    assert plain.severity == "note" and "--params" in plain.fix
    estimated = one(check(ds, config, world=8, params=7e9, largest_layer=int(5e8),
                          gpu_memory_gib=16), "gpu_oom")
    _, gpu, _ = estimate_zero3_model_states_mem_needs(7_000_000_000, 500_000_000, 8, 1, False,
                                                      False, True)
    assert estimated.facts["gpu_bytes_per_device"] == gpu
    assert estimated.severity == "error"  # 16.5 GiB of model states > a 16 GiB GPU
    roomy = one(check(ds, config, world=8, params=7e9, gpu_memory_gib=141), "gpu_oom")
    assert roomy.severity == "note"
    offloaded = check(ds, dict(BASE, zero_optimization={
        "stage": 3, "offload_optimizer": {"device": "cpu"}}), params=7e9)
    assert problems(offloaded) == [] and one(offloaded, "gpu_oom").severity == "note"


def test_builtin_memory_formula_matches_deepspeeds(ds, builtin):
    from classifier.preflight.config.zero import zero3_model_states
    for total, largest, gpn, nodes, opt, par in [(7e9, 5e8, 8, 1, False, False),
                                                 (7e9, 5e8, 8, 2, True, False),
                                                 (70e9, 2e9, 8, 4, True, True),
                                                 (1e9, 0, 1, 1, False, False)]:
        args = (int(total), int(largest), gpn, nodes, opt, par)
        assert zero3_model_states(builtin, *args) == zero3_model_states(ds, *args)


def test_offload_settings_that_do_nothing(ds):
    nvme = check(ds, dict(BASE, zero_optimization={"stage": 3, "offload_optimizer": {
        "device": "nvme"}, "offload_param": {"device": "cpu"}}))
    assert "nvme_path" in one(nvme, "config_field_error", severity="error").message
    stage2 = check(ds, dict(BASE, zero_optimization={"stage": 2, "offload_param": {"device": "cpu"}}))
    assert one(stage2, "config_field_error", "zero_optimization.offload_param").severity == "warning"


# --- DeepSpeed's own verdict ------------------------------------------------------------------
def test_deepspeed_itself_catches_what_the_schema_cannot(ds, builtin):
    config = dict(BASE, gradient_allreduce_op="sum", zero_optimization={
        "stage": 3, "offload_optimizer": {"device": "cpu"}})
    error = one(check(ds, config), "config_field_error", severity="error")
    assert "not supported with ZeRO stage 3" in error.message
    assert error.key == "gradient_allreduce_op" and (error.line, error.col) == (4, 3)
    assert problems(check(builtin, config)) == []  # the built-in schema does not know this rule


# --- the built-in schema is DeepSpeed 0.19.8's --------------------------------------------------
def test_builtin_schema_equals_the_installed_deepspeed(ds, builtin):
    assert ds.version == ds_schema.SCHEMA_DEEPSPEED_VERSION, \
        "deepspeed changed: re-check classifier/preflight/deepspeed/schema.py against it, then bump the pin"
    assert sorted(ds.top) == sorted(builtin.top)
    for key in ds.top:
        assert ds.top[key] == builtin.top[key], key
    assert ds.deprecated == builtin.deprecated
    assert sorted(ds.removed) == sorted(builtin.removed)
    assert sorted(ds.removed_zero) == sorted(builtin.removed_zero)


def test_builtin_optimizer_and_scheduler_tables_match_the_real_signatures(ds):
    import torch
    from deepspeed.runtime import config as ds_config
    from deepspeed.runtime import lr_schedules
    assert sorted(ds_config.DEEPSPEED_OPTIMIZERS) == sorted(ds_schema.DEEPSPEED_OPTIMIZERS)
    for (_, _), (path, names, _) in ds_schema.OPTIMIZER_CLASSES.items():
        params, _ = ds_introspect.optimizer_params(path)
        assert sorted(params) == sorted(names.split()), path
    assert list(ds_schema.SCHEDULERS) == lr_schedules.VALID_LR_SCHEDULES
    for name, table in ds_schema.SCHEDULERS.items():
        params, _ = ds_introspect.scheduler_params(name)
        assert params == table, name
    assert set(ds_schema.TORCH_OPTIMIZERS) == {
        n for n in ds_introspect.torch_names("torch.optim") if n != "Optimizer"}
    schedulers = {n for n in ds_introspect.torch_names("torch.optim.lr_scheduler")
                  if inspect.isclass(getattr(torch.optim.lr_scheduler, n)) and issubclass(
                      getattr(torch.optim.lr_scheduler, n), torch.optim.lr_scheduler.LRScheduler)}
    assert set(ds_schema.TORCH_SCHEDULERS) <= schedulers | {"ReduceLROnPlateau"}


# --- without deepspeed --------------------------------------------------------------------------
BLOCKER = textwrap.dedent("""
    import sys
    BLOCKED = ("deepspeed", "torch", "hjson")
    attempts = []
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                attempts.append(name)
                raise ImportError(f"blocked for the test: {name}")
            return None
    sys.meta_path.insert(0, Block())
    from classifier.cli import main
    code = main(sys.argv[1:])
    sys.stderr.write("ATTEMPTS " + ",".join(sorted(set(a.split(".")[0] for a in attempts))) + "\\n")
    sys.exit(code)
""")


def run_blocked(*args):
    return subprocess.run([sys.executable, "-c", BLOCKER, *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)


@pytest.mark.parametrize("name", ["broken_zero_opt_typo.json", "broken_comments_trailing_comma.json",
                                  "broken_scheduler_optimizer.json", "broken_duplicate_key.json",
                                  "good_zero2_bf16.json"])
def test_without_deepspeed_the_builtin_schema_finds_the_same(name):
    proc = run_blocked("check-config", "--format", "json", "--world-size", "8", CONFIGS / name)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["checked_against"]["source"] == "builtin"
    assert "deepspeed is not importable" in doc["checked_against"]["reason"]
    assert "built-in schema" in doc["checked_against"]["text"]
    got = [(p["category"], p["line"], p["col"]) for p in doc["problems"]]
    assert got == [(c, line, col) for c, line, col, _ in EXPECTED.get(name, [])]
    assert "ATTEMPTS deepspeed" in proc.stderr  # it did try, and fell back


def test_schema_builtin_imports_nothing_heavy():
    proc = run_blocked("check-config", "--schema", "builtin", CONFIGS / "good_zero2_bf16.json")
    assert proc.returncode == 0, proc.stderr
    attempts = proc.stderr.rsplit("ATTEMPTS ", 1)[1].split()[0:1]
    assert not {"deepspeed", "torch"} & set(",".join(attempts).split(","))
    assert "dsdiag's built-in schema" in proc.stdout


# --- robustness ---------------------------------------------------------------------------------
_KEYS = ["train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
         "fp16", "bf16", "zero_optimization", "optimizer", "scheduler", "data_types", "stage",
         "offload_optimizer", "device", "params", "type", "enabled", "lr", "warmup_num_steps"]
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10 ** 10) | st.floats(allow_nan=False,
                                                                     allow_infinity=False)
    | st.sampled_from(["auto", "3", "cpu", "nvme", "WarmupLR", "AdamW", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner,
                                                                max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(config=st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=6),
       world=st.sampled_from([None, 1, 8]))
def test_any_config_shape_gives_findings_not_a_crash(config, world):
    findings = check(ds_introspect.builtin_schema(), config, world=world, params=7e9)
    assert all(f.line >= 1 and f.col >= 1 for f in findings)


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet='{}[]",:\'#/\n \t0123456789.eE-abtruefalsnu', max_size=80))
def test_any_text_gives_findings_not_a_crash(text):
    check(ds_introspect.builtin_schema(), text)
