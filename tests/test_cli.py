"""The CLI contract: exit codes, JSON fields, stdin, several files, compressed input, bad input."""

import bz2
import gzip
import json
import lzma
import os
import shutil

from conftest import DEMO, LOGS, diagnose_json, run_dsdiag

# A user rule file: only `category` and `rules`; the checklist and remediation stay built-in.
USER_RULE = """\
category: gpu_hardware
rules:
  - id: gpu_hardware.site_bmc_alarm
    title: The node's BMC reported a GPU power alarm
    keywords: ["bmc alarm"]
    patterns: ['BMC ALARM gpu(?P<gpu>\\d+) power']
    examples:
      match: ["BMC ALARM gpu3 power", "node7: BMC ALARM gpu0 power fault", "x BMC ALARM gpu1 power"]
      no_match: ["BMC ok gpu3 power", "BMC ALARM fan"]
"""

CONTRACT = {"schema_version", "tool", "category", "layer", "title", "confidence", "source", "rule",
            "evidence", "facts", "remediation", "secondary", "warnings", "retryable", "retry_reason", "culprit"}


def test_json_contract_fields_and_types():
    code, d = diagnose_json(DEMO)
    assert code == 0
    assert set(d) == CONTRACT
    assert d["schema_version"] == 2
    assert d["tool"]["name"] == "dsdiag" and d["tool"]["rules"].startswith("sha256:")
    assert d["category"] == "gpu_oom" and d["layer"] == "config" and d["source"] == "rule"
    assert 0 < d["confidence"] <= 1 and d["rule"].startswith("gpu_oom.")
    for ev in d["evidence"]:
        assert set(ev) == {"file", "line", "rank", "text"}
        assert isinstance(ev["line"], int) and ev["line"] >= 1
    assert all(isinstance(s, str) for s in d["remediation"]) and d["remediation"]
    for s in d["secondary"]:
        assert {"category", "layer", "title", "rule", "evidence", "facts"} <= set(s)


def test_evidence_points_at_the_real_line_and_rank():
    _, d = diagnose_json(DEMO)
    lines = DEMO.read_text().splitlines()
    first = d["evidence"][0]
    assert first["file"] == str(DEMO) and first["rank"] == 3
    assert lines[first["line"] - 1] == first["text"]
    assert "CUDA out of memory" in first["text"]


def test_stdin_and_dash_read_the_same_log():
    data = DEMO.read_bytes()
    _, piped = diagnose_json(stdin=data)
    _, dashed = diagnose_json("-", stdin=data)
    assert piped["category"] == dashed["category"] == "gpu_oom"
    assert piped["evidence"][0]["file"] == "<stdin>"
    assert piped["evidence"][0]["line"] == diagnose_json(DEMO)[1]["evidence"][0]["line"]


def test_compressed_inputs_are_recognised_by_magic_not_name(tmp_path):
    data = DEMO.read_bytes()
    for name, blob in (("a.log.gz", gzip.compress(data)), ("b.log.bz2", bz2.compress(data)),
                       ("c.log.xz", lzma.compress(data)), ("misnamed.txt", gzip.compress(data))):
        path = tmp_path / name
        path.write_bytes(blob)
        code, d = diagnose_json(path)
        assert (code, d["category"]) == (0, "gpu_oom"), name


def test_several_files_are_the_ranks_of_one_job(tmp_path):
    # Split the demo job into per-rank files: the OOM sits in rank3.log only.
    by_rank = {}
    for line in DEMO.read_text().splitlines():
        rank = line.split("[rank", 1)[1].split("]", 1)[0] if "[rank" in line else "0"
        by_rank.setdefault(int(rank), []).append(line)
    paths = []
    for rank, lines in sorted(by_rank.items()):
        p = tmp_path / f"rank{rank}.log"
        p.write_text("\n".join(lines) + "\n")
        paths.append(p)
    code, d = diagnose_json(*paths)
    assert code == 0 and d["category"] == "gpu_oom"
    assert d["evidence"][0]["file"].endswith("rank3.log") and d["evidence"][0]["rank"] == 3
    assert any(s["category"] == "nccl_timeout" for s in d["secondary"])


def test_files_of_different_jobs_warn_and_a_missing_one_is_reported_exit_2(tmp_path):
    jobs = [tmp_path / "slurm-1001.out", tmp_path / "slurm-1002.out"]
    shutil.copy(DEMO, jobs[0])
    shutil.copy(LOGS / "pdsh_port.log", jobs[1])
    gone = tmp_path / "slurm-1003.out"
    proc = run_dsdiag("--format", "json", jobs[0], gone, jobs[1])
    err = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and len(err) == 2, err
    assert err[0] == f"dsdiag: error: cannot read {gone}: no such file or directory"
    assert err[1].startswith("dsdiag: warning: the files look like 2 different jobs "
                             "(slurm-1001.out, slurm-1002.out)") and "dsdiag triage" in err[1]
    d = json.loads(proc.stdout)  # the files that were there are still diagnosed, both of them
    assert {d["category"]} | {s["category"] for s in d["secondary"]} >= {"gpu_oom", "port_conflict"}
    # the ranks of one job, with the launcher's output: no warning
    ranks = [tmp_path / "launcher.log", tmp_path / "rank0.log", tmp_path / "rank1.log"]
    for path in ranks:
        shutil.copy(LOGS / "healthy.log", path)
    proc = run_dsdiag(*ranks)
    assert proc.returncode == 1 and proc.stderr == b""
    # a directory is read the same way: two Slurm jobs' outputs in it get the warning
    flat = tmp_path / "flat"
    flat.mkdir()
    for path in jobs:
        shutil.copy(path, flat / path.name)
    proc = run_dsdiag(flat)
    assert proc.returncode == 0 and "look like 2 different jobs" in proc.stderr.decode()


def test_exit_codes_none_unknown_and_exit_zero():
    assert run_dsdiag(LOGS / "healthy.log").returncode == 1
    assert run_dsdiag(LOGS / "unknown_keyerror.log").returncode == 1
    assert run_dsdiag("--exit-zero", LOGS / "unknown_keyerror.log").returncode == 0
    assert run_dsdiag(DEMO).returncode == 0


def test_unreadable_inputs_give_one_line_and_exit_2(tmp_path):
    missing = tmp_path / "nope.log"
    empty = tmp_path / "empty"  # a directory is a job directory; one without log files is an error
    (empty / "sub").mkdir(parents=True)
    (empty / "notes.md").write_text("no logs here\n")
    for args in ([missing], [empty], [DEMO, missing]):
        proc = run_dsdiag(*args)
        err = proc.stderr.decode()
        assert proc.returncode == 2, args
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert str(args[-1]) in err
    locked = tmp_path / "locked.log"
    locked.write_text("x\n")
    os.chmod(locked, 0)
    if os.getuid() != 0:  # root reads anything; the check is meaningful only for users
        assert run_dsdiag(locked).returncode == 2


def test_usage_error_exits_2_without_traceback():
    proc = run_dsdiag("--format", "yaml", DEMO)
    assert proc.returncode == 2 and b"Traceback" not in proc.stderr


def test_text_output_prints_log_text_verbatim_when_piped(tmp_path):
    log = tmp_path / "markup.log"
    log.write_text("[rank3]: [/bold] [red]not markup[/red] "
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n")
    proc = run_dsdiag(log)
    out = proc.stdout.decode()
    assert proc.returncode == 0
    assert "[rank3]: [/bold] [red]not markup[/red] torch.OutOfMemoryError" in out
    assert "\x1b[" not in out  # piped: plain


def test_color_always_keeps_markup_like_text_and_no_color_wins(tmp_path):
    log = tmp_path / "markup.log"
    log.write_text("[rank3]: [/bold] CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1 GiB total capacity)\n")
    colored = run_dsdiag("--color", "always", log).stdout.decode()
    assert "\x1b[" in colored and "[rank3]: [/bold] CUDA out of memory" in colored
    plain = run_dsdiag(log, env={"NO_COLOR": "1"}).stdout.decode()
    assert "\x1b[" not in plain


def test_markdown_format_fences_evidence():
    out = run_dsdiag("--format", "markdown", DEMO).stdout.decode()
    assert out.startswith("### dsdiag: `gpu_oom`")
    assert "```text" in out and "CUDA out of memory" in out and "**What to do**" in out


def test_json_goes_to_stdout_alone():
    proc = run_dsdiag("--format", "json", LOGS / "pdsh_port.log")
    json.loads(proc.stdout)  # nothing but the object
    assert proc.stderr == b""


def test_rules_lint_and_test_subcommands():
    # The lint tries every regex on adversarial inputs: ~40 s of CPU for the built-in rules,
    # so the hang guard is wider than the default (it is not a speed test).
    lint = run_dsdiag("rules", "lint", timeout=600)
    assert lint.returncode == 0 and b"rules in" in lint.stdout
    tested = run_dsdiag("rules", "test", timeout=600)
    assert tested.returncode == 0, tested.stdout.decode()[-2000:]
    assert b" passed, 0 failed" in tested.stdout


def test_rules_dir_adds_rules_with_their_own_steps(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "disk_full.yaml").write_text('''\
category: disk_full
checklist: Our cluster's project quota ran out.
remediation: ["Ask for more quota on {volume}."]
rules:
  - id: disk_full.site_quota
    title: The site's project quota was exceeded
    keywords: ["projquota"]
    patterns: ['PROJQUOTA exceeded on (?P<volume>/\\S+)']
    examples:
      match: ["PROJQUOTA exceeded on /lus/proj1", "x PROJQUOTA exceeded on /a", "PROJQUOTA exceeded on /b y"]
      no_match: ["PROJQUOTA ok on /lus/proj1", "quota"]
''')
    log = tmp_path / "job.log"
    log.write_text("step 1\nPROJQUOTA exceeded on /lus/proj1\n")
    proc = run_dsdiag("--format", "json", "--rules-dir", rules, log)
    d = json.loads(proc.stdout)
    assert (proc.returncode, d["rule"], d["facts"]["volume"]) == (0, "disk_full.site_quota", "/lus/proj1")
    assert "Ask for more quota on /lus/proj1." in d["remediation"]
    # the built-in disk_full rules keep the built-in checklist and steps
    builtin = tmp_path / "enospc.log"
    builtin.write_text("OSError: [Errno 28] No space left on device: '/ckpt/global_step10'\n")
    alone = json.loads(run_dsdiag("--format", "json", builtin).stdout)
    joined = json.loads(run_dsdiag("--format", "json", "--rules-dir", rules, builtin).stdout)
    assert alone["category"] == "disk_full" and joined["remediation"] == alone["remediation"]
    assert not any("Our cluster" in step or "Ask for more" in step for step in joined["remediation"])
    # A bad user rule file: located error, exit 2.
    (rules / "gpu_oom.yaml").write_text("category: gpu_oom\nrules: [\n")
    bad = run_dsdiag("--rules-dir", rules, log)
    assert bad.returncode == 2 and b"gpu_oom.yaml:" in bad.stderr and b"Traceback" not in bad.stderr


def test_a_user_file_with_only_category_and_rules_joins_the_builtin_category(tmp_path):
    (tmp_path / "gpu_hardware.yaml").write_text(USER_RULE)
    log = tmp_path / "job.log"
    log.write_text("step 740 loss 1.2\nnode7: BMC ALARM gpu5 power\n")
    d = json.loads(run_dsdiag("--format", "json", "--rules-dir", tmp_path, log).stdout)
    assert (d["category"], d["rule"], d["facts"]["gpu"]) == ("gpu_hardware", "gpu_hardware.site_bmc_alarm", 5)
    xid = tmp_path / "xid.log"
    xid.write_text("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n")
    alone = json.loads(run_dsdiag("--format", "json", xid).stdout)
    joined = json.loads(run_dsdiag("--format", "json", "--rules-dir", tmp_path, xid).stdout)
    assert alone["category"] == "gpu_hardware" and alone["rule"] != "gpu_hardware.site_bmc_alarm"
    assert joined["remediation"] == alone["remediation"]
    # the user rule is explained with the built-in checklist of its category
    assert d["remediation"][0] == alone["remediation"][0] and d["remediation"][0].startswith("Checklist:")


def test_bad_user_rule_files_are_named_and_located(tmp_path):
    (tmp_path / "gpu_hardware.yaml").write_text("rules: []\n")
    (tmp_path / "nccl_timeout.yaml").write_text("category: nccl_timeout\nlayer: env\n" + USER_RULE.split("\n", 1)[1]
                                                .replace("gpu_hardware.", "nccl_timeout."))
    (tmp_path / "my_new_category.yaml").write_text(USER_RULE.replace("gpu_hardware", "my_new_category"))
    (tmp_path / "gpu_oom.yaml").write_text(USER_RULE.replace("gpu_hardware.site_bmc_alarm", "gpu_oom.caching_allocator")
                                           .replace("category: gpu_hardware", "category: gpu_oom"))
    proc = run_dsdiag("rules", "lint", tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err
    assert "gpu_hardware.yaml:1:1: missing key 'category'" in err and "None" not in err
    assert "nccl_timeout.yaml:2:1: unknown key `layer`: a category's layer and title live in the taxonomy" in err
    assert "my_new_category.yaml:1:1: `my_new_category` is not a category id of the taxonomy" in err
    assert "duplicate rule id `gpu_oom.caching_allocator`" in err


def test_closed_stdout_exits_quietly(tmp_path):
    import subprocess
    import sys
    big = tmp_path / "big.log"
    big.write_text((DEMO.read_text()) * 20)
    proc = subprocess.run(f"{sys.executable} -m classifier --color never {big} | head -1",
                          shell=True, capture_output=True, cwd=str(DEMO.parent.parent), timeout=60)
    assert proc.stdout.count(b"\n") == 1 and b"Traceback" not in proc.stderr, proc.stderr


def test_version_names_the_package_and_the_rule_set(tmp_path):
    from classifier import __version__
    proc = run_dsdiag("--version")
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert out.startswith(f"dsdiag {__version__} (rules sha256:")
    builtin = out.split("sha256:")[1].rstrip(")\n")
    assert diagnose_json(DEMO)[1]["tool"] == {"name": "dsdiag", "version": __version__,
                                              "rules": "sha256:" + builtin}
    # an extra rule file changes the rule set, so its hash
    extra = tmp_path / "gpu_hardware.yaml"
    extra.write_text(USER_RULE)
    other = run_dsdiag("--version", "--rules-dir", tmp_path).stdout.decode()
    assert other.startswith("dsdiag ") and builtin not in other


def test_help_lists_the_subcommands_in_its_usage():
    out = run_dsdiag("--help").stdout.decode()
    usage = out.split("\n\n")[0]
    for name in ("triage", "check-config", "env", "slurm-annotate", "rules", "eval"):
        assert name in usage


def test_a_bad_dsdiag_format_is_an_error_not_silent_text():
    proc = run_dsdiag(stdin=b"step 1\n", env={"DSDIAG_FORMAT": "jsno"})
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"" and err.count("\n") == 1
    assert "DSDIAG_FORMAT" in err and "jsno" in err and "json" in err
    ok = run_dsdiag(stdin=b"step 1\n", env={"DSDIAG_FORMAT": "json"})
    assert ok.returncode == 1 and json.loads(ok.stdout)["category"] == "none"
    # --format on the command line wins over the environment, as usual.
    assert run_dsdiag("-f", "text", stdin=b"step 1\n", env={"DSDIAG_FORMAT": "jsno"}).returncode == 1


def test_a_bad_dsdiag_format_under_tee_still_passes_the_log_through():
    data = b"[rank0]: step 1 loss 2.0\n" * 1000
    proc = run_dsdiag("--tee", stdin=data, env={"DSDIAG_FORMAT": "bogus"})
    assert proc.stdout == data and proc.returncode == 2
    assert proc.stderr.decode().count("\n") == 1


def test_eval_of_a_directory_without_cases_exits_2(tmp_path):
    proc = run_dsdiag("eval", tmp_path)
    assert proc.returncode == 2 and "no cases" in proc.stderr.decode()
    (tmp_path / "job.log").write_text("RuntimeError: boom\n")  # a log without its label
    proc = run_dsdiag("eval", tmp_path)
    assert proc.returncode == 2 and proc.stderr.decode().count("\n") == 1
    (tmp_path / "job.yaml").write_text("label: unknown\nevidence_lines: [1]\norigin: synthesized\n")
    assert run_dsdiag("eval", tmp_path).returncode == 0


def test_eval_counts_held_out_misses_without_naming_them(tmp_path):
    oom = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    for name, split in (("secret-test-case", "test"), ("open-dev-case", "dev")):
        (tmp_path / f"{name}.log").write_text(oom)  # labelled disk_full on purpose: a miss
        (tmp_path / f"{name}.yaml").write_text(f"label: disk_full\norigin: public\nsplit: {split}\n")
    for fmt in ("text", "json"):
        out = run_dsdiag("eval", "-f", fmt, tmp_path).stdout.decode()
        assert "open-dev-case" in out and "secret-test-case" not in out
        assert "disk_full -> gpu_oom" in out
    out = run_dsdiag("eval", "--show-test-misses", tmp_path).stdout.decode()
    assert "secret-test-case" in out
