"""Pastes keep their diagnosis: terminal wraps, one-line JSON/repr logs, unknown labels."""

import sys
from pathlib import Path

import pytest

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.normalize import normalize
from classifier.diagnosis.paste import learned_prefix, split_escaped, wrap_width
from classifier.diagnosis.read import RawLine

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from mangle import TRANSFORMS, _read  # noqa: E402

# Public-dev and synthesized cases of several categories and paste forms (never split: test).
CASES = [
    "public/scheduler_config/huggingface__transformers__610.log",
    "public/precision_conflict/gensyn-ai__rl-swarm__299.log",
    "public/gpu_oom/QwenLM__Qwen3__873.log",
    "public/config_field_error/FlagOpen__FlagEmbedding__1487.log",
    "public/port_conflict/pytorch__pytorch__126510.log",
    "public/version_mismatch/deepspeedai__DeepSpeed__3436.log",
    "public/op_build_error/deepspeedai__DeepSpeed__885.log",
    "public/gpu_hardware/tloen__alpaca-lora__123.log",
    "public/nccl_timeout/HKUDS__GraphGPT__44.log",
    "config_field_error/blind_cf_offload_device_enum_accelerate_zero3.log",
]
FORMS = ["wrap80", "wrap120", "json_record", "python_repr", "iso_level", "pipe_level", "kubectl",
         "md_quote", "crlf", "ansi", "tabs", "rank_prefix"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", CASES)
def test_mangled_paste_keeps_its_category(case, form, tmp_path):
    text = _read(ROOT / "corpus" / case)
    want = diagnose_job([str(ROOT / "corpus" / case)])["category"]
    assert want not in ("none", "unknown")
    log = tmp_path / "paste.log"
    log.write_text(TRANSFORMS[form](text), encoding="utf-8", newline="")
    assert diagnose_job([str(log)])["category"] == want


def _msgs(text):
    raw = [RawLine("x", i, t) for i, t in enumerate(text.split("\n"), 1)]
    return [(line.lineno, line.msg) for line in normalize(raw)]


def test_wrapped_frame_and_message_are_joined():
    frame = ('  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py", '
             'line 1201, in _configure_optimizer')
    error = ("RuntimeError: CUDA error: an illegal memory access was encountered while "
             "launching the kernel on device 3")
    log = ["Traceback (most recent call last):", frame, "    self._configure_zero_optimizer(",
           '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/zero/stage3.py", '
           "line 512, in __init__", "    self._setup()", error]
    msgs = _msgs(TRANSFORMS["wrap80"]("\n".join(log)))
    assert (2, frame.strip()) in msgs      # under its first piece's number
    assert (3, "") in msgs                 # the second piece's number, blank
    assert (8, error) in msgs and len(msgs) == 9


def test_no_wrap_where_lines_only_share_a_length():
    # ranks' copies of one message, rulers, right-padding and box edges are not wraps
    ranks = [f"[rank{r}]: RuntimeError: NCCL communicator was aborted on rank {r}." + "x" * 30
             for r in range(8)]
    assert wrap_width(ranks + ["short"]) is None
    padded = [t.ljust(90) for t in ("Traceback (most recent call last):", '  File "a.py", line 1',
                                    "ValueError: bad", "next")]
    assert wrap_width(padded) is None
    boxed = [f"│ {t:<76} │" for t in ("one", "two", "three", "four")]
    assert wrap_width(boxed) is None
    assert wrap_width(["=" * 80, "a", "=" * 80, "b", "=" * 80]) is None
    # sacct's fixed-width table: every row as wide as its dashed header, no row a rest
    rule = " ".join("-" * w for w in (15, 15, 9, 15, 10, 10, 19, 19, 10)) + " "
    rows = [f"{job:>15} {name:<15} {'kvats':>9} {'cn213':>15} {'general':>10} {state:>10} "
            f"2024-07-24T09:30:44 2024-07-24T09:30:44 {'00:00:00':>10} "
            for job, name, state in (("15926486", "cat-5793969dbb+", "CANCELLED+"),
                                     ("15926486.batch", "batch", "CANCELLED"),
                                     ("15926486.extern", "extern", "CANCELLED"))]
    assert len({len(t) for t in [rule] + rows}) == 1 and wrap_width([rule] + rows) is None
    # ... under a shorter prompt and heading: the ruler still says they are a table's rows
    assert wrap_width(["$ sacct -j 15926486", "JobID JobName State"[:60], rule] + rows) is None


def test_one_message_wrapped_in_a_short_paste_is_joined(tmp_path):
    # Too few wrapped lines to count a column: a terminal's usual width, no line past it and a
    # break inside a word decide.
    watchdog = ("[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=880, OpType=BROADCAST, NumelIn=1, NumelOut=1, "
                "Timeout(ms)=1800000) ran for 1800648 milliseconds before timing out.")
    text = TRANSFORMS["wrap80"]("Loading extension module cpu_adam...\n" + watchdog + "\n")
    assert text.split("\n")[1].endswith("timeo")
    log = tmp_path / "paste.log"
    log.write_text(text)
    assert diagnose_job([str(log)])["category"] == "nccl_timeout"
    assert (2, watchdog) in _msgs(text)


@pytest.mark.parametrize("lines", [
    # the longest line is 120 long by chance and ends in a number / a frame head / a word
    ["RuntimeError: cuda runtime error (39) : uncorrectable ECC error at /x/THCCachingAllocator.cpp:265".ljust(117, "/") + ":26",
     "terminate called without an active exception"],
    ['  File "/opt/conda/lib/python3.9/site-packages/torch/serialization.py", line 309, in '.ljust(114, "_") + "writer",
     "    super().__init__(torch._C.PyTorchFileWriter(str(name)))"],
    ["The detected CUDA version (12.1) mismatches the version that was used to compile",
     "PyTorch (11.8). Please make sure to use the same CUDA versions."],
])
def test_a_line_of_a_usual_width_by_chance_is_not_a_wrap(lines):
    assert wrap_width(lines + ["done"]) is None


@pytest.mark.parametrize("text, lines", [
    ('{"log": "Traceback (most recent call last):\\n  File \\"a.py\\", line 3\\nKeyError: '
     '\'RANK\'\\n", "stream": "stderr"}',
     ["Traceback (most recent call last):", '  File "a.py", line 3', "KeyError: 'RANK'"]),
    ("'OSError: [Errno 28] No space left on device\\n'",
     ["OSError: [Errno 28] No space left on device"]),
    ("b'RuntimeError: x\\n\\tat y\\n'", ["RuntimeError: x", "\tat y"]),
    ('"\\u001b[31mRuntimeError\\u001b[0m: boom\\nnext"', ["\x1b[31mRuntimeError\x1b[0m: boom", "next"]),
])
def test_one_line_logs_are_split(text, lines):
    assert split_escaped(text) == lines


@pytest.mark.parametrize("text", [
    '{"log":"RuntimeError: one line\\n","stream":"stderr","time":"2024-01-01T00:00:00Z"}',
    "ValueError: expected '\\n' in the template",             # a message quoting an escape
    "prompt = 'a\\nb\\nc\\nd' and more",                       # not one literal
])
def test_lines_that_are_not_a_whole_log_stay(text):
    assert split_escaped(text) is None


def test_learned_prefix_is_an_unknown_label_only():
    def known(t):
        return t.startswith(("[rank", "2024-"))
    pod = [f"trainer-0 pytorch {m}" for m in ("Traceback x", "  File y", "KeyError: z",
                                               "a", "b", "c")]
    assert learned_prefix(pod, known) == "trainer-0 pytorch "
    assert learned_prefix([f"> {m}" for m in "abcdef"], known) == "> "
    # labels the peeler reads, numbered messages, colons and open brackets are not learned
    assert learned_prefix([f"[rank0]: {m}" for m in "abcdef"], known) is None
    assert learned_prefix([f"rank {i} step 3" for i in range(6)], known) is None
    assert learned_prefix([f"[E ProcessGroupNCCL.cpp:737] [Rank {i}] x" for i in range(6)],
                          known) is None
    assert learned_prefix([f"node1:123:456 [{i}] NCCL INFO x" for i in range(6)], known) is None


def test_pod_label_and_quote_are_dropped():
    text = "\n".join(f"trainer-7 pytorch {m}" for m in (
        "Traceback (most recent call last):", '  File "t.py", line 9, in <module>',
        "    main()", "KeyError: 'LOCAL_RANK'", "done"))
    assert (4, "KeyError: 'LOCAL_RANK'") in _msgs(text)
    quoted = "\n".join(f"> {m}" if m else ">" for m in ("Traceback (most recent call last):", "",
                                                         '  File "t.py", line 9', "a", "b", "c"))
    assert (3, 'File "t.py", line 9') in _msgs(quoted)


GLUED = [
    "[ERROR] AttributeErrorAttributeErrorAttributeError: 'NoneType' object has no attribute 'x'",
    "    assert param.ds_status == ZeroParamStatus.AVAILABLE, param.ds_summary()AssertionError",
    "AssertionError        assert param.ds_status == ZeroParamStatus.AVAILABLE",
    "    AssertionErrorassert param.ds_status == ZeroParamStatus.AVAILABLE, param.ds_summ",
]


@pytest.mark.parametrize("form", ["", "[rank3]:", "host-3: ", "2024-01-01T12:00:00.123Z INFO "])
@pytest.mark.parametrize("glued", GLUED)
def test_exception_names_glued_by_interleaved_ranks_are_a_failure(glued, form, tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("\n".join(form + t for t in ("loading shards", "step 1", glued)) + "\n")
    assert diagnose_job([str(log)])["category"] == "unknown"


@pytest.mark.parametrize("healthy", [
    "Skipping ValueErrors in the sampler is enabled", "Caught ValueError in worker, retrying",
    "raise ValueError(f'bad {x}')", "0 errors,  0 warnings", "ErrorHandler installed",
])
def test_exception_names_in_prose_are_not_glued(healthy, tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("loading shards\n" + healthy + "\nstep 1 loss 0.3\n")
    assert diagnose_job([str(log)])["category"] == "none"


@pytest.mark.parametrize("joined, category", [
    # an issue title: the raise line and the exception it printed on one line, the call's
    # arguments names (not a string), its parenthesis left open
    ("raise RendezvousConnectionError( torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: "
     "The connection to the C10d store has failed. See inner exception for details.", "connection_failure"),
    ("raise EnvironmentError('CUDA_HOME environment variable is not set. ' OSError: CUDA_HOME environment "
     "variable is not set. Please set it to your CUDA install root.", "op_build_error"),
    ("return super().__torch_function__(func, types, new_args, kwargs) RuntimeError: [Rank:0] FATAL ERROR :: "
     "MODULE:PT_DEVMEM Allocation failed for size::3288334336 (3136)MB", "gpu_oom"),
    # the raise line alone is source, whatever names its arguments hold
    ("raise RendezvousConnectionError(msg, RendezvousError)", "none"),
])
def test_a_raise_line_joined_to_its_exception_is_read_as_output(joined, category, tmp_path):
    log = tmp_path / "title.log"
    log.write_text(joined + "\n")
    assert diagnose_job([str(log)])["category"] == category


def test_unknown_head_before_a_known_label_is_learned():
    def known(t):
        return t.startswith(("[rank", "2024-"))
    assert learned_prefix([f"> [rank5]: {m}" for m in "abcdef"], known) == "> "
    assert learned_prefix([f"  | 2024-11-28T07:42:14.{i}Z | x" for i in range(5)], known) == "  | "
    assert learned_prefix([f"NCCL INFO {m} ring" for m in "abcdef"], known) is None  # words


@pytest.mark.parametrize("form", ["[rank3]:", "host-3: ", "2024-01-01 12:00:00 | INFO | ",
                                  "2024-01-01T12:00:00.123Z INFO ", "> ", "trainer-7 pytorch "])
def test_a_cut_last_message_is_read_behind_a_bare_trailing_label(form, tmp_path):
    # the paste ends in the label alone (the log's final newline, prefixed like every line)
    lines = ['  File "/usr/lib/python3.10/site-packages/pydantic/main.py", line 164, in __init__',
             "    __pydantic_self__.__pydantic_validator__.validate_python(data)",
             "pydantic_core._pydantic_core.ValidationError: 1 validation error for DeepSpeedZeroCo",
             ""]
    log = tmp_path / "paste.log"
    log.write_text("\n".join(form + t for t in lines))
    assert diagnose_job([str(log)])["category"] == "config_field_error"


@pytest.mark.parametrize("pieces", [
    # broken at the blank between two words: the blank starts the next line or ends this one
    ["[rank0]: AssertionError: Check batch related parameters. train_batch_size is not",
     " equal to micro_batch_per_gpu * gradient_acc_step * world_size 8 != 2 * 1 * 1"],
    ["[W427 01:04:16.149509694 socket.cpp:752] [c10d] The client socket has failed to ",
     "connect to [::ffff:198.18.0.1]:3254 (errno: 110 - Connection timed out)."],
    # inside an identifier, at its underscore
    ["[rank0]: AssertionError: Check batch related parameters. train_batch_size is not equal "
     "to micro_batch_per_gpu * gradient", "_acc_step * world_size 8 != 2 * 1 * 1"],
    # a letter, then the digits of the same token (`float16`)
    ["TypeError: Input 'y' of 'Mul' Op has type float32 that does not match type float",
     "16 of argument 'x'."],
    # a blank, then a parenthesis the message goes on with (caffe's check and its codes)
    ["F1206 10:15:04.766489   447 syncedmem.cpp:56] Check failed: error == cudaSuccess",
     " (2 vs. 0)  out of memory"],
])
def test_a_short_paste_wrapped_between_words_is_joined(pieces):
    assert len(pieces[0]) in (80, 120)
    text = "\n".join(["Loading extension module cpu_adam...", *pieces, "done"])
    whole = "".join(pieces)
    assert (2, whole.replace("[rank0]: ", "")) in _msgs(text)
    assert (3, "") in _msgs(text)  # the second piece's number, blank


def test_a_break_inside_a_word_is_a_wrap_beside_text_its_program_wrapped():
    # torch's DataParallel warning wraps itself at blanks just short of 80 columns; the
    # terminal broke the error after it inside a word, which no program does
    lines = ["UserWarning:", "There is an imbalance between your GPUs. You may want to exclude GPU 0 which",
             "has less than 75% of the memory or cores of GPU 1. You can do so by setting",
             "the device_ids argument to DataParallel, or by setting the CUDA_VISIBLE_DEVICES",
             "environment variable.", "",
             "RuntimeError: after cudaLaunch in triple_chevron_launcher::launch(): out of memo", "ry"]
    assert len(lines[6]) == 80
    assert wrap_width(lines) == 80


def test_a_frame_head_broken_in_its_function_name_is_joined():
    head = '  File "/home/u/conda/envs/tf51/lib/python3.12/site-packages/trl/trainer/grpo.py", line 817, in _get_per'
    head = head.replace("/u/", "/" + "u" * (120 - len(head) + 1) + "/")
    assert len(head) == 120
    lines = ["Traceback (most recent call last):", head, "_token_logps",
             "    for i in range(0, input_ids.size(0), batch_size):",
             "ValueError: range() arg 3 must not be zero"]
    assert (2, (head + "_token_logps").strip()) in _msgs("\n".join(lines))


def test_a_line_that_fills_the_column_is_not_joined_to_a_line_of_the_same_start():
    # the width is plain from the wrapped frames; the `raise` line fills the column by itself,
    # and the next line starts with the same rank label: two lines, as the terminal showed them
    wrapped = []
    for op in ("all_reduce", "all_gather", "barrier"):
        frame = (f'[rank0]:   File "/work/venv/lib/python3.11/site-packages/torch/distributed/'
                 f'{op}/distributed_c10d.py", line 3, in {op}_' + "x" * 60)
        wrapped += [frame[:120], frame[120:]]
    whole = '[rank1]:     raise ValueError(f"expected input of shape [4, {a.hidden}] but batch ' \
        '{step} has shape [4, {a.hiddensize}]")'
    assert len(whole) == 120
    error = "[rank1]: ValueError: expected input of shape [4, 8] but batch 0 has shape [4, 7]"
    msgs = _msgs("\n".join(wrapped + [whole, error]))
    assert (8, "ValueError: expected input of shape [4, 8] but batch 0 has shape [4, 7]") in msgs
    # nor to a line behind another host's label
    hosts = ["node-a: [rank0]: RuntimeError: Connection closed by peer [127.0.0.1]:3509. This is "
             "typically caused by a remote worker crashing.", "node-b: [rank2]: Traceback (most "
             "recent call last):"]
    wrapped = [f"node-a: [rank0]: torch.distributed.DistBackendError: NCCL error in: {op}" + "y" * 80
               for op in ("all_reduce", "all_gather", "barrier")]
    wide = len(hosts[0])
    text = "\n".join([w[:wide] + "\n" + w[wide:] for w in wrapped] + hosts)
    lines = normalize([RawLine("x", i, t) for i, t in enumerate(text.split("\n"), 1)])
    assert ("node-b", "Traceback (most recent call last):") in [(ln.host, ln.msg) for ln in lines]


@pytest.mark.parametrize("lines", [
    # a line of a usual width ending in a blank, then a new message with a capital
    ["[INFO] [engine.py:1200:_configure] Using client Optimizer as basic optimizer, step ".ljust(79, "x") + " ",
     "Traceback (most recent call last):"],
    # a frame head that fills the column, its source line indented under it
    ['  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 1, in '.ljust(117, "_") + "run",
     "    self.optimizer.step()"],
])
def test_a_line_of_a_usual_width_that_ends_whole_is_not_a_wrap(lines):
    assert wrap_width(lines + ["done"]) is None



def _broken_after(whole: str, mark: str) -> list[str]:
    """`whole` broken after `mark` at column 80, as a terminal 80 wide shows it."""
    at = whole.index(mark) + len(mark)
    head = whole[:at]
    pad = 80 - len(head)
    return [head[:head.index(" ") + 1] + "x" * pad + head[head.index(" ") + 1:], whole[at:]]


def _assert_joined(pieces):
    """An 80-column wrap inside one token of a short paste is rejoined into one message."""
    assert len(pieces[0]) == 80
    text = "\n".join(["Loading extension module cpu_adam...", *pieces, "done"])
    assert wrap_width(text.split("\n")) == 80
    assert (2, "".join(pieces)) in _msgs(text)


@pytest.mark.parametrize("pieces", [
    # after a dot inside a dotted name, after `=` in a key=value list, after a path's slash
    _broken_after("RuntimeError: Attempting to deserialize object on CUDA device 1 but torch.cuda."
                  "device_count() is 1. Please use torch.load with map_location", "torch.cuda."),
    _broken_after("ValueError: Wrong number of updates: num_updates=10000, milestone=10000",
                  "num_updates="),
    _broken_after("OSError: [Errno 28] No space left on device: '/scratch/ckpt/global_step500/"
                  "mp_rank_00_model_states.pt'", "global_step500/"),
    # before what closes a token and never starts a line: a bracket, a colon, a comma
    _broken_after("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:136] Timed "
                  "out waiting 1800000ms for send operation to complete", "unbound_buffer.cc:136"),
    _broken_after("DistBackendError: NCCL error in: ../c10d/ProcessGroupNCCL.cpp:3376, internal error",
                  "ProcessGroupNCCL.cpp"),
    _broken_after("DistBackendError: NCCL error in: ../c10d/ProcessGroupNCCL.cpp:3376, internal error",
                  "ProcessGroupNCCL.cpp:3376"),
])
def test_a_short_paste_wrapped_inside_a_token_at_punctuation_is_joined(pieces):
    _assert_joined(pieces)


@pytest.mark.parametrize("lines", [
    # a sentence that fills the column, then a new message with a capital
    ["[INFO] Saving checkpoint to /scratch/ckpt".ljust(63, "x") + ": done in 12.4 s.",
     "Loading extension module fused_adam..."],
    # a dotted word that ends the line, then a new message with a capital
    ["Successfully installed deepspeed-0.10.0 transformers-4.31.0".ljust(76, "x") + " v1.",
     "Requirement already satisfied: torch"],
    # a ruler of dots
    ["." * 80, "step 1"],
])
def test_a_line_ending_in_punctuation_before_a_new_message_is_not_a_wrap(lines):
    assert len(lines[0]) == 80 and lines[0].endswith(".")
    assert wrap_width(lines + ["done"]) is None


def test_a_wrap_next_to_a_boxed_table_just_narrower_is_joined():
    # nvidia-smi's rows end one column short of the terminal: laid out to a width, they are no
    # text its program wrapped itself, and do not outvote the message broken at the column
    table = ["+" + "-" * 77 + "+", "| NVIDIA-SMI 418.116.00".ljust(78) + "|"] + [
        f"|   {gpu}  Tesla V100-SXM2...  On   | 0000000{gpu}:04:00.0 Off |".ljust(78) + "|"
        for gpu in range(6)]
    whole = "Cuda error in file 'examples/amgx_mpi_capi.c' in line 149 : no CUDA-capable device is detected."
    pieces = [whole[:80], whole[80:]]
    lines = pieces + pieces + table
    assert wrap_width(lines) == 80
    assert (1, whole) in _msgs("\n".join(lines))


@pytest.mark.parametrize("line, want", [
    ("Permission denied (publickey).", "connection_failure"),
    ("ValueError: Error initializing torch.distributed using env:// rendezvous: environment "
     "variabl", "env_var_missing"),  # the paste cut mid-word, as a one-line paste often is
    ("NCCL INFO Call to connect returned Connection refused, retrying", "nccl_network"),
])
def test_a_one_message_paste_behind_a_pod_label_is_read(line, want, tmp_path):
    # `kubectl logs --prefix`-like labels on the message and on the final newline's empty line:
    # two lines only, the bare one being the whole label
    log = tmp_path / "paste.log"
    log.write_text("".join(f"trainer-7d9f8-worker-0 pytorch {t}" for t in (line + "\n", "")))
    assert diagnose_job([str(log)])["category"] == want


def test_two_lines_sharing_words_are_no_label():
    def known(t):
        return False
    assert learned_prefix(["worker-1 done", "worker-1 done in 3 s"], known) is None
    assert learned_prefix(["node-1 a", "node-1 b"], known) is None  # no bare label line
    # one message twice (two ranks' copies), or the shorter line first: no label on a newline
    assert learned_prefix(["Command 'ninja' returned non-zero exit "] * 2, known) is None
    assert learned_prefix(["worker-1 pytorch ", "worker-1 pytorch KeyError: 'RANK'"], known) is None


def _wrapped(lines, width=80):
    return TRANSFORMS[f"wrap{width}"]("\n".join(lines)) + "\n"


def test_a_message_goes_on_over_the_blanks_a_rejoined_wrap_leaves(tmp_path):
    # the checkpoint line is three pieces at 80 columns: rejoined, its other numbers are blank,
    # and the launcher's kill on the next line still reads as right after the load
    log = tmp_path / "paste.log"
    log.write_text(_wrapped([
        "[2023-07-25 00:37:49,180] [INFO] [torch_checkpoint_engine.py:27:load] [Torch] Loading "
        "checkpoint from /opt/ml/model/checkpoint-10/global_step10/bf16_zero_pp_rank_0_mp_rank_00"
        "_optim_states.pt...",
        "[2023-07-25 00:38:05,103] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 230",
        "[2023-07-25 00:38:08,243] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 231"]))
    assert diagnose_job([str(log)])["category"] == "host_oom"


def test_a_weak_end_of_log_line_counts_messages_not_wrapped_pieces(tmp_path):
    # the paste ends inside an op's build: the compile step, wrapped into a dozen pieces, is
    # the last message but one, however many physical lines the last one took
    flags = " ".join(f"-I/opt/conda/lib/python3.10/site-packages/deepspeed/ops/csrc/inc{i}"
                     for i in range(12))
    log = tmp_path / "paste.log"
    log.write_text(_wrapped([
        "Building extension module fused_adam...",
        "Allowing ninja to set a default number of workers... (overridable by setting the "
        "environment variable MAX_JOBS=N)",
        "[1/3] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile --dependency-output "
        "multi_tensor_adam.cuda.o.d -DTORCH_EXTENSION_NAME=fused_adam " + flags,
        "-isystem /opt/conda/lib/python3.10/site-packages/torch/include " * 12 + "-O3"]))
    assert diagnose_job([str(log)])["category"] == "op_build_error"


def test_wrapped_ray_lines_are_rejoined_behind_the_dedup_note(tmp_path):
    # Ray's ` [repeated 15x across cluster]` ends a piece; what the peeler drops at the end of a
    # line is no label at its start, and the piece is still the rest of the line before
    head = "(RayTrainWorker pid=954, ip=10.67.132.202) ini-worker-ray-worker-p5:954:3133 [6] "
    log = tmp_path / "paste.log"
    log.write_text(_wrapped([
        head + "nccl_net_ofi_create_plugin:1067 NCCL WARN NET/OFI aws-ofi-nccl initialization "
        "failed [repeated 15x across cluster]",
        head + "NCCL INFO net.cc:56 -> 2 [repeated 15x across cluster]",
        head + "NCCL INFO NET/IB : No device found. [repeated 15x across cluster]",
        head + "NCCL INFO Using network Socket [repeated 15x across cluster]"]))
    assert diagnose_job([str(log)])["category"] == "nccl_network"


def test_a_line_wrapped_inside_an_operator_is_rejoined(tmp_path):
    log = tmp_path / "paste.log"
    # caffe2's enforce, pasted from its `[`: the 80th column falls between the `=` of `==`
    log.write_text(_wrapped([
        "enforce fail at CPUAllocator.cpp:56] posix_memalign(&data, gAlignment, nbytes) == 0. "
        "12 vs 0"]))
    assert diagnose_job([str(log)])["category"] == "host_oom"


@pytest.mark.parametrize("pieces", [
    # before a dot or a hyphen glued to a token: an address, a file's extension, a pod's name
    _broken_after("F0609 LightNetwork.cpp:379] Check failed: ERROR connecting to 127.0.0.1: "
                  "Connection refused [111]", "ERROR connecting to 127"),
    _broken_after("F0609 device_context.cc:219] cuda error 2: out of memory", "device_context"),
    _broken_after("Error: pod \"notebook-kernel-jxosi-worker-0\" is waiting to start: "
                  "PodInitializing", "notebook-kernel-jxosi"),
    # just inside a quoted name: after its opening quote, before its closing one
    _broken_after("ValueError: Unsupported optimizer (<class 'apex.optimizers.fused_adam.FusedAdam'>)",
                  "(<class '"),
    _broken_after('File "/opt/venv/lib/python3.10/site-packages/trl/trainer/grpo_trainer.py", '
                  "line 320, in __init__", "grpo_trainer.py"),
    # before the `>` that closes a `<module`
    _broken_after('File "/opt/venv/lib/python3.10/site-packages/pydevd.py", line 1, in <module>',
                  "<module"),
])
def test_a_short_paste_wrapped_at_a_token_edge_is_joined(pieces):
    _assert_joined(pieces)


@pytest.mark.parametrize("lines", [
    # a list item, a JSON key, a word after a closing quote: lines of their own
    ["Installed packages for the run: deepspeed torch transformers accelerate".ljust(80, "x"),
     "- torch 2.1.0"],
    ["Writing the merged config to /scratch/run/ds_config.json with fields".ljust(80, "x"),
     '"train_batch_size": 32,'],
    ["KeyError: 'LOCAL_RANK' raised while reading the environment of".ljust(79, "x") + "'",
     "During handling of the above exception, another exception occurred:"],
])
def test_a_line_before_its_own_next_line_at_a_token_edge_is_not_a_wrap(lines):
    assert len(lines[0]) == 80
    assert wrap_width(lines + ["done"]) is None


def test_a_wrap_beside_a_table_laid_out_to_its_ruler_is_joined():
    # sacct's rows, as wide as their column ruler and a few columns short of the terminal,
    # are no whole lines ending near the column: the one wrapped line still says its width
    step = ("[2026-04-29T23:36:37.809] error: *** STEP 52222788.0 ON nid002888 CANCELLED AT 2026-04-29T23:36:37"
            " DUE TO TASK FAILURE ***")
    rule = "------------ ---------- ---------- ---------- ---------- ---------- -------- "
    rows = [f"52222788.{i:<3}  batch{i:<5}       resv     desi_g        128  COMPLETED      0:0 "[:len(rule)]
            for i in range(4)]
    lines = [step[:80], step[80:], "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode ",
             rule, *rows]
    assert wrap_width(lines) == 80
