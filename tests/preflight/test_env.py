"""`dsdiag env`: the real torch and deepspeed in-process, real sockets held on 127.0.0.1, and real
environment changes in subprocesses - with stand-in nvidia-smi / nvcc executables on PATH where
a GPU machine's answers are needed on this CPU-only one.
"""

import dataclasses
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, run_dsdiag

from classifier.preflight.env.command import collect
from classifier.preflight.env.environment import match_ifname
from classifier.preflight.env.install import compare_cuda, parse_nvidia_smi
from classifier.preflight.env.launch import parse_hostfile
from classifier.preflight.env.report import DIST_VARS

CLEAN_ENV = DIST_VARS + ("CUDA_VISIBLE_DEVICES", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE",
                                  "NCCL_IB_HCA", "LOCAL_WORLD_SIZE", "DSDIAG_IB_ROOT")


def env_json(*args, env=None, timeout=30):
    """Run `dsdiag env --format json ARGS` in a subprocess whose environment is this one without
    the distributed/NCCL/CUDA variables, plus `env`."""
    full = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}
    full.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "classifier", "env", "--format", "json",
                           *map(str, args)], capture_output=True, cwd=ROOT, env=full,
                          timeout=timeout)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    doc = json.loads(proc.stdout)
    assert (proc.returncode == 1) == (doc["problems"] > 0)
    return proc.returncode, doc


def checks(doc, name=None, status=None):
    return [c for c in doc["checks"] if (name is None or c["name"] == name)
            and (status is None or c["status"] == status)]


def only(doc, name, status=None):
    hits = checks(doc, name, status)
    assert len(hits) == 1, [(c["name"], c["status"], c["summary"]) for c in doc["checks"]]
    return hits[0]


@pytest.fixture
def fake_gpu_node(tmp_path):
    """A bin/ with an nvidia-smi that reports two GPUs and driver CUDA 12.2, and a CUDA_HOME
    whose nvcc says release 12.6."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(textwrap.dedent("""\
        #!/bin/sh
        case "$1" in
          --query-gpu=*)
            echo "0, GPU-11111111-aaaa-bbbb-cccc-000000000000, NVIDIA H100 80GB HBM3, 81559 MiB, 535.104.05"
            echo "1, GPU-22222222-aaaa-bbbb-cccc-000000000000, NVIDIA H100 80GB HBM3, 81559 MiB, 535.104.05"
            ;;
          *)
            echo "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |"
            ;;
        esac
        """))
    cuda_home = tmp_path / "cuda"
    (cuda_home / "bin").mkdir(parents=True)
    nvcc = cuda_home / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.6, V12.6.77'\n")
    for exe in (smi, nvcc):
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CUDA_HOME": str(cuda_home)}


# --- install ----------------------------------------------------------------------------------
def test_install_section_reports_the_real_torch_and_deepspeed():
    import deepspeed
    import torch
    report = collect(["install"])
    doc = {"checks": [dataclasses.asdict(c) for c in report.checks]}
    torch_check = only(doc, "torch", "ok")
    assert torch_check["facts"]["version"] == torch.__version__
    assert torch_check["facts"]["cuda"] == torch.version.cuda
    assert only(doc, "deepspeed", "ok")["facts"]["version"] == deepspeed.__version__
    ops = only(doc, "deepspeed ops")
    assert "ops can be JIT-built here" in ops["summary"]
    if torch.version.cuda is None:
        assert only(doc, "nccl")["status"] == "skipped"
    if shutil.which("nvidia-smi") is None:
        driver = only(doc, "driver")
        assert driver["status"] == "skipped" and "not checked" in driver["summary"]
    assert [c["section"] for c in doc["checks"]] == ["install"] * len(doc["checks"])


def test_cli_runs_the_sections_in_the_chapters_order():
    code, doc = env_json(env={})
    assert doc["sections"] == ["install", "environment", "launch"]
    order = [c["section"] for c in doc["checks"]]
    assert order == sorted(order, key=["install", "environment", "launch"].index)
    assert all(s.split(":")[0].count("/") == 1 for s in doc["skipped"])


def test_fake_gpu_node_versions_and_devices(fake_gpu_node, tmp_path):
    code, doc = env_json("--section", "install", env=fake_gpu_node)
    driver = only(doc, "driver", "ok")
    assert driver["facts"] == {"driver": "535.104.05", "cuda": "12.2", "gpus": 2}
    assert only(doc, "nvcc", "ok")["facts"]["version"] == "12.6"
    mismatch = only(doc, "nvcc vs driver", "warning")
    assert mismatch["category"] == "version_mismatch" and code == 1


@pytest.mark.parametrize("torch_cuda,nvcc,driver,expected", [
    ("12.1", "12.1", "12.4", []),
    ("12.1", "11.8", "12.4", [("torch vs nvcc", "error")]),
    ("12.1", "12.4", "12.4", [("torch vs nvcc", "warning")]),
    ("12.4", "12.4", "12.2", [("torch vs driver", "warning"), ("nvcc vs driver", "warning")]),
    ("12.4", None, "11.8", [("torch vs driver", "error")]),
    (None, "12.6", None, []),
])
def test_cuda_versions_that_must_fit(torch_cuda, nvcc, driver, expected):
    assert [(c.name, c.status) for c in compare_cuda(torch_cuda, nvcc, driver)] == expected


def test_nvidia_smi_parsing():
    gpus, driver, cuda = parse_nvidia_smi(
        "0, GPU-abc, NVIDIA A100-SXM4-80GB, 81920 MiB, 550.54.15\n", "CUDA Version: 12.4 |")
    assert gpus == [{"index": 0, "uuid": "GPU-abc", "name": "NVIDIA A100-SXM4-80GB",
                     "memory": "81920 MiB"}]
    assert (driver, cuda) == ("550.54.15", "12.4")


# --- environment ------------------------------------------------------------------------------
def test_distributed_vars_partly_exported():
    code, doc = env_json("--section", "env", env={"MASTER_ADDR": "127.0.0.1", "RANK": "0"})
    error = only(doc, "distributed vars", "error")
    assert error["category"] == "env_var_missing" and code == 1
    assert error["facts"]["missing"] == ["MASTER_PORT", "WORLD_SIZE", "LOCAL_RANK"]


def test_distributed_vars_consistent_and_not():
    good = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511", "RANK": "1", "WORLD_SIZE": "2",
            "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    code, doc = env_json("--section", "env", env=good)
    assert only(doc, "distributed vars", "ok") and code == 0
    bad = dict(good, RANK="2", MASTER_PORT="70000", LOCAL_RANK="x")
    code, doc = env_json("--section", "env", env=bad)
    summary = only(doc, "distributed vars", "error")["summary"]
    assert "RANK=2 is outside 0..WORLD_SIZE-1 (1)" in summary
    assert "MASTER_PORT=70000" in summary and "LOCAL_RANK='x'" in summary


def test_no_distributed_vars_is_normal_before_launch():
    code, doc = env_json("--section", "env", env={})
    assert only(doc, "distributed vars", "info") and code == 0


def test_visible_devices_against_the_gpus_present(fake_gpu_node):
    code, doc = env_json("--section", "env", env=dict(fake_gpu_node, CUDA_VISIBLE_DEVICES="0,5,1"))
    error = only(doc, "CUDA_VISIBLE_DEVICES", "error")
    assert "5 is not a GPU of this node" in error["summary"] and "5, 1 are dropped" in error["summary"]
    assert error["category"] == "device_visibility"
    code, doc = env_json("--section", "env", env=dict(fake_gpu_node, CUDA_VISIBLE_DEVICES="1"))
    assert "1 of 2 GPU(s) visible" in only(doc, "CUDA_VISIBLE_DEVICES", "ok")["summary"]
    code, doc = env_json("--section", "env", env=dict(fake_gpu_node, CUDA_VISIBLE_DEVICES=""))
    assert only(doc, "CUDA_VISIBLE_DEVICES", "warning")["category"] == "device_visibility"
    code, doc = env_json("--section", "env", env=dict(
        fake_gpu_node, MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", RANK="3", WORLD_SIZE="4",
        LOCAL_RANK="3"))
    assert "invalid device ordinal" in only(doc, "LOCAL_RANK", "error")["summary"]


def test_visible_devices_without_a_driver_says_what_it_could_not_check(tmp_path):
    # PATH without nvidia-smi: this machine's answer, made the same on a GPU node.
    code, doc = env_json("--section", "env", env={"CUDA_VISIBLE_DEVICES": "0,1",
                                                  "PATH": str(tmp_path)})
    assert "not compared" in only(doc, "CUDA_VISIBLE_DEVICES", "skipped")["summary"]
    assert "could not run here" in doc["summary"] and code == 0


def test_socket_ifname_semantics():
    names = ["eth0", "eth1", "ib0", "lo"]
    assert match_ifname("eth", names) == (["eth0", "eth1"], [])
    assert match_ifname("=eth", names) == ([], ["eth"])
    assert match_ifname("^lo,ib", names) == (["eth0", "eth1"], [])
    assert match_ifname("eth0,bond0", names) == (["eth0"], ["bond0"])


def test_socket_ifname_names_an_interface_that_exists():
    code, doc = env_json("--section", "env", env={"NCCL_SOCKET_IFNAME": "nosuchnic0"})
    error = only(doc, "NCCL_SOCKET_IFNAME", "error")
    assert error["category"] == "nccl_network" and code == 1
    code, doc = env_json("--section", "env", env={"NCCL_SOCKET_IFNAME": "lo"})
    assert only(doc, "NCCL_SOCKET_IFNAME", "ok") and code == 0


def test_ib_disable_against_the_devices_present(tmp_path):
    (tmp_path / "mlx5_0").mkdir()
    code, doc = env_json("--section", "env", env={"DSDIAG_IB_ROOT": str(tmp_path),
                                                  "NCCL_IB_DISABLE": "1"})
    assert only(doc, "NCCL_IB_DISABLE", "warning")["category"] == "nccl_network"
    code, doc = env_json("--section", "env", env={"DSDIAG_IB_ROOT": str(tmp_path),
                                                  "NCCL_IB_HCA": "mlx4_9"})
    assert only(doc, "NCCL_IB_HCA", "error")
    code, doc = env_json("--section", "env", env={"DSDIAG_IB_ROOT": str(tmp_path / "none"),
                                                  "NCCL_IB_DISABLE": "1"})
    assert only(doc, "NCCL_IB_DISABLE", "info") and code == 0


# --- launch -----------------------------------------------------------------------------------
@pytest.fixture
def held_port():
    """A real listening socket on 127.0.0.1, held for the test."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


def test_master_port_in_use_is_found_with_its_owner(held_port):
    code, doc = env_json("--section", "launch", env={"MASTER_ADDR": "127.0.0.1",
                                                     "MASTER_PORT": str(held_port)})
    error = only(doc, "master port", "error")
    assert error["category"] == "port_conflict" and error["facts"]["errno"] == "EADDRINUSE"
    assert error["facts"]["pid"] == os.getpid() and code == 1
    code, doc = env_json("--section", "launch", "--master-port", held_port,
                         env={"RANK": "0"})
    assert "expected inside a running job" in only(doc, "master port", "info")["summary"]


def test_free_master_port_and_resolving_address():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, doc = env_json("--section", "launch", "--master-addr", "localhost", "--master-port", port,
                         env={})
    assert only(doc, "master port", "ok")["facts"]["port"] == port
    assert only(doc, "master address", "ok")["facts"]["local"] is True
    code, doc = env_json("--section", "launch", "--master-addr", "no-such-host.invalid", env={})
    assert only(doc, "master address", "error")["category"] == "connection_failure"


def test_hostfile_grammar():
    hosts, problems = parse_hostfile("# nodes\nnode-1 slots=8\n\nnode-2 slots=8 # same\n")
    assert hosts == {"node-1": (8, 2), "node-2": (8, 4)} and problems == []
    hosts, problems = parse_hostfile("node-1 slots=8\nnode-1 slots=4\nnode-3 gpus=8\n")
    assert [line for line, _ in problems] == [2, 3]
    assert parse_hostfile("# nothing\n")[1] == [(1, "the hostfile lists no host")]


def test_hostfile_problems_are_located(tmp_path, fake_gpu_node):
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("localhost slots=4\nlocalhost slots=2\nbroken\n")
    code, doc = env_json("--section", "launch", "--hostfile", hostfile, env={})
    summaries = [c["summary"] for c in checks(doc, "hostfile", "error")]
    assert summaries[0].startswith(f"{hostfile}:2: localhost is listed twice")
    assert summaries[1].startswith(f"{hostfile}:3: bad entry 'broken'")
    hostfile.write_text("localhost slots=4\n")
    code, doc = env_json("--section", "launch", "--hostfile", hostfile, env=fake_gpu_node)
    error = only(doc, "hostfile", "error")
    assert "slots=4 but 2 GPU(s)" in error["summary"] and error["category"] == "device_visibility"
    hostfile.write_text("localhost slots=2\nno-such-host.invalid slots=8\n")
    code, doc = env_json("--section", "launch", "--hostfile", hostfile, env=fake_gpu_node)
    assert only(doc, "hostfile", "error")["category"] == "connection_failure"


def test_missing_hostfile_exits_2(tmp_path):
    proc = run_dsdiag("env", "--section", "launch", "--hostfile", tmp_path / "nope")
    assert proc.returncode == 2 and b"cannot read hostfile" in proc.stderr


def test_text_output_lists_problems_with_category_and_fix():
    proc = run_dsdiag("env", "--section", "env", env={"NCCL_SOCKET_IFNAME": "nosuchnic0"})
    out = proc.stdout.decode()
    assert proc.returncode == 1
    assert out.splitlines()[0] == "== environment"
    assert "ERROR    NCCL_SOCKET_IFNAME" in out and "nccl_network:" in out and "fix:" in out


def test_env_and_launch_sections_import_neither_torch_nor_deepspeed():
    probe = textwrap.dedent("""
        import sys
        attempts = []
        class Record:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "deepspeed"):
                    attempts.append(name)
                return None
        sys.meta_path.insert(0, Record())
        from classifier.cli import main
        code = main(["env", "--section", "env", "--section", "launch", "--format", "json"])
        sys.stderr.write("ATTEMPTS " + ",".join(attempts) + "\\n")
        sys.exit(code)
    """)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          timeout=30)
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stderr.strip().endswith("ATTEMPTS"), proc.stderr
