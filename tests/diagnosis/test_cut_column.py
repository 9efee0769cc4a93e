"""A paste whose every long line a log viewer cut at one column (the rest lost, not wrapped):
a line cut there is read as a message cut where it stops (cutend.py), as a paste's last one."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.paste import cut_width

RANK = """[default1]:rank 1 step 0 loss 0.4967
[default1]:rank 1 step 1 loss 0.6168
[default1]:[rank1]: Traceback (most recent call last):
[default1]:[rank1]:   File "/workspace/scenarios/train_dist.py", line 92, in <module>
[default1]:[rank1]:     main(args)
[default1]:[rank1]:   File "/workspace/scenarios/train_dist.py", line 72, in main
[default1]:[rank1]:     big = torch.empty(64 * 1024 ** 3 // 4, dtype=torch.float32)
[default1]:[rank1]: RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to allocate 68719476736 bytes. Error code 12 (Cannot allocate memory)
[default0]:rank 0 step 0 loss 0.3397
[default0]:[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:22416. This is typically a sign that the other process died
W1203 03:19:47.977000 25769 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 25771 closing signal SIGTERM
E1203 03:19:48.170000 25769 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 25772) of binary: /usr/bin/python3
"""
DRIVER = """/home/user/envs/llm/lib/python3.10/site-packages/torch/cuda/__init__.py:138: UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)
  return torch._C._cuda_getDeviceCount() > 0
Traceback (most recent call last):
  File "/home/user/src/train_bash.py", line 14, in <module>
    main()
"""


def _viewer(text, width=160):
    return "\n".join(line[:width] for line in text.split("\n"))


@pytest.mark.parametrize("text, want", [(RANK, "host_oom"), (DRIVER, "version_mismatch")])
def test_lines_cut_at_a_viewer_column_keep_their_category(text, want, tmp_path):
    log = tmp_path / "paste.log"
    for form in (text, _viewer(text)):
        log.write_text(form)
        assert diagnose_job([str(log)])["category"] == want


@pytest.mark.parametrize("texts, width", [
    (["ab" * 80, "short", "cd" * 75], 160),
    (["ab" * 79 + "a-", "short"], None),  # no line stops inside a word there
    (["ab" * 75, "short"], None),         # no usual width
    (["=" * 120, "short"], None),         # a ruler
    (["ab" * 40, "short"], None),         # narrower than a viewer's cut is told from a wrap
])
def test_cut_width(texts, width):
    assert cut_width(texts) == width


HEARTBEAT = """[rank8]:[W318 10:00:41.929037914 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0 Rank 8] Failed to check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Connection reset by peer
[rank12]:[W318 10:00:41.915284135 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=135, addr=[node-0-1.svc.cluster.local]:48750, remote=[node-0.pod.cluster.local]:20000): Connection reset by peer
Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:679 (most recent call first):
"""


@pytest.mark.parametrize("cut", [lambda text: _viewer(text), lambda text: text[:text.index("remote=") + 9]])
def test_a_cut_message_is_held_off_by_what_holds_the_whole_one_off(cut, tmp_path):
    # the store's socket failing beside the NCCL heartbeat's dump-flag poll is teardown chatter
    log = tmp_path / "paste.log"
    for form in (HEARTBEAT, cut(HEARTBEAT)):
        log.write_text(form)
        assert diagnose_job([str(log)])["category"] != "connection_failure"


# The same viewer's cut behind a label a collector put in front of every line (learned by
# paste.learned_prefix, not one the peeler reads): the column counts from the line's start.
STAMPED = """Wed Jul 19 10:40:45 2017[1,56]<stderr>:F0719 10:40:45.100778 26612 LightNetwork.cpp:397] Check failed: error >= 0 ERROR connecting to 10.87.137.19: Connection refused [111]
Wed Jul 19 10:40:45 2017[1,56]<stderr>:*** Check failure stack trace: ***
Wed Jul 19 10:40:45 2017[1,56]<stderr>:    @           0x91316d  google::LogMessage::Fail()
Wed Jul 19 10:40:45 2017[1,56]<stderr>:    @           0x916c1c  google::LogMessage::SendToLog()
"""


def test_a_viewer_cut_behind_a_learned_label(tmp_path):
    log = tmp_path / "paste.log"
    for form in (STAMPED, _viewer(STAMPED)):
        log.write_text(form)
        assert diagnose_job([str(log)])["category"] == "connection_failure"
    log.write_text(_viewer(STAMPED, 140))  # cut before the reason: nothing says why
    assert diagnose_job([str(log)])["category"] != "connection_failure"
