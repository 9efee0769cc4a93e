"""`dsdiag slurm-annotate`: unit tests with a stand-in scontrol, then a real single-node Slurm.

The integration test starts Debian's munged, slurmctld and slurmd on 127.0.0.1 (free high
ports, everything in a temp dir, all bounded and killed at the end), submits a job that prints
a realistic DeepSpeed failure and exits 1, and checks the verdict in the job's Comment (set by
the TaskEpilog while the job still runs) and in the sidecar (written by the Epilog after it
finished, with no PATH). As root it installs the packages itself when they are missing.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from classifier.integrations.slurm import comment_text, expand_pattern, parse_show_job
from conftest import DEMO, ROOT

SHOW_JOB = """JobId=42 JobName=train.sh
   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A
   JobState={state} Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   NodeList=gpu-node-01
   BatchHost=gpu-node-01
   Command=/home/alice/run dir/train.sh
   WorkDir=/home/alice/run dir
   Comment={comment}
   StdErr={stdout}
   StdIn=/dev/null
   StdOut={stdout}
   Power=
"""


def test_parse_show_job_keeps_paths_with_spaces_and_comments():
    info = parse_show_job(SHOW_JOB.format(state="RUNNING", comment="user note: a=b",
                                          stdout="/home/alice/run dir/slurm-42.out"))
    assert info["JobState"] == "RUNNING" and info["BatchHost"] == "gpu-node-01"
    assert info["StdOut"] == "/home/alice/run dir/slurm-42.out"
    assert info["Comment"] == "user note: a=b" and info["WorkDir"] == "/home/alice/run dir"


def test_expand_pattern_like_slurmstepd():
    env = {"SLURM_JOB_ID": "7", "SLURM_JOB_NAME": "train", "SLURM_JOB_USER": "alice",
           "SLURM_ARRAY_JOB_ID": "5", "SLURM_ARRAY_TASK_ID": "2", "SLURM_JOB_WORK_DIR": "/w"}
    assert expand_pattern("/logs/%x-%j.out", env) == "/logs/train-7.out"
    assert expand_pattern("out/%A_%a.%u.log", env) == "/w/out/5_2.alice.log"
    assert expand_pattern("%5j%%.out", env) == "/w/00007%.out"


def test_comment_keeps_the_users_own_comment_and_stays_short():
    d = {"category": "gpu_oom", "layer": "config", "retryable": False, "title": "t" * 1000,
         "evidence": [{"file": "/a/b/slurm-1.out", "line": 185, "rank": 3, "text": "x"}]}
    text = comment_text(d, existing="user note | dsdiag: old verdict")
    assert text.startswith("user note | dsdiag: gpu_oom [config] fix first: ttt")
    assert text.count("dsdiag:") == 1 and len(text) < 500
    assert comment_text(d, existing="(null)").startswith("dsdiag: gpu_oom")


FAKE_SCONTROL = """#!/bin/sh
# Stand-in for scontrol: canned `show job`, records `update`, refuses it once the job ended.
echo "$@" >> "{calls}"
case "$1" in
  show) cat "{show}";;
  update) if grep -q "JobState=RUNNING" "{show}"; then exit 0; fi
          echo "Job has already finished for job 42" >&2; exit 1;;
esac
"""


def _fake_job(tmp_path, state, log_bytes=None, sleep=0):
    out = tmp_path / "slurm-42.out"
    out.write_bytes(DEMO.read_bytes() if log_bytes is None else log_bytes)
    show = tmp_path / "show.txt"
    show.write_text(SHOW_JOB.format(state=state, comment="(null)", stdout=out))
    calls = tmp_path / "calls.txt"
    scontrol = tmp_path / "scontrol"
    body = FAKE_SCONTROL.format(calls=calls, show=show)
    if sleep:
        body = body.replace("case", f"sleep {sleep}\ncase", 1)
    scontrol.write_text(body)
    scontrol.chmod(0o755)
    return out, calls, scontrol


def _annotate(env, *args, timeout=60):
    # An epilog's environment: no PATH, the job's variables only.
    full = {"PYTHONPATH": str(ROOT), "SLURM_JOB_ID": "42", **env}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "classifier", "slurm-annotate", *args],
                          capture_output=True, text=True, env=full, cwd="/", timeout=timeout)
    return proc, time.monotonic() - start


def test_task_epilog_sets_the_comment_while_the_job_runs(tmp_path):
    out, calls, scontrol = _fake_job(tmp_path, "RUNNING")
    proc, _ = _annotate({"DSDIAG_SCONTROL": str(scontrol), "SLURM_SCRIPT_CONTEXT": "epilog_task"})
    assert proc.returncode == 0, proc.stderr
    update = [c for c in calls.read_text().splitlines() if c.startswith("update")]
    assert update == ["update JobId=42 Comment=dsdiag: gpu_oom [config] fix first: The PyTorch "
                      "caching allocator could not satisfy a device allocation (slurm-42.out:185 rank 3); "
                      "culprit rank 3 on gpu-node-01: the other 15 ranks lost their connection to it or "
                      "timed out waiting for it"]
    assert not Path(str(out) + ".dsdiag.json").exists()


def test_task_epilog_of_an_srun_step_does_nothing(tmp_path):
    _, calls, scontrol = _fake_job(tmp_path, "RUNNING")
    proc, _ = _annotate({"DSDIAG_SCONTROL": str(scontrol), "SLURM_SCRIPT_CONTEXT": "epilog_task",
                         "SLURM_STEP_ID": "0"})
    assert proc.returncode == 0 and not calls.exists()


def test_epilog_writes_the_sidecar_when_scontrol_refuses(tmp_path):
    out, calls, scontrol = _fake_job(tmp_path, "COMPLETING")
    secret = b"export WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567\n"
    out.write_bytes(out.read_bytes() + b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. " + secret)
    proc, _ = _annotate({"DSDIAG_SCONTROL": str(scontrol), "SLURM_SCRIPT_CONTEXT": "epilog_slurmd",
                         "SLURMD_NODENAME": "gpu-node-01"}, "--mode", "comment")
    assert proc.returncode == 0
    assert "Job has already finished" in proc.stderr
    d = json.loads(Path(str(out) + ".dsdiag.json").read_text())
    assert d["category"] == "gpu_oom" and d["retryable"] is False
    text = json.dumps(d)
    assert "0123456789abcdef0123456789abcdef01234567" not in text and "[REDACTED:secret-env]" in text


def test_epilog_on_another_node_than_the_batch_host_does_nothing(tmp_path):
    out, _, scontrol = _fake_job(tmp_path, "COMPLETING")
    proc, _ = _annotate({"DSDIAG_SCONTROL": str(scontrol), "SLURM_SCRIPT_CONTEXT": "epilog_slurmd",
                         "SLURMD_NODENAME": "gpu-node-02"})
    assert proc.returncode == 0 and not Path(str(out) + ".dsdiag.json").exists()


def test_without_scontrol_the_stdout_pattern_is_expanded(tmp_path):
    out = tmp_path / "train-77.out"
    out.write_bytes(DEMO.read_bytes())
    proc, _ = _annotate({"SLURM_JOB_ID": "77", "SLURM_JOB_STDOUT": str(tmp_path / "train-%j.out"),
                         "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld",
                         "DSDIAG_SCONTROL": str(tmp_path / "missing-scontrol")})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(Path(str(out) + ".dsdiag.json").read_text())["category"] == "gpu_oom"


def test_healthy_job_is_left_alone(tmp_path):
    out, calls, scontrol = _fake_job(tmp_path, "COMPLETED", log_bytes=b"step 1 loss 2.0\ndone\n")
    proc, _ = _annotate({"DSDIAG_SCONTROL": str(scontrol)})
    assert proc.returncode == 0 and not Path(str(out) + ".dsdiag.json").exists()


@pytest.mark.parametrize("env", [{}, {"SLURM_JOB_ID": ""}, {"DSDIAG_SCONTROL": "/nonexistent"}])
def test_always_exits_0(env):
    proc, _ = _annotate(env)
    assert proc.returncode == 0


def test_always_exits_0_on_bad_arguments_and_within_the_budget(tmp_path):
    assert _annotate({}, "--no-such-option")[0].returncode == 0
    _, _, scontrol = _fake_job(tmp_path, "RUNNING", sleep=30)
    proc, took = _annotate({"DSDIAG_SCONTROL": str(scontrol)}, "--budget", "2")
    assert proc.returncode == 0 and took < 10
    assert "budget" in proc.stderr or "timed out" in proc.stderr


# ---------------------------------------------------------------- a real single-node Slurm

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/sbatch",
            "/usr/bin/scontrol")


def _ensure_slurm_installed():
    if all(os.path.exists(b) for b in BINARIES):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("Slurm is not installed and this is not a root Debian machine to install it")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=120"]
    subprocess.run(["apt-get", *lock, "update", "-q"], env=env, check=True, timeout=300,
                   capture_output=True)
    subprocess.run(["apt-get", *lock, "install", "-y", "-q", "--no-install-recommends", *PACKAGES],
                   env=env, check=True, timeout=600, capture_output=True)
    missing = [b for b in BINARIES if not os.path.exists(b)]
    assert not missing, f"installed {PACKAGES} but {missing} are missing"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


SLURM_CONF = """\
ClusterName=dsdiagtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge/munge.socket
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
PlugStackConfig={d}/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
SlurmdParameters=config_overrides
TaskEpilog={d}/dsdiag-task-epilog
Epilog={d}/dsdiag-epilog
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""

# The wrappers slurm.conf points at: absolute paths only, no PATH assumed (docs/integrations.md).
WRAPPER = """#!/bin/sh
PYTHONPATH={root}
export PYTHONPATH
exec {python} -m classifier slurm-annotate --budget 20 {extra}
"""


class Cluster:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="dsdiag-slurm-"))
        self.procs = []
        self.env = {**os.environ, "SLURM_CONF": str(self.dir / "slurm.conf")}

    def start(self):
        d = self.dir
        for sub in ("munge", "state", "spool", "log", "out"):
            (d / sub).mkdir()
        (d / "munge").chmod(0o700)
        (d / "out").chmod(0o777)
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (d / "plugstack.conf").write_text("")
        for name, extra in (("dsdiag-task-epilog", ""), ("dsdiag-epilog", "")):
            path = d / name
            path.write_text(WRAPPER.format(root=ROOT, python=sys.executable, extra=extra))
            path.chmod(0o755)
        host = socket.gethostname().split(".")[0]
        (d / "slurm.conf").write_text(SLURM_CONF.format(
            host=host, d=d, ctld_port=_free_port(), slurmd_port=_free_port(),
            cpus=os.cpu_count() or 1))
        munge = d / "munge"
        self._spawn(["/usr/sbin/munged", "-F", "--force", f"--key-file={key}",
                     f"--socket={munge}/munge.socket", f"--pid-file={munge}/munged.pid",
                     f"--log-file={munge}/munged.log", f"--seed-file={munge}/munged.seed"])
        _wait(lambda: (munge / "munge.socket").exists(), 10, "munged's socket")
        conf = str(d / "slurm.conf")
        self._spawn(["/usr/sbin/slurmctld", "-D", "-i", "-f", conf])
        self._spawn(["/usr/sbin/slurmd", "-D", "-f", conf])
        _wait(self._node_ready, 30, "the node to come up idle")

    def _spawn(self, argv):
        log = open(self.dir / "log" / (Path(argv[0]).name + ".stderr"), "wb")
        self.procs.append(subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                           env=self.env, start_new_session=True))
        log.close()

    def scontrol(self, *args, check=True):
        proc = subprocess.run(["/usr/bin/scontrol", *args], capture_output=True, text=True,
                              env=self.env, timeout=15)
        if check and proc.returncode != 0:
            raise AssertionError(f"scontrol {' '.join(args)}: {proc.stderr}")
        return proc.stdout

    def _node_ready(self):
        for p in self.procs:
            if p.poll() is not None:
                raise AssertionError(f"{p.args[0]} exited with {p.returncode}: {self.logs()}")
        out = self.scontrol("show", "node", check=False)
        return "State=IDLE" in out

    def sbatch(self, script):
        path = self.dir / "job.sh"
        path.write_text(script)
        proc = subprocess.run(["/usr/bin/sbatch", "--parsable", str(path)], capture_output=True,
                              text=True, env=self.env, timeout=15, cwd=self.dir)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip().split(";")[0]

    def logs(self):
        out = []
        for log in sorted((self.dir / "log").glob("*")):
            out.append(f"== {log.name}\n" + log.read_text(errors="replace")[-3000:])
        return "\n".join(out)

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm():
    _ensure_slurm_installed()
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


JOB = """#!/bin/bash
#SBATCH --job-name=zero3-train
#SBATCH --output={out}/train-%j.out
#SBATCH --comment="run 17"
cat '{demo}'
exit 1
"""


def test_real_slurm_job_gets_comment_and_sidecar(slurm):
    start = time.monotonic()
    job_id = slurm.sbatch(JOB.format(out=slurm.dir / "out", demo=DEMO))
    finished = ("FAILED", "COMPLETED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")

    def done():
        info = parse_show_job(slurm.scontrol("show", "job", job_id))
        return info if info.get("JobState") in finished else None

    info = _wait(done, 45, f"job {job_id} to finish\n{slurm.logs()}")
    assert info["JobState"] == "FAILED"
    stdout = slurm.dir / "out" / f"train-{job_id}.out"
    assert info["StdOut"] == str(stdout)
    assert stdout.read_bytes() == DEMO.read_bytes()
    # TaskEpilog, while the job still ran: the verdict joined the user's own comment.
    assert info["Comment"].startswith("run 17 | dsdiag: gpu_oom [config] fix first: "), \
        f"{info.get('Comment')}\n{slurm.logs()}"
    assert f"(train-{job_id}.out:185 rank 3)" in info["Comment"]
    # Epilog, after the job finished (no PATH there): the sidecar next to the expanded StdOut.
    sidecar = Path(str(stdout) + ".dsdiag.json")
    d = json.loads(_wait(lambda: sidecar.exists() and sidecar.read_text(), 10, "the sidecar"))
    assert d["category"] == "gpu_oom" and d["retryable"] is False
    assert d["evidence"][0]["file"] == str(stdout) and d["evidence"][0]["line"] == 185
    assert time.monotonic() - start < 60


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_epilog_as_root_reads_and_writes_with_the_job_users_rights():
    import pwd
    nobody = pwd.getpwnam("nobody")
    d = Path(tempfile.mkdtemp(prefix="dsdiag-epilog-"))
    try:
        d.chmod(0o755)
        out = d / "out"
        out.mkdir()
        os.chown(out, nobody.pw_uid, nobody.pw_gid)
        log, calls, scontrol = _fake_job(out, "COMPLETING")
        os.chown(log, nobody.pw_uid, nobody.pw_gid)
        log.chmod(0o600)
        env = {"DSDIAG_SCONTROL": str(scontrol), "SLURM_SCRIPT_CONTEXT": "epilog_slurmd",
               "SLURM_JOB_UID": str(nobody.pw_uid), "SLURM_JOB_GID": str(nobody.pw_gid)}
        proc, _ = _annotate(env)
        sidecar = Path(str(log) + ".dsdiag.json")
        assert proc.returncode == 0 and sidecar.exists(), proc.stderr
        assert sidecar.stat().st_uid == nobody.pw_uid
        assert json.loads(sidecar.read_text())["category"] == "gpu_oom"
        # A log the job's user cannot read is not read for them by root.
        sidecar.unlink()
        os.chown(log, 0, 0)
        proc, _ = _annotate(env)
        assert proc.returncode == 0 and not sidecar.exists()
        assert "Permission denied" in proc.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)
