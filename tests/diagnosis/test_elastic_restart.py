"""A job torchelastic restarted (`--max_restarts`) whose next attempt finished failed nothing;
one whose last attempt failed again did (probe 55d, torch 2.13 torchrun on gloo)."""

from classifier.diagnosis.diagnose import diagnose_job

FIRST_ATTEMPT = """\
step 0 loss 1.4130
step 1 loss 1.4767
[rank1]: Traceback (most recent call last):
[rank1]:   File "/work/job.py", line 213, in main
[rank1]:     batch = next(shards)
[rank1]: RuntimeError: worker hit a transient error reading shard 3
[rank0]: Traceback (most recent call last):
[rank0]:   File "/work/job.py", line 180, in main
[rank0]:     dist.all_reduce(avg)
[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:7355. This is typically caused by a remote worker crashing. Check the logs of the remote worker before reporting an error. GLHF!
W1206 01:53:25.852000 8785 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 8787 closing signal SIGTERM
E1206 01:53:25.888000 8785 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 8788) of binary: /usr/bin/python3
"""
FINISHED = """\
step 0 loss 1.4130
step 1 loss 1.4767
step 2 loss 1.4503
step 3 loss 1.4433
training finished
"""
FAILED_AGAIN = """\
Traceback (most recent call last):
  File "/usr/bin/torchrun", line 6, in <module>
    sys.exit(main())
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
/work/job.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 8801)
============================================================
"""


def _diagnose(tmp_path, text):
    log = tmp_path / "job.log"
    log.write_text(text)
    return diagnose_job([str(log)])


def test_a_restarted_run_that_finished_is_healthy(tmp_path):
    assert _diagnose(tmp_path, FIRST_ATTEMPT + FINISHED)["category"] == "none"
    # the first attempt's only failure a rule reads (the peer's lost connection) is survived too
    peer_only = "".join(l + "\n" for l in FIRST_ATTEMPT.splitlines() if not l.startswith("[rank1]"))
    assert _diagnose(tmp_path, peer_only + FINISHED)["category"] == "none"


def test_a_restart_that_failed_again_or_did_not_finish_is_a_failure(tmp_path):
    again = FIRST_ATTEMPT + "step 0 loss 1.4130\n" + FIRST_ATTEMPT.split("step 1 loss 1.4767\n", 1)[1] + FAILED_AGAIN
    assert _diagnose(tmp_path, again)["category"] == "unknown"
    # the next attempt's steps, but no word that the run finished (a paste cut there)
    cut = FIRST_ATTEMPT + FINISHED.replace("training finished\n", "")
    assert _diagnose(tmp_path, cut)["category"] == "unknown"
    # a failure without torchelastic's restart, then a line that says finished: not a restart
    no_agent = FIRST_ATTEMPT.replace("failed (exitcode: 1) local_rank: 1 (pid: 8788) of binary: /usr/bin/python3",
                                     "Sending process 8788 closing signal SIGTERM")
    assert _diagnose(tmp_path, no_agent + FINISHED)["category"] != "none"


def test_a_summary_that_counts_no_failure_is_no_failure(tmp_path):
    healthy = FINISHED + "eval: 200 samples, errors=0, failed=0\nsummary: 0 ERROR, 0 FAILED, 12 PASSED\nFAILED: 0\n"
    assert _diagnose(tmp_path, healthy)["category"] == "none"
    assert _diagnose(tmp_path, FINISHED + "summary: 2 FAILED, 10 PASSED\n")["category"] == "unknown"


def test_a_restarted_rounds_connect_failure_far_after_the_report_is_its_echo(tmp_path):
    # LOGLEVEL=INFO: the agent's rendezvous lines put the restarted round's gloo failure more
    # than the rules' 50 lines of context after the report; the first attempt's error decides.
    rendezvous = "".join(f"I1206 01:56:07.543000 15475 torch/distributed/elastic/agent/server/api.py:553]   key_{i}=value\n"
                         for i in range(60))
    restarted = ("[E1206 01:57:23.077279184 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with "
                 "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: "
                 "SO_ERROR: Connection refused, remote=[127.0.0.1]:21399$1\n")
    d = _diagnose(tmp_path, FIRST_ATTEMPT + rendezvous + restarted + FAILED_AGAIN)
    assert d["category"] == "unknown"
    assert "transient error reading shard 3" in d["evidence"][0]["text"]
    # the same failure with no worker reported failed before it is the network's
    assert _diagnose(tmp_path, rendezvous + restarted + FAILED_AGAIN)["category"] == "connection_failure"
