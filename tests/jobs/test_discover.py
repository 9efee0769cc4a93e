"""Job directories: one job's per-rank files found, ordered, merged by time, "k of N ranks"."""

import gzip
import os

import pytest
from conftest import diagnose_json, run_dsdiag

from classifier.jobs.discover import discover_jobs, grouping_of, job_files, split_jobs
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
        write_lines(slurm / f"slurm-777.{t}.out", [f"task {t}"])
    write_lines(slurm / "launcher.log", ["srun: launching"])
    names = [os.path.basename(f) for f in job_files(str(slurm))]
    assert names == ["launcher.log", "slurm-777.0.out", "slurm-777.1.out", "slurm-777.2.out",
                     "slurm-777.10.out"]
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
    write_lines(archive / "2024-05" / "job3" / "slurm-9.0.out", ["c"])  # nested archive level
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
    for name, rank in (("slurm-77.3.out", 3), ("slurm-77_task3.out", 3), ("slurm-77_3.out", None),
                       ("job.5.log", 5), ("node1.rank12.err", 12),
                       ("attempt_0/2/stderr.log", 2), ("slurm-77.out", None)):
        log = tmp_path / name
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
        d = diagnose_job([str(log)])
        assert rank_from_path(str(log)) == rank and d["evidence"][0]["rank"] == rank, name


SPLITS = [
    # a flat folder of Slurm job outputs (%j): a job each
    (["slurm-1001.out", "slurm-1002.out", "slurm-1003.out"],
     [["slurm-1001.out"], ["slurm-1002.out"], ["slurm-1003.out"]]),
    # array tasks (slurm-%A_%a.out, Slurm's default name for arrays) are jobs of their own
    (["slurm-77_1.out", "slurm-77_2.out"], [["slurm-77_1.out"], ["slurm-77_2.out"]]),
    # rank files with their launcher output; two nodes' rank files that share no rank
    (["launcher.log", "rank0.log", "rank1.log.gz"], [["launcher.log", "rank0.log", "rank1.log.gz"]]),
    (["node1.rank0.err", "node1.rank1.err", "node2.rank2.err", "node2.rank3.err", "slurm-5.out"],
     [["node1.rank0.err", "node1.rank1.err", "node2.rank2.err", "node2.rank3.err", "slurm-5.out"]]),
    # two Slurm jobs' outputs are never one job's launcher output, even beside rank files
    (["rank0.log", "rank1.log", "slurm-1001.out", "slurm-1002.out"],
     [["rank0.log", "rank1.log"], ["slurm-1001.out"], ["slurm-1002.out"]]),
    # two jobs' per-task outputs (%j.%t): the ranks repeat, so two jobs
    (["slurm-1.0.out", "slurm-1.1.out", "slurm-2.0.out", "slurm-2.1.out"],
     [["slurm-1.0.out", "slurm-1.1.out"], ["slurm-2.0.out", "slurm-2.1.out"]]),
    # stdout and stderr of one job (--output / --error)
    (["slurm-7.err", "slurm-7.out", "slurm-8.out"], [["slurm-7.err", "slurm-7.out"], ["slurm-8.out"]]),
    # a corpus-like folder where one name happens to hold "rank0"
    (["a_rank0_watchdog.log", "b_rank0_barrier.log", "c.log"],
     [["a_rank0_watchdog.log"], ["b_rank0_barrier.log"], ["c.log"]]),
    # one torchrun attempt and the agent's own output beside it
    (["launch.log", "r/attempt_1/0/stderr.log", "r/attempt_1/0/stdout.log", "r/attempt_1/1/stderr.log"],
     [["launch.log", "r/attempt_1/0/stderr.log", "r/attempt_1/0/stdout.log", "r/attempt_1/1/stderr.log"]]),
]


@pytest.mark.parametrize("files,jobs", SPLITS, ids=[s[0][0] for s in SPLITS])
def test_split_jobs_decides_from_the_names(files, jobs):
    assert split_jobs(files) == jobs


def test_grouping_names_how_the_files_were_put_together():
    assert grouping_of(["a.log"]) == "file"
    assert grouping_of(["launcher.log", "rank0.log", "rank1.log"]) == "ranks"
    assert grouping_of(["x/attempt_0/0/stderr.log", "x/attempt_0/1/stderr.log"]) == "torchrun"
    assert grouping_of(["slurm-7.err", "slurm-7.out"]) == "streams"


def test_a_flat_folder_is_a_job_per_file_named_after_it(tmp_path):
    flat = tmp_path / "flat"
    for job in (1001, 1002):
        write_lines(flat / f"slurm-{job}.out", ["x"])
    write_lines(flat / "slurm-1003.out", ["x"])
    write_lines(flat / "slurm-1003.err", ["y"])
    jobs = discover_jobs(str(flat))
    assert [os.path.relpath(j, flat) for j, _ in jobs] == ["slurm-1001.out", "slurm-1002.out",
                                                          "slurm-1003.*"]
    assert [len(f) for _, f in jobs] == [1, 1, 2]
    ranks = tmp_path / "ranks"
    for r in range(3):
        write_lines(ranks / f"rank{r}.log", ["x"])
    assert discover_jobs(str(ranks)) == [(str(ranks), job_files(str(ranks)))]
    # a torchrun log dir beside two Slurm jobs' outputs: three jobs, the attempt named by its path
    torchrun_log_dir(ranks)
    for job in (1, 2):
        write_lines(ranks / f"slurm-{job}.out", ["x"])
    for r in range(3):
        os.remove(ranks / f"rank{r}.log")
    names = [os.path.relpath(j, ranks) for j, _ in discover_jobs(str(ranks))]
    assert names == ["slurm-1.out", "slurm-2.out", os.path.join("job42_k3j9x0ab", "attempt_1")]


def test_a_zstd_rank_file_is_part_of_the_job(tmp_path):
    import zstandard  # a dependency of dsdiag itself (pyproject.toml)
    job = tmp_path / "job"
    write_lines(job / "rank0.log", ["[INFO] step 1"])
    (job / "rank1.log.zst").write_bytes(zstandard.ZstdCompressor().compress(f"[INFO] step 1\n{OOM}\n".encode()))
    assert [os.path.basename(f) for f in job_files(str(job))] == ["rank0.log", "rank1.log.zst"]
    code, d = diagnose_json(job)
    assert d["category"] == "gpu_oom" and d["evidence"][0]["rank"] == 1
