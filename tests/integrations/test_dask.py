"""`dsdiag triage --dask`: the same JSONL from a Dask LocalCluster on 127.0.0.1 as from local cores."""

import json
import os
import sys

import pytest
from conftest import LOGS, ROOT, run_dsdiag
from jobtrees import torchrun_log_dir



@pytest.fixture(scope="module")
def cluster():
    import distributed as dd
    # Dask spawns its worker processes: they must import `classifier` from this checkout.
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), old]))
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    local = dd.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                            dashboard_address=None, worker_dashboard_address=None)
    try:
        yield local
    finally:
        local.close(timeout=30)
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def test_triage_on_a_local_dask_cluster_equals_the_local_run(cluster, tmp_path):
    assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    jobs = [torchrun_log_dir(tmp_path / "torchrun"), LOGS / "pdsh_port.log", LOGS / "healthy.log",
            *sorted((ROOT / "corpus").glob("*/*.log"))[::20]]
    remote = run_dsdiag("triage", "-q", "--dask", cluster.scheduler_address, *jobs, timeout=60)
    local = run_dsdiag("triage", "-q", "-j", "1", *jobs, timeout=60)
    assert remote.returncode == 0, remote.stderr.decode()[-2000:]
    assert remote.stdout == local.stdout  # same objects, same order, evidence named as given
    out = [json.loads(line) for line in remote.stdout.decode().splitlines()]
    assert len(out) == len(jobs) and out[0]["facts"]["ranks_summary"] == "2 of 4 ranks"
    assert [o["job"] for o in out] == [str(j) for j in jobs]


def test_summary_and_html_work_with_dask_too(cluster, tmp_path):
    report = tmp_path / "r.html"
    proc = run_dsdiag("triage", "--dask", cluster.scheduler_address, "--html", report,
                      LOGS / "pdsh_port.log", LOGS / "k8s_disk.log", timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert "port_conflict" in proc.stderr.decode() and "2 jobs:" in proc.stderr.decode()
    assert report.read_text().count('<tbody class="job"') == 2


def test_unreachable_scheduler_is_a_one_line_usage_error():
    proc = run_dsdiag("triage", "--dask", "tcp://127.0.0.1:9", "--dask-timeout", "2",
                      LOGS / "healthy.log", timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and "tcp://127.0.0.1:9" in err, err
    assert proc.stdout == b""
