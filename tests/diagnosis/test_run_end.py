"""A log with no failure that stops while training says so, and one that finished does not."""

import pytest
import yaml

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.runstate import PROGRESS
from conftest import DEMO, ROOT, diagnose_json, run_dsdiag

HEALTHY = ROOT / "corpus" / "none"
REAL_RUNS = sorted(p for p in HEALTHY.glob("*.log")
                   if yaml.safe_load(p.with_suffix(".yaml").read_text())["origin"] == "real-run")

STEPS = ("[2024-03-11 09:50:01,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[1e-05], mom=[(0.9, 0.999)]\n"
         "{'loss': 1.2345, 'grad_norm': 0.9, 'learning_rate': 1e-05, 'epoch': 0.5}\n"
         "[2024-03-11 09:50:31,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=20, skipped=0, lr=[1e-05], mom=[(0.9, 0.999)]\n")
# How real runs end, by the program that prints it last.
ENDINGS = {
    "deepspeed launcher": "[2024-03-11 09:53:10,122] [INFO] [launch.py:347:main] Process 1213 exits successfully.\n",
    "hf trainer": "{'train_runtime': 589.1, 'train_samples_per_second': 43.4, 'train_loss': 1.51, 'epoch': 1.0}\n"
                  "Saving model checkpoint to ./out/final\n",
    "torchelastic agent": "INFO:torch.distributed.elastic.agent.server.api:[default] worker group successfully "
                          "finished. Waiting 300 seconds for other agents to finish.\n",
    "lightning": "`Trainer.fit` stopped: `max_steps=20` reached.\n",
    "megatron": " validation loss at the end of training for val data | lm loss value: 2.318004E+00 |\n",
    "torch exit": "[rank0]:[W1105 16:14:01.000118033 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group "
                  "has NOT been destroyed before we destruct ProcessGroupNCCL.\n",
    "own words": "rank 0 done\n",
}


def _warnings(d):
    return {w["code"] for w in d["warnings"]}


def test_real_healthy_runs_are_not_said_to_stop_mid_run():
    assert len(REAL_RUNS) >= 5
    for path in REAL_RUNS:
        d = diagnose_job([str(path)])
        assert d["category"] == "none" and "ends_mid_run" not in _warnings(d), path.name
        assert d["confidence"] == 0.8, path.name


def test_the_same_runs_cut_after_their_last_step_are(tmp_path):
    cut_any = 0
    for path in REAL_RUNS:
        lines = path.read_text().splitlines(keepends=True)
        steps = [i for i, line in enumerate(lines) if PROGRESS.search(line)]
        if not steps:
            continue
        cut = tmp_path / path.name
        cut.write_text("".join(lines[: steps[-1] + 1]))
        d = diagnose_job([str(cut)])
        assert d["category"] == "none" and "ends_mid_run" in _warnings(d), path.name
        assert d["confidence"] == 0.5 and "ends without the run finishing" in d["title"]
        cut_any += 1
    assert cut_any >= 4


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_each_way_a_run_says_it_finished(tmp_path, ending):
    path = tmp_path / "run.log"
    path.write_text(STEPS)
    assert "ends_mid_run" in _warnings(diagnose_job([str(path)]))
    path.write_text(STEPS + ENDINGS[ending] + "some teardown chatter\n")
    d = diagnose_job([str(path)])
    assert d["category"] == "none" and "ends_mid_run" not in _warnings(d)


def test_a_log_without_training_steps_is_not_judged():
    d = diagnose_job([str(ROOT / "tests" / "logs" / "healthy.log")])
    assert d["category"] == "none" and "ends_mid_run" not in _warnings(d)


def test_a_failure_is_not_touched():
    _, d = diagnose_json(DEMO)
    assert d["category"] == "gpu_oom" and "ends_mid_run" not in _warnings(d)


def test_the_report_says_it_in_words():
    proc = run_dsdiag(stdin=STEPS.encode())
    out = proc.stdout.decode()
    assert proc.returncode == 1
    assert "no failure found, but the log ends without the run finishing" in out


HOST_FULL = ("[2023-04-20 19:03:19,578] [INFO] [utils.py:831:see_memory_usage] After creating fp32 partitions\n"
             "[2023-04-20 19:03:19,581] [INFO] [utils.py:840:see_memory_usage] CPU Virtual Memory:  "
             "used = 29.71 GB, percent = 95.3%\n")


def test_a_log_that_stops_on_full_host_memory_is_host_oom(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(HOST_FULL + "[2023-04-20 19:03:19,633] [INFO] [utils.py:831:see_memory_usage] Before init\n")
    assert diagnose_job([str(path)])["rule"] == "host_oom.host_memory_nearly_full_at_end"
    # the run went on past the reading: healthy
    path.write_text(HOST_FULL + STEPS * 5)
    assert diagnose_job([str(path)])["category"] == "none"
    # an exception no rule explains comes after it: that is the failure
    path.write_text(HOST_FULL + "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                    "KeyError: 'labels'\n")
    assert diagnose_job([str(path)])["category"] == "unknown"


SSH_LOGIN = ("debug1: Connecting to worker-2 [10.0.0.12] port 22.\n"
             "debug1: Server host key: ssh-ed25519 SHA256:Qm3xv0aQ\n"
             "debug1: SSH2_MSG_NEWKEYS received\n"
             "debug1: Authentications that can continue: publickey,password\n"
             "debug1: Next authentication method: publickey\n"
             "debug1: Offering public key: /root/.ssh/id_ed25519 ED25519 SHA256:Zx9\n")
SSH_SESSION = ("debug1: Server accepts key: /root/.ssh/id_ed25519 ED25519 SHA256:Zx9\n"
               "debug1: Authentication succeeded (publickey).\n"
               "Authenticated to worker-2 ([10.0.0.12]:22) using \"publickey\".\n"
               "debug1: channel 0: new [client-session]\n"
               "debug1: Requesting no-more-sessions@openssh.com\n"
               "debug1: Entering interactive session.\n"
               "debug1: pledge: network\n"
               "debug1: Sending environment.\n"
               "debug1: Sending env LANG = C.UTF-8\n"
               "debug1: Sending command: hostname\n"
               "worker-2\n"
               "debug1: client_input_channel_req: channel 0 rtype exit-status reply 0\n"
               "debug1: channel 0: free: client-session, nchannels 1\n"
               "Transferred: sent 2644, received 2916 bytes, in 0.2 seconds\n"
               "debug1: Exit status 0\n")


def test_an_ssh_trace_that_stops_before_login_is_a_connection_failure(tmp_path):
    path = tmp_path / "ssh.log"
    path.write_text(SSH_LOGIN)
    assert diagnose_job([str(path)])["rule"] == "connection_failure.ssh_debug_stops_before_login"
    path.write_text(SSH_LOGIN + SSH_SESSION)
    assert diagnose_job([str(path)])["category"] == "none"
