"""`dsdiag triage`: JSONL per job, the grouped summary, exit codes, workers, progress bar."""

import json
import os
import pty
import shutil
import subprocess
import sys

import pytest
from conftest import LOGS, ROOT, run_dsdiag

from classifier.jobs import triage
from classifier.jobs.group import group_key
from classifier.jobs.run import make_batches, triage_job

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
       "capacity of 79.15 GiB of which 1.00 GiB is free.")
TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def _bind(host, port):
    return (f"RuntimeError: The server socket has failed to listen on any local network address. The "
            f"server socket has failed to bind to {host}:{port} (errno: 98 - Address already in use).")


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def make_archive(root):
    """An archive of job directories (two layouts, two nesting levels) and the expected jobs."""
    _write(root / "job-a" / "rank0.log", ["[INFO] starting", _bind("10.0.0.1", 29500)])
    _write(root / "job-a" / "rank1.log", ["[INFO] starting"])
    _write(root / "job-b" / "slurm-88_0.out", ["[INFO] starting", _bind("10.9.9.9", 29500)])
    _write(root / "job-c" / "rank0.log", [_bind("10.0.0.1", 29501)])
    for r in range(4):
        _write(root / "may" / "job-d" / "run_abcd1234" / "attempt_0" / str(r) / "stderr.log",
               [f"2024-05-01 11:00:0{r},000 step 1"] + ([f"2024-05-01 11:00:09,000 {OOM}"] if r == 2 else []))
    _write(root / "may" / "job-e" / "train.log", [f"ValueError: bad token {TOKEN}"])
    shutil.copy(LOGS / "healthy.log", root / "may" / "job-e" / "..")  # loose file in an archive level
    return ["job-a", "job-b", "job-c", os.path.join("may", "job-d"), os.path.join("may", "job-e")]


def _jsonl(proc):
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def test_one_json_object_per_job_in_order_with_the_contract(tmp_path):
    expected = make_archive(tmp_path / "archive")
    extra = LOGS / "unknown_keyerror.log"
    proc = run_dsdiag("triage", "--workers", "2", tmp_path / "archive", extra)
    assert proc.returncode == 0, proc.stderr.decode()
    out = _jsonl(proc)
    # archive/may holds a loose log: it is a job directory of its own (files belong to their
    # directory's job), so its sub-directories are not separate jobs.
    jobs = [os.path.relpath(o["job"], tmp_path / "archive") for o in out[:-1]]
    assert jobs == ["job-a", "job-b", "job-c", "may"]
    assert out[-1]["job"] == str(extra)
    for obj in out:
        assert obj["schema_version"] == 2 and "error" not in obj
        contract = {"category", "layer", "confidence", "rule", "evidence", "facts", "remediation"}
        assert contract | {"group"} <= set(obj)
    assert [o["category"] for o in out] == ["port_conflict"] * 3 + ["none", "unknown"]
    # Without the loose file the nested level is an archive: each sub-directory is a job.
    os.remove(tmp_path / "archive" / "may" / "healthy.log")
    proc = run_dsdiag("triage", "-j", "2", tmp_path / "archive")
    out = _jsonl(proc)
    assert [os.path.relpath(o["job"], tmp_path / "archive") for o in out] == expected
    oom = out[3]
    assert oom["category"] == "gpu_oom" and oom["facts"]["ranks_summary"] == "1 of 4 ranks"
    assert TOKEN not in proc.stdout.decode() and "REDACTED" in json.dumps(out[4]["evidence"])


def test_summary_groups_by_category_and_rule_captures(tmp_path):
    make_archive(tmp_path / "archive")
    os.remove(tmp_path / "archive" / "may" / "healthy.log")
    proc = run_dsdiag("triage", tmp_path / "archive")
    err = proc.stderr.decode()
    rows = {line.split("  ")[0]: line for line in err.splitlines()}
    assert "\x1b[" not in err and "\r" not in err  # piped: no colours, no progress bar
    key_29500 = "port_conflict.tcpstore_bind_errno port=29500"
    key_29501 = "port_conflict.tcpstore_bind_errno port=29501"
    by_group = {}
    for line in err.splitlines():
        for key in (key_29500, key_29501):
            if key in line:
                by_group[key] = line.split()
    assert "10.0.0.1" not in err and "10.9.9.9" not in err  # hosts are not part of the key
    # two jobs on port 29500 (different hosts) in one group, 29501 in its own
    assert by_group[key_29500][:3] == ["port_conflict", "3", "2"]
    assert by_group[key_29501][0] == "1"
    assert "gpu_oom" in rows and "unknown" in rows
    assert err.splitlines()[-2] == "5 jobs: 4 diagnosed, 1 unknown, 0 none"
    assert err.splitlines()[-1] == ("grouping: 9 files read as 5 jobs: 3 single files, "
                                    "1 from rank files (2 files), 1 from torchrun log dirs (4 files)")


def test_group_key_keeps_identities_and_drops_what_varies():
    base = {"category": "port_conflict", "rule": "port_conflict.x", "source": "rule",
            "facts": {"port": "29500", "host": "10.0.0.1", "ranks": [0], "ranks_summary": "1 of 2 ranks"}}
    other_host = dict(base, facts=dict(base["facts"], host="10.0.0.2", ranks=[1]))
    other_port = dict(base, facts=dict(base["facts"], port="29501"))
    assert group_key(base) == group_key(other_host) == "port_conflict.x port=29500"
    assert group_key(other_port) != group_key(base)
    symbol = {"category": "version_mismatch", "rule": "version_mismatch.undefined_symbol", "source": "rule",
              "facts": {"symbol": "_ZN3c10foo", "library": "/home/u/.cache/torch_extensions/fused_adam.so"}}
    assert group_key(symbol) == "version_mismatch.undefined_symbol library=fused_adam.so symbol=_ZN3c10foo"
    unknown = {"category": "unknown", "rule": None, "source": "none",
               "evidence": [{"text": "[rank1]: KeyError: 'labels'"}]}
    assert group_key(unknown) == "unknown KeyError"
    assert group_key({"category": "gpu_oom", "source": "model", "rule": None}) == "gpu_oom (model)"
    assert group_key({"job": "x", "error": "cannot read x"}) == "error"


def test_one_and_two_workers_write_the_same_jsonl(tmp_path):
    paths = sorted(str(p) for p in (ROOT / "corpus").glob("*/*.log"))[::12]
    one = run_dsdiag("triage", "-j", "1", "-q", *paths)
    two = run_dsdiag("triage", "-j", "2", "-q", *paths)
    assert one.returncode == two.returncode == 0
    assert one.stdout == two.stdout and len(_jsonl(one)) == len(paths)
    assert one.stderr == two.stderr == b""


def test_batches_cover_every_job_once():
    jobs = [(str(i), [str(i)]) for i in range(1001)]
    for workers in (1, 2, 16):
        batches = make_batches(jobs, workers)
        assert [j for b in batches for j in b] == jobs and max(map(len, batches)) <= 16


@pytest.mark.parametrize("args", [["nope/missing.log"], ["EMPTY"], ["-j", "0", "LOG"], []])
def test_usage_errors_exit_2_with_one_line(tmp_path, args):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    subst = {"EMPTY": tmp_path / "empty", "LOG": LOGS / "healthy.log"}
    proc = run_dsdiag("triage", *[subst.get(a, a) for a in args])
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert proc.stdout == b""


def test_unreadable_job_gets_an_error_line_and_exit_1(monkeypatch, capsys, tmp_path):
    ghost = str(tmp_path / "gone" / "rank0.log")
    jobs = [("gone", [ghost]), ("ok", [str(LOGS / "healthy.log")])]
    monkeypatch.setattr(triage, "find_jobs", lambda paths: (jobs, []))
    code = triage.main(["-j", "1", "whatever"])
    out, err = capsys.readouterr()
    objs = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert objs[0]["job"] == "gone" and "cannot read" in objs[0]["error"]
    assert objs[1]["job"] == "ok" and objs[1]["category"] == "none"
    assert "1 unreadable" in err
    assert triage_job("x", [ghost])["error"].startswith("cannot read")


def test_paths_from_stdin(tmp_path):
    listing = "\n".join([str(LOGS / "healthy.log"), str(LOGS / "pdsh_port.log")]) + "\n"
    proc = run_dsdiag("triage", "-q", "--paths-from", "-", stdin=listing.encode())
    assert proc.returncode == 0
    assert [o["category"] for o in _jsonl(proc)] == ["none", "port_conflict"]


def test_progress_bar_and_table_on_a_terminal(tmp_path):
    paths = sorted(str(p) for p in (ROOT / "corpus").glob("*/*.log"))[:40]
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="160")
    env.pop("NO_COLOR", None)
    jsonl = open(tmp_path / "out.jsonl", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "classifier", "triage", "-j", "2", *paths],
                            stdout=jsonl, stderr=slave, cwd=ROOT, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.wait(timeout=60)
    jsonl.close()
    shown = b"".join(chunks).decode(errors="replace")
    out = (tmp_path / "out.jsonl").read_bytes()
    assert proc.returncode == 0 and len(out.splitlines()) == 40  # not a line of it on the terminal
    assert b"\x1b" not in out
    assert "triage" in shown and "/40" in shown  # the bar: "triage ━━━ n/40 jobs"
    assert "dsdiag triage" in shown and "40 jobs:" in shown  # the rich summary table


def _slurm_folder(folder):
    """Four unrelated Slurm jobs in one folder, Slurm's default `slurm-%j.out` names."""
    folder.mkdir()
    for job, log in ((1001, "healthy.log"), (1002, "pdsh_port.log"), (1003, "k8s_disk.log"),
                     (1004, "unknown_keyerror.log")):
        shutil.copy(LOGS / log, folder / f"slurm-{job}.out")
    return folder


def test_a_folder_of_slurm_job_outputs_is_four_jobs_with_their_own_categories(tmp_path):
    folder = _slurm_folder(tmp_path / "slurm")
    proc = run_dsdiag("triage", "-j", "2", folder)
    assert proc.returncode == 0, proc.stderr.decode()
    out = _jsonl(proc)
    assert [os.path.basename(o["job"]) for o in out] == [f"slurm-{j}.out" for j in range(1001, 1005)]
    assert [o["category"] for o in out] == ["none", "port_conflict", "disk_full", "unknown"]
    assert all((o["files"], o["grouping"]) == (1, "file") for o in out)
    assert "grouping: 4 files read as 4 jobs: 4 single files" in proc.stderr.decode()


def test_corpus_folder_is_one_job_per_file():
    logs = sorted(p for p in (ROOT / "corpus" / "none").iterdir() if ".log" in p.name)
    proc = run_dsdiag("triage", "-q", "-j", "2", ROOT / "corpus" / "none")
    out = _jsonl(proc)
    assert [o["job"] for o in out] == [str(p) for p in logs]
    assert sum(o["category"] == "none" for o in out) >= len(out) - 2  # their own labels, mostly none


def test_a_missing_path_among_many_is_reported_and_the_rest_triaged_exit_2(tmp_path):
    proc = run_dsdiag("triage", "-j", "1", LOGS / "pdsh_port.log", tmp_path / "gone.log",
                      LOGS / "healthy.log")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err
    assert f"dsdiag triage: error: {tmp_path / 'gone.log'}: no such file or directory" in err
    assert [o["category"] for o in _jsonl(proc)] == ["port_conflict", "none"]
    assert "2 jobs: 1 diagnosed" in err  # the summary of what was there
