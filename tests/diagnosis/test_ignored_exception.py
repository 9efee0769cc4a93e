"""CPython's `Exception ignored in ...` blocks (an exception it could not raise: a `__del__`,
an atexit callback) are no failure; a crash before or after one still is."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job

DEL_BLOCK = """\
Exception ignored in: <bound method _DataLoaderIter.__del__ of <torch.utils.data.dataloader._DataLoaderIter object at 0x7ff940e565c0>>
Traceback (most recent call last):
  File "/opt/conda/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 399, in __del__
    self._shutdown_workers()
  File "/opt/conda/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 378, in _shutdown_workers
    self.worker_result_queue.get()
  File "/opt/conda/lib/python3.6/multiprocessing/reduction.py", line 153, in recvfds
    msg, ancdata, flags, addr = sock.recvmsg(1, socket.CMSG_LEN(bytes_size))
ConnectionResetError: [Errno 104] Connection reset by peer
"""
ATEXIT_BLOCK = """\
Exception ignored in atexit callback: <function _MultiProcessingDataLoaderIter._clean_up_worker at 0x7f9c62150360>
Traceback (most recent call last):
  File "/envs/x/lib/python3.12/site-packages/torch/utils/data/dataloader.py", line 1703, in _clean_up_worker
    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
  File "/envs/x/lib/python3.12/multiprocessing/process.py", line 149, in join
    res = self._popen.wait(timeout)
KeyboardInterrupt:
"""
NO_TRACEBACK = """\
Exception ignored in: <function tqdm.__del__ at 0x15131159ef70>
AttributeError: 'tqdm' object has no attribute 'disp'
"""
# cut before the exception line, frames only
CUT = "\n".join(DEL_BLOCK.splitlines()[:7]) + "\n"
RANKED = "".join(f"[rank{r}]: {line}\n" for line in DEL_BLOCK.splitlines() for r in (0, 1))
CHAINED = DEL_BLOCK + """
During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/opt/conda/lib/python3.6/multiprocessing/connection.py", line 250, in recv
    buf = self._recv_bytes()
EOFError
"""
STEP = "epoch 3 iter 200 loss 0.532\n"
CRASH = """\
Traceback (most recent call last):
  File "train.py", line 88, in <module>
    main()
ValueError: labels and logits have different shapes
"""


def _category(tmp_path, text):
    path = tmp_path / "job.log"
    path.write_text(text)
    return diagnose_job([str(path)])["category"]


@pytest.mark.parametrize("text", [DEL_BLOCK, ATEXIT_BLOCK, NO_TRACEBACK, CUT, RANKED, CHAINED,
                                  STEP + DEL_BLOCK + STEP + NO_TRACEBACK + STEP],
                         ids=["del", "atexit", "no-traceback", "cut", "ranked", "chained", "between-steps"])
def test_an_ignored_exception_is_no_failure(tmp_path, text):
    assert _category(tmp_path, text) == "none"


@pytest.mark.parametrize("text", [CRASH + DEL_BLOCK, DEL_BLOCK + CRASH, CUT + CRASH,
                                  NO_TRACEBACK + CRASH],
                         ids=["crash-then-block", "block-then-crash", "cut-block-then-crash",
                              "one-line-block-then-crash"])
def test_a_crash_beside_an_ignored_exception_is_still_one(tmp_path, text):
    assert _category(tmp_path, text) == "unknown"
