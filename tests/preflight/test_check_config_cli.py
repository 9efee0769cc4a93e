"""`dsdiag check-config` as a new user meets it: good configs stay quiet (ZeRO-3 without offload,
HF configs full of "auto"), HF argument names lead to their DeepSpeed keys, an empty file says
so, and the output (text with severities, several files and stdin, GitHub annotations) is
stable. Checked against the real DeepSpeed that `make test` installs."""

import json
import re

import pytest

from conftest import ROOT, run_dsdiag

from classifier.preflight.config import hf
from classifier.preflight.config.checks import World
from classifier.preflight.config.command import check_config
from classifier.preflight.config.report import escape_data, escape_property
from classifier.preflight.deepspeed import introspect as ds_introspect

CONFIGS = ROOT / "examples" / "configs"
BASE = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}
GIB = 1024 ** 3


@pytest.fixture(scope="module")
def ds():
    schema = ds_introspect.deepspeed_schema()
    assert schema is not None, "deepspeed must be installed for the tests (make install-test)"
    return schema


def check(schema, config, world=None, **kw):
    text = config if isinstance(config, str) else json.dumps(config, indent=2)
    return check_config(text, World(world) if world else World(), schema=schema, **kw)[0]


def problems(findings):
    return [f for f in findings if f.is_problem]


# --- ZeRO-3 without offload -------------------------------------------------------------------
def test_zero3_without_offload_is_no_problem_until_the_estimate_says_it_does_not_fit(ds):
    config = dict(BASE, zero_optimization={"stage": 3})
    assert problems(check(ds, config, world=64)) == []  # a big cluster's usual config
    fits = [f for f in check(ds, config, world=64, params=70e9, gpu_memory_gib=80)
            if f.category == "gpu_oom"]
    assert [f.severity for f in fits] == ["note"] and "left for activations" in fits[0].message
    over = [f for f in check(ds, config, world=8, params=70e9, gpu_memory_gib=80)
            if f.category == "gpu_oom"]
    assert [f.severity for f in over] == ["error"]
    per_gpu = over[0].facts["gpu_bytes_per_device"]
    short = per_gpu / GIB - 80
    assert over[0].facts["shortfall_gib"] == round(short, 2)
    assert f"{short:.1f} GiB more than the 80 GiB each GPU has" in over[0].message
    assert "offload" in over[0].fix


# --- HF configs and HF names ------------------------------------------------------------------
def test_an_hf_config_checked_without_hf_is_one_finding(ds):
    text = (CONFIGS / "good_hf_auto.json").read_text()
    found = problems(check(ds, text, world=8))
    assert len(found) == 1, [f.message for f in found]
    assert "--hf" in found[0].fix and found[0].severity == "warning"
    assert len(found[0].facts["auto_keys"]) >= 10 and (found[0].line, found[0].col) == (2, 3)
    # one stray "auto" in a DeepSpeed config is still an error of its own, not an HF config
    stray = problems(check(ds, dict(BASE, gradient_clipping="auto")))
    assert [(f.key, f.severity) for f in stray] == [("gradient_clipping", "error")]


@pytest.mark.parametrize("name,value,target", [
    ("per_device_train_batch_size", 4, "train_micro_batch_size_per_gpu"),
    ("learning_rate", 3e-5, "optimizer.params.lr"),
    ("max_grad_norm", 1.0, "gradient_clipping"),
    ("warmup_steps", 100, "scheduler.params.warmup_num_steps"),
    ("weight_decay", 0.01, "optimizer.params.weight_decay"),
    ("adam_epsilon", 1e-8, "optimizer.params.eps"),
])
def test_hf_argument_names_lead_to_their_deepspeed_keys(ds, name, value, target):
    found = [f for f in check(ds, dict(BASE, **{name: value})) if f.key == name]
    assert len(found) == 1 and found[0].facts["suggestion"] == target
    assert f'DeepSpeed calls it "{target}"' in found[0].message
    assert hf.as_deepspeed(name, value) in found[0].fix
    # the key it names is one the installed DeepSpeed reads: a top-level key, or a parameter
    # of the optimizer / scheduler classes it builds
    head, *rest = target.split(".")
    if not rest:
        assert head in ds.top
    elif head == "optimizer":
        assert rest[-1] in ds_introspect.optimizer_params("deepspeed.ops.adam:FusedAdam")[0]
    else:
        assert rest[-1] in ds_introspect.scheduler_params("WarmupDecayLR")[0]


def test_gradient_accumulation_steps_is_the_same_name_in_both(ds):
    assert problems(check(ds, BASE)) == []


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
def test_an_hf_style_boolean_precision_is_refused_as_deepspeed_refuses_it(ds, mode):
    found = [f for f in check(ds, dict(BASE, **{mode: True})) if f.key == mode]
    assert [f.severity for f in found] == ["error"]
    assert f'"{mode}": {{"enabled": true}}' in found[0].fix
    assert "mapping" in ds_introspect.deepspeed_rejects(dict(BASE, **{mode: True}))
    assert ds_introspect.deepspeed_rejects(dict(BASE, **{mode: {"enabled": True}})) is None


# --- the command line -------------------------------------------------------------------------
LINE = re.compile(r"^(?P<path>.+):(?P<line>\d+):(?P<col>\d+): (?P<severity>error|warning|note): "
                  r"(?P<category>[a-z_]+): \S")


def test_every_finding_line_carries_its_severity():
    names = sorted(p for p in CONFIGS.glob("*.json"))
    proc = run_dsdiag("check-config", "--world-size", "8", *names)
    lines = proc.stdout.decode().splitlines()
    findings = [line for line in lines if not line.startswith("    ")][:-1]
    assert findings and all(LINE.match(line) for line in findings), findings
    assert {LINE.match(line)["severity"] for line in findings} == {"error", "warning", "note"}
    assert lines[-1].startswith(f"{len(names)} files: ")
    assert proc.returncode == 1


def test_empty_file_says_it_cannot_be_read_as_a_config(tmp_path):
    for text in ("", "  \n\n"):
        empty = tmp_path / "ds_config.json"
        empty.write_text(text)
        proc = run_dsdiag("check-config", empty)
        first = proc.stdout.decode().splitlines()[0]
        assert first.startswith(f"{empty}:1:1: error: config_json_syntax: the file is empty")
        assert "cannot be read as a config" in first and proc.returncode == 1


def test_several_files_stdin_and_a_missing_one(tmp_path):
    good = CONFIGS / "good_zero2_bf16.json"
    typo = (CONFIGS / "broken_zero_opt_typo.json").read_bytes()
    proc = run_dsdiag("check-config", "--schema", "builtin", good, "-", tmp_path / "gone.json",
                      stdin=typo)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 2  # a file could not be read; the others were still checked
    assert "<stdin>:6:3: warning: config_field_error: unknown top-level key \"zero_opt\"" in out
    assert "gone.json" in err and err.count("\n") == 1 and "Traceback" not in err
    assert out.splitlines()[-1].startswith("2 files: 1 problem (0 errors, 1 warning)")
    docs = run_dsdiag("check-config", "--schema", "builtin", "--format", "json", good, "-",
                      stdin=typo).stdout.decode().splitlines()
    assert [json.loads(d)["file"] for d in docs] == [str(good), "<stdin>"]


def test_fail_on_error_lets_warnings_pass():
    typo = CONFIGS / "broken_zero_opt_typo.json"  # one warning, no error
    assert run_dsdiag("check-config", "--schema", "builtin", typo).returncode == 1
    assert run_dsdiag("check-config", "--schema", "builtin", "--fail-on", "error",
                      typo).returncode == 0
    broken = CONFIGS / "broken_syntax.json"
    assert run_dsdiag("check-config", "--schema", "builtin", "--fail-on", "error",
                      broken).returncode == 1


def test_github_annotations_escape_per_the_workflow_command_rules(tmp_path):
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    odd = tmp_path / "run:1,a.json"
    odd.write_text('{"train_micro_batch_size_per_gpu": 4,\n "zero_opt": {"stage": 2}}')
    proc = run_dsdiag("check-config", "--schema", "builtin", "--format", "github", odd)
    lines = proc.stdout.decode().splitlines()
    assert not any(line.startswith("::notice") for line in lines)  # notes are not annotated
    annotation = lines[0]
    escaped = str(odd).replace(":", "%3A").replace(",", "%2C")
    assert annotation.startswith(f"::warning file={escaped},line=2,col=2,"
                                 "title=dsdiag config_field_error::unknown top-level key")
    assert "%0Afix: rename" in annotation and "\n" not in annotation
    assert proc.returncode == 1


def test_output_does_not_depend_on_hash_order():
    names = sorted(CONFIGS.glob("*.json"))
    outs = {run_dsdiag("check-config", "--world-size", "8", "--params", "7B", *names,
                       env={"PYTHONHASHSEED": seed}, timeout=120).stdout for seed in ("1", "2")}
    assert len(outs) == 1


def test_hf_names_inside_optimizer_and_scheduler_params(ds):
    config = dict(BASE, optimizer={"type": "AdamW", "params": {"learning_rate": 1e-4,
                                                               "adam_epsilon": 1e-8}},
                  scheduler={"type": "WarmupDecayLR", "params": {"total_num_steps": 1000,
                                                                 "max_steps": 1000}})
    found = {f.key: f.facts.get("suggestion") for f in problems(check(ds, config))}
    assert found["optimizer.params.learning_rate"] == "lr"
    assert found["optimizer.params.adam_epsilon"] == "eps"
    assert found["scheduler.params.max_steps"] == "total_num_steps"


def _strict_json(text):
    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("body,needle", [
    ('{"a":' * 400 + "1" + "}" * 400, "nested more than 64 levels"),
    ('{"train_batch_size": ' + "9" * 5000 + "}", "5000 digits"),
    ('{"train_batch_size": 8, "gradient_clipping": NaN}', "config_json_syntax"),
], ids=["deep", "huge-integer", "nan"])
def test_hostile_configs_get_one_located_finding_and_strict_json(tmp_path, body, needle):
    path = tmp_path / "ds_config.json"
    path.write_text(body)
    proc = run_dsdiag("check-config", str(path))
    out = proc.stdout.decode()
    assert proc.returncode == 1 and "Traceback" not in proc.stderr.decode()
    assert needle in out and out.startswith(f"{path}:")
    proc = run_dsdiag("check-config", "--format", "json", str(path))
    assert proc.returncode == 1 and _strict_json(proc.stdout.decode())["problems"]


def test_a_file_too_big_to_be_a_config_is_refused_in_one_line(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_bytes(b" " * (9 << 20))
    proc = run_dsdiag("check-config", str(path))
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and "larger than 8 MiB" in err
