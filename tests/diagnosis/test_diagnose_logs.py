"""Realistic logs in every launcher's prefix form: the category, the line and the rank."""

import pytest

from conftest import LOGS, diagnose_json

from classifier.integrations.slurm import comment_text

CASES = [
    # file, category, first evidence line, its rank
    ("srun_label_batch.log", "batch_size_mismatch", 14, 0),
    ("pdsh_port.log", "port_conflict", 14, None),
    ("mpirun_envvar.log", "env_var_missing", 10, 0),
    ("rich_box_config.log", "config_field_error", 11, None),
    ("k8s_disk.log", "disk_full", 7, None),
    ("torchrun_tee_ordinal.log", "device_visibility", 13, 1),
]


@pytest.mark.parametrize("name,category,line,rank", CASES, ids=[c[0] for c in CASES])
def test_realistic_log(name, category, line, rank):
    code, d = diagnose_json(LOGS / name)
    assert (code, d["category"]) == (0, category)
    ev = d["evidence"][0]
    assert (ev["line"], ev["rank"]) == (line, rank)
    text = (LOGS / name).read_text().splitlines()[line - 1]
    assert ev["text"] == text


def test_hard_wrapped_batch_message_yields_the_numbers_and_the_fix():
    _, d = diagnose_json(LOGS / "srun_label_batch.log")
    facts = d["facts"]
    assert (facts["train_batch_size"], facts["micro_batch"], facts["grad_acc"], facts["world_size"]) == \
        (32, 4, 2, 2)
    assert facts["expected_train_batch_size"] == 16 and facts["suggested_grad_acc"] == 4
    assert any("16" in step for step in d["remediation"]), d["remediation"]


def test_port_conflict_names_the_port():
    _, d = diagnose_json(LOGS / "pdsh_port.log")
    assert d["facts"]["port"] == 29500
    assert any("29500" in step for step in d["remediation"])


def test_srun_label_around_torchrun_rank_names_the_inner_rank_and_keeps_the_task():
    # Two nodes, one `srun -l` task each running torchrun with 8 workers: `1: [rank13]: ...`.
    code, d = diagnose_json(LOGS / "srun_torchrun_rank13.log")
    assert (code, d["category"]) == (0, "gpu_oom")
    ev = d["evidence"][0]
    assert (ev["rank"], ev["task"]) == (13, 1)
    assert d["facts"]["ranks"] == [13] and d["facts"]["ranks_summary"] == "1 of 16 ranks"
    assert "srun_torchrun_rank13.log:42 rank 13)" in comment_text(d)  # the Slurm Comment
    # the watchdog echoes on the other fifteen ranks, each under its own task
    echoes = [e for s in d["secondary"] if s["category"] == "nccl_timeout" for e in s["evidence"]]
    assert echoes and all(e["rank"] != 13 and e["task"] == e["rank"] // 8 for e in echoes)


def test_srun_label_alone_is_the_rank_and_no_task():
    _, d = diagnose_json(LOGS / "srun_label_batch.log")
    assert d["evidence"][0]["rank"] == 0 and "task" not in d["evidence"][0]
