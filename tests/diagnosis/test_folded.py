"""A paste lower-cased as a whole: its rules' patterns ignore case; one capital anywhere before
keeps an ordinary log case-sensitive."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job

WORKER = """\
[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-0]:29500 (errno: 113 - No route to host).
Traceback (most recent call last):
  File "/workspace/train.py", line 88, in <module>
    main()
torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to connect to (node-0, 29500).
"""
NCCL = """\
node1:1234:5678 [3] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer node2<54321>
RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.19.3
"""


def _diagnose(tmp_path, text):
    log = tmp_path / "job.log"
    log.write_text(text)
    return diagnose_job([str(log)])


@pytest.mark.parametrize("text, category", [(WORKER, "connection_failure"), (NCCL, "nccl_network")])
def test_a_lower_cased_paste_gets_the_same_category(tmp_path, text, category):
    assert _diagnose(tmp_path, text)["category"] == category
    assert _diagnose(tmp_path, text.lower())["category"] == category


def test_one_capital_before_keeps_the_patterns_case_sensitive(tmp_path):
    # NCCL's WARN line alone: the RuntimeError under it says "remote process exited or there
    # was a network error" in lower case already, which reads in any log
    body = NCCL.splitlines()[0].lower()
    assert _diagnose(tmp_path, "starting run\n" + body)["category"] == "nccl_network"
    # a capital earlier in the input: an ordinary log, whose patterns keep their case
    assert _diagnose(tmp_path, "Starting run\n" + body)["category"] != "nccl_network"
