"""Hosts to look at: failed jobs grouped by culprit host in the summary, the HTML and --drain-list."""

import json
import os
import shutil

from conftest import LOGS, run_dsdiag

from classifier.jobs.hosts import culprit_hosts, drain_list

CULPRIT = LOGS / "culprit"


def _archive(root):
    """Three failed jobs started on gpu-a, one on gpu-node-3, one healthy job."""
    for i, when in enumerate((1_700_000_000, 1_700_100_000, 1_700_200_000)):
        job = root / f"job{i}"
        job.mkdir(parents=True)
        shutil.copy(CULPRIT / "nccl_straggler_16r_2h.log", job / "train.log")
        os.utime(job / "train.log", (when, when))
    (root / "job3").mkdir()
    shutil.copy(CULPRIT / "xid_one_of_4_hosts_32r.log", root / "job3" / "train.log")
    (root / "job4").mkdir()
    shutil.copy(LOGS / "healthy.log", root / "job4" / "train.log")


def test_drain_list_prints_repeat_offenders_one_per_line(tmp_path):
    _archive(tmp_path)
    proc = run_dsdiag("triage", "-q", "--workers", "1", "--drain-list", "--min-jobs", "2", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == "gpu-a\n"
    proc = run_dsdiag("triage", "-q", "--workers", "1", "--drain-list", str(tmp_path))
    assert proc.stdout.decode().splitlines() == ["gpu-a", "gpu-node-3"]


def test_summary_and_html_show_the_hosts_table(tmp_path):
    _archive(tmp_path / "jobs")
    html = tmp_path / "report.html"
    proc = run_dsdiag("triage", "--workers", "1", "--html", str(html), str(tmp_path / "jobs"))
    assert proc.returncode == 0
    lines = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert all(r["last_seen"] for r in lines)
    summary = proc.stderr.decode()
    assert "hosts to look at" in summary
    row = next(line for line in summary.splitlines() if line.startswith("gpu-a "))
    assert row.split()[:3] == ["gpu-a", "3", "nccl_timeout"] and "2023-11-17T" in row
    page = html.read_text()
    assert 'id="sec-hosts"' in page and '<td class="host">gpu-node-3</td>' in page


def test_hosts_are_counted_per_job_and_bad_min_jobs_is_a_usage_error(tmp_path):
    results = [{"category": "gpu_hardware", "culprit": {"hosts": ["n1", "n1"]}, "last_seen": "2026-01-02T00:00:00Z"},
               {"category": "host_oom", "culprit": {"hosts": ["n1"]}, "last_seen": "2026-01-01T00:00:00Z"},
               {"category": "none", "culprit": {"hosts": ["n2"]}}, {"category": "unknown", "culprit": None}]
    (row,) = culprit_hosts(results)
    assert (row.host, row.jobs, row.last_seen) == ("n1", 2, "2026-01-02T00:00:00Z")
    assert row.categories_text() == "gpu_hardware, host_oom"
    assert drain_list(results, 3) == []
    proc = run_dsdiag("triage", "--drain-list", "--min-jobs", "0", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.decode().count("\n") == 1


def test_hosts_jsonl_holds_the_table_one_host_per_line(tmp_path):
    _archive(tmp_path / "jobs")
    out = tmp_path / "hosts.jsonl"
    proc = run_dsdiag("triage", "-q", "--workers", "1", "--hosts-jsonl", str(out), str(tmp_path / "jobs"))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["host"], r["failed_jobs"]) for r in rows] == [("gpu-a", 3), ("gpu-node-3", 1)]
    assert rows[0]["categories"] == {"nccl_timeout": 3} and rows[0]["last_seen"].startswith("2023-11-17")
    assert len(proc.stdout.decode().splitlines()) == 5  # stdout still holds one line per job
    bad = run_dsdiag("triage", "-q", "--hosts-jsonl", str(tmp_path / "no" / "such" / "dir.jsonl"), str(tmp_path / "jobs"))
    assert bad.returncode == 2 and bad.stderr.decode().count("\n") == 1
