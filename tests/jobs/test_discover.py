"""Job directories: one job's per-rank files found, ordered, merged by time, "k of N ranks"."""

import gzip
import os

from conftest import diagnose_json, run_dsdiag

from classifier.jobs.discover import discover_jobs, job_files
from classifier.ranks import rank_from_path
from jobtrees import OOM, PORT, torchrun_log_dir, write_lines

def test_torchrun_log_dir_reads_the_latest_attempt_in_rank_order(tmp_path):
    files = job_files(str(torchrun_log_dir(tmp_path / "logs")))
    rel = [os.path.relpath(f, tmp_path / "logs") for f in files]
    assert rel == [f"job42_k3j9x0ab/attempt_1/{r}/{s}.log" for r in range(4) for s in ("stderr", "stdout")]


def test_dsdiag_dir_merges_ranks_by_time_and_counts_k_of_n(tmp_path):
    logs = torchrun_log_dir(tmp_path / "logs")
    code, d = diagnose_json(logs)
    assert (code, d["category"]) == (0, "gpu_oom")
    # rank 3's OOM happened first (11:00:10 < 11:00:30) although rank 0's file is read first
    assert [e["rank"] for e in d["evidence"]] == [3, 0]
    assert d["evidence"][0]["file"].endswith(os.path.join("attempt_1", "3", "stderr.log"))
    assert d["facts"]["ranks_summary"] == "2 of 4 ranks"
    assert all("attempt_0" not in e["file"] for e in d["evidence"])
    assert d["secondary"] == []  # the port clash of attempt_0 was restarted from: not read


def test_attempt_and_run_directories_given_directly(tmp_path):
    logs = torchrun_log_dir(tmp_path / "logs")
    run = logs / "job42_k3j9x0ab"
    assert len(job_files(str(run))) == 8
    assert [rank_from_path(f) for f in job_files(str(run / "attempt_0"))] == [0]


def test_slurm_task_outputs_and_rank_files_order_by_rank(tmp_path):
    slurm = tmp_path / "slurm"
    for t in (10, 2, 0, 1):
        write_lines(slurm / f"slurm-777_{t}.out", [f"task {t}"])
    write_lines(slurm / "launcher.log", ["srun: launching"])
    names = [os.path.basename(f) for f in job_files(str(slurm))]
    assert names == ["launcher.log", "slurm-777_0.out", "slurm-777_1.out", "slurm-777_2.out",
                     "slurm-777_10.out"]
    dotted = tmp_path / "dotted"
    for t in (3, 12, 0):
        write_lines(dotted / f"train.{t}.log", ["x"])
    assert [rank_from_path(f) for f in job_files(str(dotted))] == [0, 3, 12]
    assert rank_from_path("slurm-123.out") is None  # %j alone names the job, not a task
    assert rank_from_path("log_rank_3.txt") == 3 and rank_from_path("node1.rank12.err") == 12


def test_compressed_rank_files_count_and_other_files_do_not(tmp_path):
    job = tmp_path / "job"
    write_lines(job / "rank0.log", ["[INFO] step 1"])
    with gzip.open(job / "rank1.log.gz", "wt") as fh:
        fh.write(f"[INFO] step 1\n{OOM}\n")
    write_lines(job / ".hidden.log", [OOM])
    (job / "model.pt").write_bytes(b"\x00")
    (job / "error.json").write_text("{}")
    assert [os.path.basename(f) for f in job_files(str(job))] == ["rank0.log", "rank1.log.gz"]
    code, d = diagnose_json(job)
    assert d["category"] == "gpu_oom" and d["evidence"][0]["rank"] == 1
    assert d["facts"]["ranks_summary"] == "1 of 2 ranks"


def test_discover_jobs_splits_an_archive_into_job_directories(tmp_path):
    archive = tmp_path / "archive"
    write_lines(archive / "job1" / "rank0.log", ["a"])
    write_lines(archive / "job1" / "rank1.log", ["b"])
    torchrun_log_dir(archive / "job2")
    write_lines(archive / "2024-05" / "job3" / "slurm-9_0.out", ["c"])  # nested archive level
    (archive / "empty").mkdir()
    jobs = discover_jobs(str(archive))
    assert [os.path.relpath(j, archive) for j, _ in jobs] == [os.path.join("2024-05", "job3"), "job1", "job2"]
    assert [len(files) for _, files in jobs] == [1, 2, 8]
    single = archive / "job1" / "rank0.log"
    assert discover_jobs(str(single)) == [(str(single), [str(single)])]
    assert discover_jobs(str(archive / "empty")) == []


def test_directory_without_logs_is_a_one_line_error_naming_it(tmp_path):
    (tmp_path / "sub").mkdir()
    proc = run_dsdiag(tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and str(tmp_path) in err
    assert "triage" in err  # points at the command for archives


def test_diagnosis_and_job_discovery_read_the_same_rank_from_a_path(tmp_path):
    from classifier.diagnosis.diagnose import diagnose_job
    for name, rank in (("slurm-77_3.out", 3), ("job.5.log", 5), ("node1.rank12.err", 12),
                       ("attempt_0/2/stderr.log", 2), ("slurm-77.out", None)):
        log = tmp_path / name
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
        d = diagnose_job([str(log)])
        assert rank_from_path(str(log)) == rank and d["evidence"][0]["rank"] == rank, name
