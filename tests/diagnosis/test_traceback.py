"""Tracebacks read as structure: every paste form, chains, cut messages, interleaved ranks."""

import json

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.normalize import normalize
from classifier.diagnosis.read import RawLine
from classifier.diagnosis.traceback import TracebackCollector


def _records(text):
    collector = TracebackCollector()
    raw = (RawLine("job.log", i, t) for i, t in enumerate(text.splitlines(), 1))
    for line in normalize(raw):
        collector.feed(line)
    return collector.finish()


PYTHON = """\
[2024-05-01 10:00:00,000] [INFO] [launch.py:256:main] process 4242 spawned
Traceback (most recent call last):
  File "/work/train.py", line 58, in <module>
    main()
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/config.py", line 816, in _batch_assertion
    assert train_batch == micro_batch * grad_acc * self.world_size, (
AssertionError: Check batch related parameters.
"""


def test_python_traceback_frames_source_and_message():
    (r,) = _records(PYTHON)
    assert (r.type, r.message, r.cut) == ("AssertionError", "Check batch related parameters.", False)
    assert [f.func for f in r.frames] == ["<module>", "_batch_assertion"]
    assert r.frames[-1].file.endswith("deepspeed/runtime/config.py") and r.frames[-1].line == 816
    assert r.frames[-1].source.startswith("assert train_batch ==")
    assert r.anchor.lineno == 7


def test_a_traceback_cut_before_its_message_is_kept_as_cut():
    (r,) = _records("\n".join(PYTHON.splitlines()[:6]))
    assert r.cut and r.type is None and r.frames[-1].func == "_batch_assertion"
    assert r.anchor.lineno == 6


def test_frame_lines_a_terminal_hard_wrapped_are_read_whole():
    # 80 columns: the wrap falls inside the path, inside `, line N`, and after a comma
    text = """\
Traceback (most recent call last):
  File "/home/u/conda/envs/tf51/lib/python3.12/site-packages/trl/trainer/grpo_
trainer.py", line 817, in _get_per_token_logps
    for i in range(0, input_ids.size(0), batch_size):
  File "/opt/conda/lib/python3.8/site-packages/deepspeed/runtime/zero/stage3.py"
, line 1694, in _overflow_check_and_loss_scale_update
    self._update_scale(self.overflow)
  File "/opt/conda/lib/python3.8/site-packages/deepspeed/runtime/fp16/loss_scaler.py",
 line 175, in update_scale
    raise Exception(
Exception: Current loss scale already at minimum - cannot decrease scale anymore.
"""
    (r,) = _records(text)
    assert [f.func for f in r.frames] == ["_get_per_token_logps",
                                          "_overflow_check_and_loss_scale_update", "update_scale"]
    assert r.frames[0].file.endswith("trl/trainer/grpo_trainer.py") and r.frames[0].line == 817
    assert r.frames[1].source == "self._update_scale(self.overflow)"
    assert r.frames[2].file.endswith("fp16/loss_scaler.py") and r.type == "Exception"


def test_a_frame_line_wrapped_right_after_in_keeps_its_function():
    text = """\
Traceback (most recent call last):
  File "/home/user/mambaforge/envs/magvit/lib/python3.12/site-packages/torch/distributed/rendezvous.py", line 174, in
 _create_c10d_store
    return TCPStore(
RuntimeError: Socket Timeout
"""
    (r,) = _records(text)
    assert [(f.func, f.line, f.source) for f in r.frames] == [("_create_c10d_store", 174, "return TCPStore(")]


def test_a_frame_head_cut_at_the_end_of_a_paste_is_not_a_frame():
    text = """\
Traceback (most recent call last):
  File "/work/train.py", line 58, in <module>
    main()
  File "/opt/conda/lib/python3.10/site-packages/deepsp
ValueError: bad value
"""
    (r,) = _records(text)
    assert [f.func for f in r.frames] == ["<module>"] and r.type == "ValueError"


def test_ipython_traceback():
    text = """\
ValueError                                Traceback (most recent call last)
<ipython-input-10-a7819dd08378> in <module>
     19
---> 21 trainer = DefaultTrainer(cfg)

~/detectron2/detectron2/solver/lr_scheduler.py in __init__(self, optimizer, milestones)
---> 35             raise ValueError(
ValueError: Milestones should be a list of increasing integers.
"""
    (r,) = _records(text)
    assert r.type == "ValueError" and [f.func for f in r.frames] == ["<module>", "__init__"]
    assert r.frames[-1].file == "~/detectron2/detectron2/solver/lr_scheduler.py"
    assert r.frames[0].source == "trainer = DefaultTrainer(cfg)"


def test_ipython_frame_paths_with_spaces():
    # Colab mounts Google Drive as `/content/drive/My Drive/`: a frame head's path may hold
    # spaces in both IPython forms, and a prose line that starts with a path is still no frame.
    text = """\
IndexError                                Traceback (most recent call last)
<ipython-input-4-0c1d> in <module>()
----> 1 run()

/content/drive/My Drive/fid/fid score.py in calculate(path, batch_size)
---> 99     pred = model(batch)

File ~/My Drive/proj/model.py:12, in Net.forward(self, x)
---> 12     return self.fc(x)
IndexError: index 3 is out of bounds
/usr/bin/ld: cannot find -lcuda in any search path
"""
    (r,) = _records(text)
    assert [(f.file, f.func) for f in r.frames] == [
        ("<ipython-input-4-0c1d>", "<module>"),
        ("/content/drive/My Drive/fid/fid score.py", "calculate"),
        ("~/My Drive/proj/model.py", "forward")]
    assert r.frames[1].source == "pred = model(batch)"


def test_ipython8_frame_heads():
    # IPython 8 prints `File path:LINE, in Qualified.name(args)`; the cell's own frame is
    # `Cell In[N], line M`. The function is read as Python names it (the last part).
    text = """\
KeyError                                  Traceback (most recent call last)
Cell In[3], line 5
----> 5 dist.init_process_group("nccl")

File ~/conda/lib/python3.10/site-packages/torch/distributed/rendezvous.py:235, in _env_rendezvous_handler(url, timeout, **kwargs)
    234 else:
--> 235     rank = int(_get_env_or_raise("RANK"))

File C:\\envs\\x\\lib\\site-packages\\torch\\distributed\\rendezvous.py:220, in _env_rendezvous_handler.<locals>._get_env_or_raise(env_var)
    219 if not env_val:
--> 220     raise _env_error(env_var)

File /work/setup_env.py:12
---> 12 import torch
"""
    (r,) = _records(text)
    assert r.type == "KeyError" and r.cut
    assert [(f.func, f.line) for f in r.frames] == [
        ("_env_rendezvous_handler", 235), ("_get_env_or_raise", 220), ("<module>", 12)]
    assert r.frames[0].file == "~/conda/lib/python3.10/site-packages/torch/distributed/rendezvous.py"
    assert r.frames[1].file == "C:/envs/x/lib/site-packages/torch/distributed/rendezvous.py"
    assert r.frames[1].source == "raise _env_error(env_var)"
    # a sentence that starts with "File" is no frame
    assert _records("File /data/train.txt:3 was not found") == []


def test_cpp_frames_and_windows_paths():
    text = """\
[rank5]:[E901 05:20:03.446595912 ProcessGroupNCCL.cpp:1899] Process group watchdog thread terminated with exception
Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:635 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7fec075785e8 in /usr/lib/libc10.so)
Traceback (most recent call last):
  File "C:\\envs\\ds\\lib\\site-packages\\deepspeed\\runtime\\engine.py", line 12, in step
    self._take_model_step()
RuntimeError: boom
"""
    cpp, py = _records(text)
    assert cpp.frames[0].func == "checkTimeout" and cpp.frames[0].file.endswith("ProcessGroupNCCL.cpp")
    assert cpp.frames[1].func.startswith("c10::Error::Error") and cpp.cut
    assert py.frames[0].file == "C:/envs/ds/lib/site-packages/deepspeed/runtime/engine.py"
    assert py.type == "RuntimeError"


def test_chained_exceptions_are_marked():
    text = """\
Traceback (most recent call last):
  File "/x/torch/utils/cpp_extension.py", line 2100, in _run_ninja_build
    subprocess.run(command, check=True)
subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/x/torch/utils/cpp_extension.py", line 2116, in _run_ninja_build
    raise RuntimeError(message) from e
RuntimeError: Error building extension 'cpu_adam'
"""
    first, second = _records(text)
    assert not first.chained and second.chained
    assert (first.type, second.type) == ("subprocess.CalledProcessError", "RuntimeError")


def test_interleaved_ranks_do_not_mix():
    text = """\
[rank0]: Traceback (most recent call last):
[rank1]: Traceback (most recent call last):
[rank0]:   File "a.py", line 1, in f
[rank1]:   File "b.py", line 2, in g
[rank0]: KeyError: 'LOCAL_RANK'
[rank1]: ValueError: bad
"""
    by_rank = {r.rank: r for r in _records(text)}
    assert by_rank[0].frames[0].file == "a.py" and by_rank[0].type == "KeyError"
    assert by_rank[1].frames[0].func == "g" and by_rank[1].type == "ValueError"


def test_torchelastic_error_json_is_unescaped(tmp_path):
    callstack = ('Traceback (most recent call last):\n  File "/x/torch/distributed/rendezvous.py", '
                 'line 220, in _get_env_or_raise\n    raise _env_error(env_var)\nValueError\n')
    doc = {"message": {"message": "ValueError", "extraInfo": {"py_callstack": callstack}}}
    (r,) = _records(json.dumps(doc))
    assert r.frames[0].func == "_get_env_or_raise" and r.type == "ValueError"
    log = tmp_path / "error.json"
    log.write_text(json.dumps(doc, indent=2))
    d = diagnose_job([str(log)])
    assert (d["category"], d["rule"]) == ("env_var_missing", "env_var_missing.rendezvous_frames")


def test_pytest_report_frames_and_e_lines():
    from tests.diagnosis.test_structure import PYTEST
    (r,) = _records(PYTEST)
    assert r.type == "AssertionError" and not r.cut
    assert [f.func for f in r.frames] == ["initialize", "__init__", "_configure_train_batch_size"]
    assert r.frames[-1].file.endswith("deepspeed/runtime/config.py") and r.frames[-1].line == 868


RICH = """\
╭─────────────────────────────── Traceback (most recent call last) ────────────────────────────────╮
│ /lus/grand/projects/x/miniconda3/envs/2023-04-26/lib/pytho                                       │
│ n3.10/site-packages/deepspeed/runtime/engine.py:2032 in _take_model_step                         │
│                                                                                                  │
│   2031 │   │   │   │   try:                                                                      │
│ ❱ 2032 │   │   │   │   │   self.lr_scheduler.step(**(lr_kwargs or {}))                           │
│   2033 │   │   │   │   except TypeError:                                                         │
│                                                                                                  │
│ /work/chatglm_finetune_test/finetune.py:86 in                                                    │
│ compute_loss                                                                                     │
│                                                                                                  │
│    85 │   def compute_loss(self, model, inputs, return_outputs=False):                           │
│ ❱  86 │   │   return model(                                                                      │
╰──────────────────────────────────────────────────────────────────────────────────────────────────╯
TypeError: WarmupLR.step() got an unexpected keyword argument 'increment'
"""


def test_rich_box_frames_wrapped_heads_and_arrow_source():
    (r,) = _records(RICH)
    assert (r.type, r.cut) == ("TypeError", False)
    assert [f.func for f in r.frames] == ["_take_model_step", "compute_loss"]
    assert r.frames[0].file.endswith("python3.10/site-packages/deepspeed/runtime/engine.py")
    assert r.frames[0].line == 2032 and r.frames[1].file == "/work/chatglm_finetune_test/finetune.py"
    # the `❱` line is the frame's own, not the context line after the head
    assert r.frames[0].source == "self.lr_scheduler.step(**(lr_kwargs or {}))"
    assert r.frames[1].source == "return model("


def test_a_rich_box_cut_before_its_header_is_a_failure(tmp_path):
    text = "\n".join(RICH.splitlines()[8:13])
    (r,) = _records(text)
    assert r.cut and [f.func for f in r.frames] == ["compute_loss"]
    log = tmp_path / "job.log"
    log.write_text(text)
    assert diagnose_job([str(log)])["category"] == "unknown"


def test_colab_linked_ipython_frames_and_the_arrow_line_as_source():
    # Colab turns each frame's path into a link; the `---->` line is the frame's own code, not
    # the context line after it.
    text = "\n".join([
        "RuntimeError                              Traceback (most recent call last)",
        "[<ipython-input-3-d2a33234ab60>](https://localhost:8080/#) in <cell line: 1>()",
        "----> 1 with torch.autocast(device_type='cpu', dtype=torch.float32):",
        "      2   print(torch.ones(10))",
        "",
        "[/usr/local/lib/python3.10/dist-packages/torch/amp/autocast_mode.py](https://localhost:8080/#) in __enter__(self)",
    ])
    (r,) = _records(text)
    assert r.type == "RuntimeError" and r.cut
    assert [f.func for f in r.frames] == ["<cell line: 1>", "__enter__"]
    assert r.frames[0].source.startswith("with torch.autocast(")
    assert r.frames[1].file.endswith("torch/amp/autocast_mode.py")


def test_an_ipython_frame_cut_at_the_paste_end_takes_no_later_line_as_its_code():
    # IPython's heads are followed by numbered context lines, their own line behind an arrow: the
    # healthy line printed after a paste cut inside the head is not that frame's code (a selection
    # that skipped it would otherwise take the next one, and the two reads would differ)
    for head in ("[/usr/local/lib/python3.10/dist-packages/torch/amp/autocast_mode.py](https://localhost:8080/#) in __",
                 "~/envs/x/lib/python3.8/site-packages/torch/amp/autocast_mode.py in __"):
        (r,) = _records("\n".join([
            "RuntimeError                              Traceback (most recent call last)",
            "[<ipython-input-3-d2a33234ab60>](https://localhost:8080/#) in <cell line: 1>()",
            "----> 1 with torch.autocast(device_type='cpu', dtype=torch.float32):",
            "",
            head,
            "{'loss': 2.4865, 'grad_norm': 0.41, 'learning_rate': 2e-05, 'epoch': 0.53}",
        ]))
        assert r.cut and r.frames[-1].source == "" and r.last.msg == head, head
    # pytest's `path.py:28: in <module>` head is followed by its code, as Python's is
    (r,) = _records("\n".join(["/x/deepspeed/utils/groups.py:28: in <module>", "    from deepspeed import comm as dist"]))
    assert r.frames[-1].source == "from deepspeed import comm as dist"


def test_a_frame_line_cut_before_its_file_head_is_still_a_frame():
    (r,) = _records('/verl/protocol.py", line 491, in chunk')
    assert r.cut and [(f.file, f.func, f.line) for f in r.frames] == [("/verl/protocol.py", "chunk", 491)]
    # prose quoting a path is not a frame
    assert _records('see protocol.py", line 491 for the chunk logic') == []


def test_a_frames_only_diagnosis_points_at_the_raise_its_caller_and_the_start(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("\n".join([
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.8/site-packages/transformers/training_args.py", line 1703, in __post_init__',
        "    self.hf_deepspeed_config = HfTrainerDeepSpeedConfig(self.deepspeed)",
        '  File "/opt/conda/lib/python3.8/site-packages/transformers/deepspeed.py", line 77, in __init__',
        "    super().__init__(config_file_or_dict)",
    ]) + "\n")
    d = diagnose_job([str(log)])
    assert d["rule"] == "config_json_syntax.hf_config_init_cut"
    assert [e["line"] for e in d["evidence"]] == [5, 4, 2, 3, 1]  # where it stops comes first


TWINS = """\
Traceback (most recent call last):
  File "train_matching.py", line 150, in <module>
Traceback (most recent call last):
    train_model(args)
  File "train_matching.py", line 150, in <module>
  File "train_matching.py", line 70, in train_model
    train_model(args)
    assert args.batch_size % len(devices) == 0
  File "train_matching.py", line 70, in train_model
AssertionError
    assert args.batch_size % len(devices) == 0
AssertionError
"""


def test_two_unlabelled_copies_interleaved_line_by_line_are_one_exception():
    (r,) = _records(TWINS)
    assert (r.type, r.cut) == ("AssertionError", False)
    assert [(f.line, f.source) for f in r.frames] == [
        (150, "train_model(args)"), (70, "assert args.batch_size % len(devices) == 0")]


def test_copies_one_frame_behind_give_each_frame_its_own_code_line():
    text = """\
[rank5]:   File "/work/safe-rlhf/test.py", line 88, in <module>
[rank5]:     main()
[rank5]:   File "/work/safe-rlhf/test.py", line 88, in <module>
[rank5]:   File "/work/safe-rlhf/test.py", line 64, in main
[rank5]:     main()
[rank5]:     optimizer = FusedAdam(
[rank5]:   File "/work/safe-rlhf/test.py", line 64, in main
[rank5]:     optimizer = FusedAdam(
"""
    (r,) = _records(text)
    assert r.cut and [f.source for f in r.frames] == ["main()", "optimizer = FusedAdam("]


def test_a_new_traceback_after_a_cut_one_is_not_its_copy():
    text = """\
Traceback (most recent call last):
  File "a.py", line 3, in <module>
    f()
  File "a.py", line 9, in f
    g()
  File "a.py", line 12, in g
Traceback (most recent call last):
  File "b.py", line 5, in <module>
    h()
KeyError: 'x'
"""
    cut, whole = _records(text)
    assert cut.cut and [f.file for f in cut.frames] == ["a.py"] * 3
    assert whole.type == "KeyError" and [f.source for f in whole.frames] == ["h()"]


def test_interleaved_copies_are_diagnosed_by_their_frames(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("Devices is:\n[0, 1, 3]\n" + TWINS)
    assert diagnose_job([str(log)])["category"] == "batch_size_mismatch"


def test_a_traceback_cut_above_its_last_code_line_keeps_that_line_as_the_raising_frame():
    # the paste starts at the last frame's code line; the exception is right under it
    for text in ("[launch] starting\n    assert self.n_batch % self.nminibatches == 0\nAssertionError\n",
                 "[rank1]:     local_rank = int(os.environ['SLOT'])\n[rank1]: KeyError: 'SLOT'\n"):
        (r,) = _records(text)
        assert (r.cut, r.frames[0].file) == (False, "<cut>")
        assert r.frames[0].source.startswith(("assert self.n_batch", "local_rank = int("))
        assert r.frames[0].source_at.lineno == r.line.lineno - 1
    (r,) = _records("[rank1]:     local_rank = int(os.environ['SLOT'])\n[rank1]: KeyError: 'SLOT'\n")
    assert (r.type, r.message, r.rank) == ("KeyError", "'SLOT'", 1)


def test_a_cut_return_line_and_python_311_markers_still_meet_their_exception():
    # a `return` is a raising line too, and Python 3.11+ prints a `~~~^^~~~` line under it
    text = "    return self.decay_factor * step**-0.5\n               ~~~~^^~~~~\n" \
           "ZeroDivisionError: 0.0 cannot be raised to a negative power\n"
    (r,) = _records(text)
    assert (r.type, r.frames[0].file, r.frames[0].source) == (
        "ZeroDivisionError", "<cut>", "return self.decay_factor * step**-0.5")
    # a marker line is no bridge to a line that is not the exception, nor a blank line
    assert _records("    return x**-0.5\n    ~~^^\nstep 3 done\nValueError: bad\n") == []
    assert _records("    return x**-0.5\n\nValueError: bad\n") == []
    # a log line that starts with the word is no statement
    assert _records("return code was 1\nValueError: bad\n") == _records("return value: -9\nValueError: bad\n") == []


def test_an_assert_joined_to_its_exception_on_one_line_is_split_there():
    (r,) = _records("assert self.n_batch % self.nminibatches == 0 AssertionError\n")
    assert (r.type, r.message, r.frames[0].source) == (
        "AssertionError", "", "assert self.n_batch % self.nminibatches == 0")
    (r,) = _records("raise ValueError(f'bad lr {lr}') ValueError: bad lr 0.1\n")
    assert (r.type, r.message, r.frames[0].source) == ("ValueError", "bad lr 0.1", "raise ValueError(f'bad lr {lr}')")
    # the paste lost the newline: nothing between the closed call and the type
    (r,) = _records('raise ValueError("Type fp16 is not supported.")ValueError: Type fp16 is not supported.\n')
    assert (r.type, r.message, r.frames[0].source) == (
        "ValueError", "Type fp16 is not supported.", 'raise ValueError("Type fp16 is not supported.")')


def test_a_string_that_opens_on_an_exception_name_is_not_split_there():
    # a quote straight before the type is a literal's start, not a statement's end
    assert _records('raise ValueError("ValueError: lr must be positive")\n') == []
    assert _records('print("ValueError: bad")\n') == []


def test_a_code_line_without_its_exception_right_under_it_makes_no_record():
    assert _records("    assert x % y == 0\nsome other output\nAssertionError\n") == []
    assert _records("    assert x % y == 0\n") == []
    # prose and log lines are no code line, and a bare exception line alone is no traceback
    assert _records("The run stopped here.\nAssertionError\n") == []
    assert _records("[INFO] step 3 loss 2.1\nRuntimeError: boom\n") == []
    # each rank's code line goes with its own exception only
    assert _records("[rank0]:     assert a % b == 0\n[rank1]: AssertionError\n") == []


# A rich box that a terminal 80 wide wrapped: each row's padded first piece stands alone and its
# border, `                     │`, comes on the next line. What rejoined pieces and bare borders
# leave is blank, and a blank never ends a wrapped frame head.
RICH_BOX = """\
╭─────────────────────────────── Traceback (most recent call last) ────────────────────────────────╮
│ /lus/grand/projects/datascience/foremans/locations/thetaGPU/miniconda3/envs/2023-04-26/lib/pytho │
│ n3.10/site-packages/deepspeed/runtime/engine.py:2032 in _take_model_step                         │
│                                                                                                  │
│   2031 │   │   │   │   try:                                                                      │
│ ❱ 2032 │   │   │   │   │   self.lr_scheduler.step(**(lr_kwargs or {}))                           │
│   2033 │   │   │   │   except TypeError:                                                         │
"""


def _wrapped(text, width):
    return "\n".join(line[i:i + width] for line in text.splitlines()
                     for i in range(0, len(line), width))


def test_a_rich_box_a_terminal_wrapped_keeps_its_frames():
    for form in (RICH_BOX, _wrapped(RICH_BOX, 80)):
        (r,) = _records(form)
        assert r.cut and r.frames[-1].where.endswith("deepspeed/runtime/engine.py:_take_model_step")
        assert r.frames[-1].source == "self.lr_scheduler.step(**(lr_kwargs or {}))"


def test_a_blank_line_does_not_end_a_rich_frame_head_the_box_wrapped():
    (r,) = _records("\n\n".join(RICH_BOX.splitlines()))  # a double-spaced paste
    assert r.frames[-1].where.endswith("deepspeed/runtime/engine.py:_take_model_step")
    assert r.frames[-1].source == "self.lr_scheduler.step(**(lr_kwargs or {}))"


def test_a_frame_head_whose_last_piece_fills_the_column_keeps_its_code_line():
    head = ('  File "/home/younes/miniconda3/envs/bt-optimum/lib/python3.9/site-packages/deepspeed/'
            'runtime/zero/partition_parameters.py", line 22, in <module>')
    head = head.replace("younes", "younes" + "_" * (160 - len(head)))
    assert len(head) == 160
    text = "Traceback (most recent call last):\n" + head + "\n    from .linear import\n"
    (r,) = _records(_wrapped(text, 80))
    assert r.frames[-1].func == "<module>" and r.frames[-1].source == "from .linear import"


# faulthandler's dump (a hang's timeout, SIGABRT, `faulthandler.dump_traceback`): `line N in f`
# with no comma, innermost frame first. Read innermost last, as Python's own traceback is.
FAULTHANDLER = """\
Timeout (0:02:00)!
Thread 0x00007f3a2c1b6740 (most recent call first):
  File "/opt/venv/lib/python3.12/site-packages/torch/utils/file_baton.py", line 50 in wait
  File "/opt/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 2156 in _jit_compile
  File "/opt/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 1681 in load
  File "/work/tests/test_model.py", line 7 in <module>
"""


def test_faulthandler_dump_is_read_innermost_last():
    (raised,) = _records(FAULTHANDLER)
    assert [f.func for f in raised.frames] == ["<module>", "load", "_jit_compile", "wait"]
    assert raised.frames[-1].file.endswith("torch/utils/file_baton.py") and raised.cut


def test_python_frames_keep_their_order():
    (raised,) = _records(PYTHON)
    assert [f.func for f in raised.frames] == ["<module>", "_batch_assertion"]


def test_faulthandler_dump_of_a_stuck_build_names_the_lock(tmp_path):
    log = tmp_path / "hang.log"
    log.write_text(FAULTHANDLER)
    d = diagnose_job([str(log)], use_model=False)
    assert (d["category"], d["rule"]) == ("op_build_error", "op_build_error.extension_lock_wait")


def test_a_first_frame_that_lost_its_rank_label_joins_the_rank_that_continues_it(tmp_path):
    # the reporter's selection started after the first line's `[rank2]: `
    text = """\
File "/home/u/envs/ft/lib/python3.10/site-packages/badam/block_optim.py", line 306, in _reset_ds_optimizer
[rank2]:     ds_optimizer.parameter_offload.get_param_coordinator(training=True)._invalidate_trace()
[rank2]: TypeError: DeepSpeedZeRoOffload.get_param_coordinator() got an unexpected keyword argument 'training'
"""
    (r,) = _records(text)
    assert (r.rank, r.type) == (2, "TypeError")
    assert [f.func for f in r.frames] == ["_reset_ds_optimizer"]
    assert r.frames[0].source.startswith("ds_optimizer.parameter_offload")
    log = tmp_path / "rank2.log"
    log.write_text(text)
    assert diagnose_job([str(log)])["rule"] == "version_mismatch.library_calls_library_keyword"


def test_an_unlabelled_frame_far_from_a_rank_line_stays_its_own():
    text = """\
File "/work/train.py", line 3, in main
    run()
[rank0]: step 10 loss 2.1
[rank0]: RuntimeError: boom
"""
    records = _records(text)
    assert all(r.rank is None or not r.frames for r in records)
