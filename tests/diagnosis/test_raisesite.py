"""A message the paste lost, read back from the raise or assert statement that printed it."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.raisesite import raise_literal

FRAMES = """\
[2024-10-29 08:12:40,115] [INFO] [config.py:1003:print_user_config]   json = {"fp16": {"enabled": true}}
[rank0]: Traceback (most recent call last):
[rank0]:   File "/work/train.py", line 88, in <module>
[rank0]:     engine, _, _, _ = deepspeed.initialize(model=model, config=args.deepspeed_config)
[rank0]:   File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 309, in __init__
[rank0]:     self._do_sanity_check()
[rank0]:   File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 1080, in _do_sanity_check
[rank0]:     raise ValueError("Type fp16 is not supported.")
"""
OP_BUILD = """\
Traceback (most recent call last):
  File "setup.py", line 120, in <module>
    ext_modules.append(builder.builder())
  File "/tmp/DeepSpeed/op_builder/builder.py", line 461, in builder
    assert_no_cuda_mismatch()
  File "/tmp/DeepSpeed/op_builder/builder.py", line 88, in assert_no_cuda_mismatch
    cuda_major, cuda_minor = installed_cuda_version()
  File "/tmp/DeepSpeed/op_builder/builder.py", line 40, in installed_cuda_version
    assert cuda_home is not None, "CUDA_HOME does not exist, unable to compile CUDA op(s)"
"""


def _diagnose(tmp_path, text):
    log = tmp_path / "job.log"
    log.write_text(text)
    return diagnose_job([str(log)])


@pytest.mark.parametrize("source, expected", [
    ('raise ValueError("Type fp16 is not supported.")', ("ValueError", "Type fp16 is not supported.")),
    ("raise RuntimeError(f'CUDA error: {msg}',", ("RuntimeError", "CUDA error: {msg}")),
    ('assert x is not None, "CUDA_HOME does not exist"', ("AssertionError", "CUDA_HOME does not exist")),
    ('assert a == b, (', None),
    ('raise ValueError(', None),            # the message sits on the next source line
    ("raise err", None),
    ("raise", None),
    ('return ValueError("no")', None),
    ('raise ValueError("say \\"hi\\" now")', ("ValueError", 'say "hi" now')),
])
def test_raise_literal(source, expected):
    assert raise_literal(source) == expected


def test_frames_that_end_on_the_raise_statement_are_diagnosed(tmp_path):
    result = _diagnose(tmp_path, FRAMES)
    assert result["category"] == "precision_conflict"
    assert "raise_statement" in result["facts"] and "message_cut" in result["facts"]
    # the evidence is the statement's line, not an invented one
    assert any(e["line"] == 8 for e in result["evidence"])


def test_an_exception_line_cut_inside_the_message(tmp_path):
    result = _diagnose(tmp_path, FRAMES + "[rank0]: ValueError: Type fp\n")
    assert result["category"] == "precision_conflict"


def test_an_assert_statement_gives_its_message(tmp_path):
    assert _diagnose(tmp_path, OP_BUILD)["category"] == "op_build_error"


def test_a_whole_message_wins_over_the_statement(tmp_path):
    # The message shown is not the statement's start: the statement is not read.
    text = FRAMES + "[rank0]: ValueError: dataset shard 3 is empty\n"
    assert _diagnose(tmp_path, text)["category"] in ("unknown", "none")


def test_a_statement_of_a_healthy_wording_stays_unexplained(tmp_path):
    text = FRAMES.replace('raise ValueError("Type fp16 is not supported.")',
                          'raise ValueError("label column missing from the csv")')
    assert _diagnose(tmp_path, text)["category"] in ("unknown", "none")



# The raising statement stands for its message: under a frame head whose `File "..."` part the
# paste cut off (`line 75, in __init__`: the statement is that traceback's, its message lost),
# or as the whole paste (the reporter quoted the line that raised: the DeepSpeed bf16 assert,
# GradScaler's unscale refusal).
@pytest.mark.parametrize("text", [
    'line 75, in __init__\n    raise ValueError("Type fp16 is not supported.")\n',
    '[rank0]: line 1080, in _do_sanity_check\n[rank0]:     raise ValueError("Type bf16 is not supported on your device.")\n',
    "line 971, in _initialize_params\n    assert not (self.bfloat16_enabled and (self.zero_optimization_stage not in {1, 2, 3})), "
    "f'bfloat16 mode is only enabled for Zero 1,2,3 currently. got {self.zero_optimization_stage}'\n",
    'raise ValueError("Attempting to unscale FP16 gradients.").\n',
    'raise ValueError("Type fp16 is not supported.")\n',
    "assert not (self.bfloat16_enabled and (self.zero_optimization_stage not in {1, 2, 3})), "
    "f'bfloat16 mode is only enabled for Zero 1,2,3 currently. got {self.zero_optimization_stage}\n",
], ids=["cut-frame-head", "cut-frame-head-ranked", "cut-frame-head-assert",
        "whole-paste-dotted", "whole-paste", "whole-paste-assert"])
def test_a_raising_statement_gives_its_message(tmp_path, text):
    result = _diagnose(tmp_path, text)
    assert result["category"] == "precision_conflict"
    assert "raise_statement" in result["facts"]


# The same whole-paste statement behind the labels a launcher, logger or paste puts in front of
# every line (a rank's, a host's, a timestamp and level, a markdown quote, a container runtime's
# JSON record), and two ranks' copies of it one under the other: still the statement alone.
@pytest.mark.parametrize("text", [
    '[rank3]:raise ValueError("Attempting to unscale FP16 gradients.")\n',
    '[rank3]: raise ValueError("Attempting to unscale FP16 gradients.")\n',
    'host-3: raise ValueError("Type fp16 is not supported.")\n',
    '2024-01-01T12:00:00.123Z INFO raise ValueError("Type fp16 is not supported.")\n',
    '2024-01-01 12:00:00 | INFO | raise ValueError("Type fp16 is not supported.")\n',
    '> raise ValueError("Attempting to unscale FP16 gradients.").\n',
    '{"log": "raise ValueError(\\"Type fp16 is not supported.\\")\\n", "stream": "stderr"}\n',
    'raise ValueError("Type fp16 is not supported.")\nraise ValueError("Type fp16 is not supported.")\n',
    "> assert not (self.bfloat16_enabled and (self.zero_optimization_stage not in {1, 2, 3})), "
    "f'bfloat16 mode is only enabled for Zero 1,2,3 currently. got {self.zero_optimization_stage}\n",
], ids=["rank-label", "rank-label-blank", "host-label", "iso-level", "pipe-level", "md-quote",
        "docker-json", "two-copies", "md-quote-assert"])
def test_a_labelled_raising_statement_gives_its_message(tmp_path, text):
    result = _diagnose(tmp_path, text)
    assert result["category"] == "precision_conflict"
    assert "raise_statement" in result["facts"]


@pytest.mark.parametrize("text", [
    # indented as a source file or a traceback prints it: code, not the reporter's quote
    '    raise ValueError("Attempting to unscale FP16 gradients.")\n',
    '[rank0]:     raise ValueError("Type fp16 is not supported.")\n',
    '> \traise ValueError("Type fp16 is not supported.")\n',
    ' raise ValueError("Type fp16 is not supported.")\n',
    # a copy that differs is another line after it
    'raise ValueError("Type fp16 is not supported.")\nraise ValueError("Type bf16 is not supported.")\n',
    # the statement with more after it, or after other lines: quoted code, not the failure
    'raise ValueError("Attempting to unscale FP16 gradients.")\nreturn scaler\n',
    'if not fp16_ok:\n    raise ValueError("Type fp16 is not supported.")\n',
    'Epoch 1 done\nraise ValueError("Type fp16 is not supported.")\n',
    # the statement alone, but of a healthy wording or raising a variable
    'raise ValueError("label column missing from the csv")\n',
    "raise err\n",
    # another exception line after it: not the statement's
    'line 75, in __init__\n    raise ValueError("Type fp16 is not supported.")\nKeyError: \'input_ids\'\n',
    # a statement of a healthy wording, or one that raises a variable
    'line 75, in __init__\n    raise ValueError("label column missing from the csv")\n',
    "line 75, in __init__\n    raise err\n",
    # a frame tail, then something else before the statement
    'line 75, in __init__\n    self._do_sanity_check()\n    raise ValueError("Type fp16 is not supported.")\n',
])
def test_a_statement_that_proves_nothing(tmp_path, text):
    assert _diagnose(tmp_path, text)["category"] in ("unknown", "none")


# IPython and rich print context lines after the arrow: a `raise ValueError(` whose message
# goes on below shows its literal on the next one, which the statement is read with.
JUPYTER_OPEN_RAISE = """\
---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In[7], line 1
----> 1 args = TrainingArguments(output_dir="out", bf16=True)

File /usr/local/lib/python3.10/dist-packages/transformers/training_args.py:1517, in TrainingArguments.__post_init__(self)
   1515 elif not self.use_cpu:
   1516     if torch.cuda.is_available() and not is_torch_bf16_gpu_available():
-> 1517         raise ValueError(
   1518             "Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0"
   1519         )
"""
RICH_OPEN_RAISE = """\
│ /usr/local/lib/python3.10/dist-packages/accelerate/state.py:820 in __init__   │
│                                                                               │
│ ❱ 820 │   │   │   │   raise ValueError(                                       │
│   821 │   │   │   │   │   "fp16 mixed precision requires a GPU (not mps)."    │
│   822 │   │   │   │   )                                                       │
"""


@pytest.mark.parametrize("text", [JUPYTER_OPEN_RAISE, RICH_OPEN_RAISE])
def test_an_open_raise_reads_the_literal_on_the_next_context_line(tmp_path, text):
    result = _diagnose(tmp_path, text)
    assert result["category"] == "precision_conflict"
    assert "message_cut" in result["facts"]


def test_an_open_raise_with_its_message_shown_is_read_from_the_message(tmp_path):
    text = JUPYTER_OPEN_RAISE + "\nValueError: label column missing from the csv\n"
    assert _diagnose(tmp_path, text)["category"] in ("unknown", "none")


def test_the_context_line_must_follow_the_arrow(tmp_path):
    # a literal two context lines down is another statement's
    text = JUPYTER_OPEN_RAISE.replace(
        '   1518             "Your setup',
        '   1518             error_code,\n   1519             "Your setup')
    assert _diagnose(tmp_path, text)["category"] in ("unknown", "none")
