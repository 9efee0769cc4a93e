"""A paste cut in the middle of its last line: an unambiguous prefix counts, an ambiguous one not."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job

HEAD = "step 10 loss 1.2\nstep 11 loss 1.1\n"


def _diagnose(tmp_path, text, use_model=True):
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return diagnose_job([str(log)], use_model=use_model)


@pytest.mark.parametrize("cut, category", [
    # fixed wording cut inside a word: nothing after the cut could change what it says
    ("[rank3]:[E901 05:20:03.445217639 ProcessGroupNCCL.cpp:684] [Rank 3] Some NCCL operations "
     "have failed or timed ou", "nccl_timeout"),
    ("[rank0]: AssertionError: Check batch related parameters. train_batch_size is not equal to "
     "micr", "batch_size_mismatch"),
    ("[W427 01:04:16.149509694 socket.cpp:752] [c10d] The client socket has failed to connect to",
     "connection_failure"),
    # the rest is wording variants of one message (`sm_` or `compute_`)
    ("nvcc fatal   : Unsupported gpu arc", "op_build_error"),
    # a digit inside a word is wording, not a number the pattern names
    ("ValueError: Your setup doesn", "precision_conflict"),
    # a one-digit number is wording (`greater than 0`), and three names after the cut are
    # variants of one message (`port`, `rank`, `world size` missing from a tcp:// URL)
    ("[rank0]: AssertionError: Gradient accumulation steps: 0 has to be gr", "batch_size_mismatch"),
    ("ValueError: Error initializing torch.distributed using tcp:// rendezvo", "env_var_missing"),
    # shorter than MIN_CUT, but most of a keyword read and only fixed wording left to its end
    ("[rank1]: RuntimeError: CUDA error: uncorrectable EC", "gpu_hardware"),
    ("CUDA error: uncorrectable ECC er", "gpu_hardware"),
    ("uncorrectable ECC err", "gpu_hardware"),  # a line shorter than MIN_CUT
    ('  File "train.py", line 40, in step\nValueError("Attempting to unsc', "precision_conflict"),
])
def test_an_unambiguous_prefix_names_the_failure_with_lower_confidence(cut, category, tmp_path):
    d = _diagnose(tmp_path, HEAD + cut)
    assert d["category"] == category and "message_cut" in d["facts"]
    whole = _diagnose(tmp_path, HEAD + cut + "x\n" + "step 12 loss 1.0\n")  # not at the end
    assert "message_cut" not in whole["facts"]


@pytest.mark.parametrize("cut", [
    # the keyword argument that decides (a renamed API, a config field, a scheduler argument)
    # was cut off: three categories could follow
    "TypeError: Accelerator.__init__() got an unexpected",
    # one rule only, but the list of names it needs is after the cut
    "TypeError: forward() got an unexpected",
    "TypeError: ReftTrainer.compute_loss() got an unexpected",
    # a number the rule names (ssh's 255) was cut off: `exit code 250` is no unreachable host
    "pdsh@worker-0: worker-1: ssh exi",
    # a choice of a few codes was cut off: gai error -2/-3/-5 is a name that does not resolve,
    # while 8, 11001 or -9 on the IPv6 lookup is a healthy macOS, Windows or IPv4-only host
    "[W socket.cpp:697] [c10d] The IPv6 network addresses of (XPITDN0502269.local, 56412) cannot be retri",
    # the dtype that makes it a precision clash (Half, BFloat16) and not a Long index was cut
    "RuntimeError: Expected object of scalar type Float but got",
    # free text cut before any of the rule's words: this path could as well have gone on to
    # `.cu:4:2: error:` (a compiler error) as to a missing script; the `: error:` the compiler
    # rule looks for lies before the match, in slurmstepd's own prefix
    "slurmstepd: error: execve(): /tmp/slurmd/job00089/slu",
    "nvcc: error: /usr/local/cuda/include/cuda_runtime_api.h/tmp/build/ops/csrc/adam/multi_tensor_a",
    # a short match held to fixed wording: the scale of 1 that makes a collapse was cut off (an
    # early skip is healthy), as was the half-precision dtype; or too little of a keyword read
    "[INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss sca",
    "RuntimeError: expected scalar typ",
    "RuntimeError: CUDA error: unc",
    # ... and a line that ends with a whole word may well be whole (a setting's comment)
    "NCCL_IB_RETRY_CNT=7  # transport retry counter",
    # the source line shown under a frame, cut: argparse's own code, not its message
    '  File "/usr/lib/python3.11/argparse.py", line 2156, in _parse_known_args\n'
    "    self.error(_('the following arguments are re",
    '  File "/opt/venv/lib/python3.10/site-packages/torch/distributed/run.py", line 88, in main\n'
    '    msg = "Some NCCL operations have failed or timed ou',
])
def test_a_prefix_cut_before_what_decides_is_not_a_cause(cut, tmp_path):
    # The rules and the cut-end matcher only: the fallback model may still guess from the words
    # left (`got an unexpected` is most often an API renamed between versions), and says so
    # with source "model" and its own probability (tests/diagnosis/test_fallback.py).
    d = _diagnose(tmp_path, HEAD + cut, use_model=False)
    assert "message_cut" not in d["facts"]
    assert d["category"] in ("none", "unknown")
    guessed = _diagnose(tmp_path, HEAD + cut)
    assert "message_cut" not in guessed["facts"] and guessed["source"] in ("none", "model")


def test_a_cut_copy_of_a_repeated_healthy_warning_stays_healthy(tmp_path):
    # torch warns for each IPv6 address it cannot use (errno 97) and goes on: the cut copy is
    # the same warning, not a connect failure
    warning = ("[W socket.cpp:601] [c10d] The client socket cannot be initialized to connect to "
               "[localhost.localdomain]:12355 (errno: 97 - Address family not supported by protocol).")
    text = HEAD + (warning + "\n") * 3 + warning[:100]
    assert _diagnose(tmp_path, text)["category"] == "none"


def test_a_cut_copy_of_a_repeated_failure_line_counts_as_one_more(tmp_path):
    retry = "node1:2011:2011 [0] NCCL INFO Call to connect returned Connection timed out, retrying"
    d = _diagnose(tmp_path, (retry + "\n") * 5 + retry[:-2])
    assert d["category"] == "nccl_network" and d["facts"]["retries"] == 6

