"""Diagnoses the structure decides: who called the parser, frames without a message, a line
cut at the end of the paste, trends over many lines."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job

CONFIG_JSON = """\
Traceback (most recent call last):
  File "/work/train.py", line 40, in <module>
    model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model)
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/config.py", line 749, in __init__
    self._param_dict = json.load(open(config, "r"))
  File "/usr/lib/python3.10/json/decoder.py", line 355, in raw_decode
    raise JSONDecodeError("Expecting value", s, err.value) from None
json.decoder.JSONDecodeError: Expecting ',' delimiter: line 14 column 9 (char 331)
"""
DATASET_JSON = """\
Traceback (most recent call last):
  File "/work/train.py", line 212, in <module>
    train_dataset = SupervisedDataset(tokenizer=tokenizer, data_path=args.data_path)
  File "/work/train.py", line 120, in __init__
    list_data_dict = utils.jload(data_path)
  File "/work/utils.py", line 35, in jload
    jdict = json.load(f)
  File "/usr/lib/python3.10/json/decoder.py", line 340, in decode
    raise JSONDecodeError("Extra data", s, end)
json.decoder.JSONDecodeError: Extra data: line 2 column 1 (char 1108)
"""


def _diagnose(tmp_path, text, name="job.log"):
    log = tmp_path / name
    log.write_text(text)
    return diagnose_job([str(log)])


def test_the_same_decode_error_is_config_or_data_by_its_caller(tmp_path):
    config = _diagnose(tmp_path, CONFIG_JSON)
    assert config["category"] == "config_json_syntax" and config["facts"]["line"] == 14
    data = _diagnose(tmp_path, DATASET_JSON)
    assert data["category"] == "unknown"
    assert "utils.py:jload" in data["remediation"][0] and "not by the DeepSpeed config" in data["remediation"][0]


def test_a_traceback_cut_above_its_own_frames_is_judged_by_its_twin_on_another_rank(tmp_path):
    # The last lines of a deepspeed-launcher job (torch 2.13): rank 0's traceback keeps only
    # json's frames, rank 1's the same error under the script's dataset reader.
    tail = """\
[rank0]:   File "/usr/lib/python3.11/json/decoder.py", line 353, in raw_decode
[rank0]:     obj, end = self.scan_once(s, idx)
[rank0]: json.decoder.JSONDecodeError: Invalid control character at: line 1 column 41 (char 40)
[rank1]: Traceback (most recent call last):
[rank1]:   File "/work/job.py", line 100, in main
[rank1]:     recs = load_records(a.data)
[rank1]:   File "/work/job.py", line 40, in load_records
[rank1]:     recs.append(json.loads(line))
[rank1]:   File "/usr/lib/python3.11/json/decoder.py", line 353, in raw_decode
[rank1]:     obj, end = self.scan_once(s, idx)
[rank1]: json.decoder.JSONDecodeError: Invalid control character at: line 1 column 41 (char 40)
[2026-12-06 01:40:20,083] [ERROR] [launch.py:259:sigkill_handler] ['/usr/bin/python', '-u', 'job.py', '--local_rank=1'] exits with return code = 1
"""
    assert _diagnose(tmp_path, tail)["category"] == "unknown"
    # the twin under DeepSpeed's config loader still names the config
    config = tail.replace("recs = load_records(a.data)", "engine = deepspeed.initialize(config=a.config)") \
        .replace('/work/job.py", line 40, in load_records', '/opt/ds/deepspeed/runtime/config.py", line 40, in __init__')
    assert _diagnose(tmp_path, config)["category"] == "config_json_syntax"
    # a different message on the other rank is no twin
    other = tail.replace("line 1 column 41 (char 40)\n[2026", "line 2 column 7 (char 90)\n[2026")
    assert _diagnose(tmp_path, other)["category"] == "config_json_syntax"


def test_a_settings_file_outside_a_training_run_is_not_the_deepspeed_config(tmp_path):
    app = """\
Traceback (most recent call last):
  File "/srv/app/server.py", line 212, in <module>
    server = start_server(args.port)
  File "/srv/app/server.py", line 120, in start_server
    settings = load_settings()
  File "/srv/app/settings.py", line 35, in load_settings
    return json.load(f)
  File "/usr/lib/python3.10/json/decoder.py", line 340, in decode
    raise JSONDecodeError("Extra data", s, end)
json.decoder.JSONDecodeError: Extra data: line 2 column 1 (char 1108)
"""
    assert _diagnose(tmp_path, app)["category"] == "unknown"
    # A training run's lines around it do not make a settings reader the config loader (a big
    # job's log always shows one) ...
    launched = ("[2024-03-01 10:00:00,000] [INFO] [launch.py:256:main] process 311 spawned with "
                "command: ['/usr/bin/python', '-u', 'train.py', '--local_rank=0']\n")
    assert _diagnose(tmp_path, launched + app)["category"] == "unknown"
    # ... but a script reading its own config under a launcher, or on a rank's labelled lines,
    # is read as ds_config; the same read with no distributed run around it is a stand-alone
    # tool's own settings.
    own = app.replace("return json.load(f)", "config = json.load(f)")
    assert _diagnose(tmp_path, launched + own)["category"] == "config_json_syntax"
    ranked = "".join(f"[rank1]: {line}\n" for line in own.splitlines())
    assert _diagnose(tmp_path, ranked)["category"] == "config_json_syntax"
    assert _diagnose(tmp_path, own)["category"] == "unknown"
    # a DeepSpeed script by its name reads the DeepSpeed config (a rank's own log file holds
    # only its traceback)
    named = own.replace("/srv/app/settings.py", "/work/ds_train.py")
    assert _diagnose(tmp_path, named)["category"] == "config_json_syntax"


def test_a_lone_decode_error_is_the_config_only_in_a_training_job_or_in_hjson_words(tmp_path):
    lone = "json.decoder.JSONDecodeError: Expecting ',' delimiter: line 14 column 9 (char 331)\n"
    assert _diagnose(tmp_path, lone)["category"] == "unknown"
    assert _diagnose(tmp_path, "[rank3]: " + lone)["category"] == "config_json_syntax"
    hjson = "hjson.scanner.HjsonDecodeError: Expecting ':' delimiter: line 7 column 19 (char 164)\n"
    assert _diagnose(tmp_path, hjson)["category"] == "config_json_syntax"
    # only the standard library's frames above it: still nothing says which file it was
    framed = ('Traceback (most recent call last):\n  File "/usr/lib/python3.10/json/__init__.py", '
              'line 346, in loads\n    return _default_decoder.decode(s)\n' + lone)
    assert _diagnose(tmp_path, framed)["category"] == "unknown"


def test_a_lone_decode_error_after_training_steps_is_not_the_config(tmp_path):
    # A config is read before the first step: the launcher's line and no step between says
    # ds_config; the same line after a run's steps (a long healthy log pasted in front) does not.
    lone = "json.decoder.JSONDecodeError: Expecting ',' delimiter: line 14 column 9 (char 331)\n"
    launched = ("[2024-03-01 10:00:00,000] [INFO] [launch.py:256:main] process 311 spawned with "
                "command: ['/usr/bin/python', '-u', 'train.py', '--local_rank=0']\n")
    assert _diagnose(tmp_path, launched + lone)["category"] == "config_json_syntax"
    steps = "".join(f"[2024-03-01 10:0{i}:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] "
                    f"step={i * 10}, skipped=0, lr=[2e-05], mom=[(0.9, 0.95)]\n" for i in range(1, 4))
    assert _diagnose(tmp_path, launched + steps + lone)["category"] == "unknown"
    hf = "{'loss': 1.9021, 'grad_norm': 0.52, 'learning_rate': 1e-05, 'epoch': 0.3}\n"
    assert _diagnose(tmp_path, launched + hf + lone)["category"] == "unknown"
    # a rank's own label stands for the run, but not after its steps
    assert _diagnose(tmp_path, "[rank1]: " + lone)["category"] == "config_json_syntax"
    assert _diagnose(tmp_path, launched + steps + "[rank1]: " + lone)["category"] == "unknown"


def test_frames_alone_decide_and_the_diagnosis_says_so(tmp_path):
    text = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/work/finetune.py", line 88, in main
[rank1]:     engine, *_ = deepspeed.initialize(model=model, config=ds_config)
[rank1]:   File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/config.py", line 803, in _configure_train_batch_size
[rank1]:     self._batch_assertion()
[rank1]:   File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/config.py", line 751, in _batch_assertion
[rank1]:     assert (
"""
    d = _diagnose(tmp_path, text)
    assert (d["category"], d["rule"]) == ("batch_size_mismatch", "batch_size_mismatch.batch_assertion_frames")
    assert d["facts"]["raised_in"] == "config.py:_batch_assertion" and "message_cut" in d["facts"]
    assert d["confidence"] < 0.9 and d["evidence"][0]["rank"] == 1
    assert any("rests on its frames" in step for step in d["remediation"])


def test_a_generic_keyerror_is_an_env_var_only_when_it_indexes_environ(tmp_path):
    env = _diagnose(tmp_path, 'Traceback (most recent call last):\n  File "run.py", line 3, in <module>\n'
                              '    n = int(os.environ["PET_NNODES"])\nKeyError: \'PET_NNODES\'\n')
    assert env["category"] == "env_var_missing" and env["facts"]["var"] == "PET_NNODES"
    other = _diagnose(tmp_path, 'Traceback (most recent call last):\n  File "run.py", line 3, in <module>\n'
                                '    w = state["MODEL_WEIGHTS"]\nKeyError: \'MODEL_WEIGHTS\'\n')
    assert other["category"] == "unknown"


def test_a_line_cut_at_the_end_of_the_paste_still_names_the_failure(tmp_path):
    cut = ("[rank3]:[E901 05:20:03.445217639 ProcessGroupNCCL.cpp:684] [Rank 3] Some NCCL "
           "operations have failed or timed ou")
    d = _diagnose(tmp_path, "step 10 loss 1.2\n" + cut)
    assert d["category"] == "nccl_timeout" and "message_cut" in d["facts"]
    # the same prefix in the middle of a log is not a cut message
    middle = _diagnose(tmp_path, cut + "\nstep 11 loss 1.1\nstep 12 loss 1.0\n")
    assert middle["category"] == "none"


def test_a_cut_line_needs_the_context_a_whole_one_does(tmp_path):
    # config_field_error.auto_compared_as_number holds only under DeepSpeed's config frames
    cut = "TypeError: '>' not supported between instances of 'str' and 'in"
    user = '  File "/work/model.py", line 88, in forward\n    if seq_len > self.max_len:\n'
    assert _diagnose(tmp_path, "Traceback (most recent call last):\n" + user + cut)["category"] \
        in ("unknown", "none")
    config = ('  File "/x/deepspeed/runtime/config.py", line 930, in _batch_assertion\n'
              '    assert (train_batch > 0), "Train batch size has to be greater than 0"\n')
    d = _diagnose(tmp_path, "Traceback (most recent call last):\n" + config + cut)
    assert d["category"] == "config_field_error" and "message_cut" in d["facts"]


def test_loss_scale_collapse_is_a_failure_and_a_recovery_is_not(tmp_path):
    halving = "".join(f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {2 ** (k + 1)}, "
                      f"reducing to {2 ** k}\n" for k in range(12, -1, -1))
    d = _diagnose(tmp_path, "step 1 loss 2.0\n" + halving)
    assert d["category"] == "fp16_overflow" and d["rule"] == "fp16_overflow.loss_scale_halving_trend"
    assert (d["facts"]["first_scale"], d["facts"]["last_scale"]) == (4096.0, 1.0)
    start = "".join(f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {2 ** (k + 1)}, "
                    f"reducing to {2 ** k}\n" for k in range(31, 15, -1))
    steps = "".join(f"{{'loss': {2 - i / 1000:.3f}, 'learning_rate': 2e-05, 'epoch': 0.{i:02d}}}\n"
                    for i in range(60))
    assert _diagnose(tmp_path, start + steps)["category"] == "none"


def test_a_halving_that_every_rank_reports_is_one_run_of_reductions(tmp_path):
    # apex prints each reduction on every rank: 64, 64, 32, 32, ... is still a streak.
    per_rank = "".join(f"[rank{r}]: Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale "
                       f"to {2.0 ** k}\n" for k in range(10, 1, -1) for r in (0, 1))
    d = _diagnose(tmp_path, "epoch 0 step 10 loss 3.1\n" + per_rank)
    assert d["category"] == "fp16_overflow" and d["facts"]["last_scale"] == 4.0
    # ... and the same reports that settle and training goes on are still a healthy start
    settle = "".join(f"[rank{r}]: Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale "
                     f"to {2.0 ** k}\n" for k in range(16, 12, -1) for r in (0, 1))
    assert _diagnose(tmp_path, settle + _healthy_steps(60))["category"] == "none"


def test_a_halving_two_ranks_interleaved_line_by_line_is_still_a_streak(tmp_path):
    # unsynchronised writes: each line again one line later (16, 8, 16, 4, 8, 2, 4, ...)
    lines = [f"Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {2.0 ** k}"
             for k in range(10, 0, -1)]
    mixed = lines[:1] + [x for i in range(1, len(lines)) for x in (lines[i], lines[i - 1])] + lines[-1:]
    d = _diagnose(tmp_path, "epoch 0 step 10 loss 3.1\n" + "\n".join(mixed) + "\n")
    assert d["category"] == "fp16_overflow" and d["facts"]["last_scale"] == 2.0
    # a scale that comes back up between reductions, many lines on, is a recovery
    settle = "\n".join(lines[:3] + lines[:3]) + "\n" + _healthy_steps(60)
    assert _diagnose(tmp_path, settle)["category"] == "none"



def test_a_logged_loss_scale_counts_only_once_it_fell(tmp_path):
    # a per-step `loss_scale:` column: falling to 1 is a collapse ...
    rows = "".join(f"iter {i * 100} loss: {'nan' if i else '0.94'} loss_scale: {s} norm: 1.0\n"
                   for i, s in enumerate(("32768.0", "512.0", "1.0")))
    d = _diagnose(tmp_path, rows)
    assert d["category"] == "fp16_overflow" and d["rule"] == "fp16_overflow.logged_loss_scale_collapse"
    assert d["facts"]["last_scale"] == 1.0
    # ... a constant 1 (a bf16 or fp32 run that logs the column all the same) is not
    flat = "".join(f" iteration {i}/ 100 | lm loss: 2.1 | loss scale: 1.0 | grad norm: 0.3 |\n"
                   for i in range(1, 30))
    assert _diagnose(tmp_path, flat)["category"] == "none"

def _healthy_steps(n, start=0):
    return "".join(f"{{'loss': {2 - i / 1000:.3f}, 'learning_rate': 2e-05, 'epoch': 0.{i % 100:02d}}}\n"
                   for i in range(start, start + n))


def test_repeated_xids_are_a_hardware_cause_with_their_codes_even_without_a_python_error(tmp_path):
    xids = "".join(f"[Tue Mar  5 02:1{k}:45 2024] NVRM: Xid (PCI:0000:3b:00): {code}, pid=4411, "
                   f"name=python, Ch 00000010\n" for k, code in enumerate((109, 109, 8, 109)))
    d = _diagnose(tmp_path, _healthy_steps(40) + xids + _healthy_steps(5, 40))
    assert d["category"] == "gpu_hardware" and d["rule"] == "gpu_hardware.xid_repeated"
    assert (d["facts"]["xid_codes"], d["facts"]["events"], d["facts"]["pci"]) == ([109, 8], 4, "0000:3b:00")
    assert "4 Xid events (codes 109, 8)" in " ".join(d["remediation"])
    # Once is noise; a stream of application Xids (a crashing kernel) is not hardware.
    once = xids.splitlines(keepends=True)[0]
    assert _diagnose(tmp_path, _healthy_steps(40) + once + _healthy_steps(5, 40))["category"] == "none"
    app = "".join(f"NVRM: Xid (PCI:0000:3b:00): 31, pid=5518, name=python, Ch 00000010, MMU Fault {k}\n"
                  for k in range(6))
    assert _diagnose(tmp_path, _healthy_steps(40) + app)["category"] != "gpu_hardware"


def test_an_application_xid_pasted_from_the_kernel_log_is_a_failure_but_not_the_hardware(tmp_path):
    # Xid 13/31/43 are raised by a faulting program (an MMU fault, an engine exception): the job
    # failed, for a cause outside the taxonomy; a desktop program's Xid is no job's failure
    mmu = ("[Wed Jun 24 15:44:42 2026] NVRM: Xid (PCI:0000:70:00): 31, pid=684430, name=python3, channel "
           "0x00000002, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 UNRECOGNIZED_CLIENT faulted @ 0x7f_12340000\n")
    assert _diagnose(tmp_path, mmu)["category"] == "unknown"
    wrapped = ("NVRM: Xid (PCI:0000:01:00): 31, pid=<varies>, name=python3, channel 0x00000002,\n"
               "  intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 faulted\n")
    assert _diagnose(tmp_path, wrapped)["category"] == "unknown"
    desktop = mmu.replace("python3", "chrome")
    assert _diagnose(tmp_path, desktop)["category"] == "none"


RETRY = "gpu-a:2011:2011 [0] NCCL INFO Call to connect returned Connection refused, retrying\n"


def test_an_nccl_retry_storm_that_ends_in_a_warn_is_a_transport_failure(tmp_path):
    warn = "gpu-a:2011:2011 [0] misc/socket.cc:538 NCCL WARN Net : Connect to 10.1.2.3<41291> fai\n"
    d = _diagnose(tmp_path, "NCCL INFO Bootstrap : Using eth0:10.1.2.2<0>\n" + RETRY * 8 + warn)
    assert d["category"] == "nccl_network" and d["rule"] == "nccl_network.connect_retry_storm"
    assert (d["facts"]["retries"], d["facts"]["reason"], d["facts"]["call"]) == (8, "Connection refused", "connect")
    assert d["evidence"][-1]["line"] == 10  # the WARN that ended it is shown
    # The same retries, then a connection and a healthy run: a slow start, not a failure.
    healthy = ("gpu-a:2011:2011 [0] NCCL INFO Connected all rings\n"
               "gpu-a:2011:2011 [0] NCCL INFO ncclCommInitRank comm 0x55 rank 0 nranks 2 - Init COMPLETE\n")
    assert _diagnose(tmp_path, RETRY * 8 + healthy + _healthy_steps(30))["category"] == "none"


def test_a_warn_long_after_the_retries_belongs_to_another_failure(tmp_path):
    warn = "gpu-a:2011:2011 [0] NCCL WARN Net : Connection closed by remote peer gpu-b<51890>\n"
    d = _diagnose(tmp_path, RETRY * 8 + _healthy_steps(200) + warn)
    assert d["rule"] != "nccl_network.connect_retry_storm"


PYTEST = """\
============================= test session starts ==============================
collected 3 items

tests/test_engine.py F                                                   [100%]

=================================== FAILURES ===================================
_______________________________ test_zero3_step ________________________________

    def test_zero3_step():
>       engine, *_ = deepspeed.initialize(model=model, config=CONFIG)

tests/test_engine.py:31: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
/opt/conda/lib/python3.10/site-packages/deepspeed/__init__.py:181: in initialize
    engine = DeepSpeedEngine(args=args,
/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py:262: in __init__
    self._configure_with_arguments(args, mpu)
/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/config.py:868: in _configure_train_batch_size
    self._batch_assertion()
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

    def _batch_assertion(self):
>       assert train_batch == micro_batch * grad_acc * self.world_size, (
E       AssertionError
/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/config.py:816: AssertionError
=========================== short test summary info ============================
FAILED tests/test_engine.py::test_zero3_step - AssertionError
"""


def test_a_pytest_failure_report_is_read_by_its_frames_and_e_lines(tmp_path):
    d = _diagnose(tmp_path, PYTEST)
    assert d["category"] == "batch_size_mismatch" and d["rule"] == "batch_size_mismatch.batch_assertion_frames"
    oom = "E       torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
    d = _diagnose(tmp_path, PYTEST.replace("E       AssertionError\n", oom))
    assert d["category"] == "gpu_oom" and d["facts"]["requested"]["text"] == "2.00 GiB"


def test_a_paste_of_frames_or_a_device_assert_is_a_failure_not_a_healthy_log(tmp_path):
    frames = ('  File "/opt/conda/lib/python3.10/site-packages/torch/_tensor.py", line 487, in backward\n'
              '    torch.autograd.backward(\n'
              '  File "/opt/conda/lib/python3.10/site-packages/torch/autograd/__init__.py", line 200, in backward\n'
              '    Variable._execution_engine.run_backward(\n')
    assert _diagnose(tmp_path, frames)["category"] == "unknown"
    asserts = "".join(f"../aten/src/ATen/native/cuda/Indexing.cu:1141: indexSelectLargeIndex: block: [118,0,0], "
                      f"thread: [{t},0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n" for t in range(4))
    assert _diagnose(tmp_path, asserts)["category"] == "unknown"
    # a notebook's frame excerpt: IPython's arrow marks the line that raised
    cell = ("File ~/venv/lib/python3.8/site-packages/accelerate/launchers.py:123, in notebook_launcher(function)\n"
            "    122 if torch.cuda.is_initialized():\n"
            "--> 123     raise ValueError(\n"
            '    124         "To launch a multi-GPU training from your notebook, you need to avoid"\n')
    assert _diagnose(tmp_path, cell)["category"] == "unknown"
    assert _diagnose(tmp_path, "epoch 3 --> 4 done\nlr 0.1 --> 0.01\n")["category"] == "none"


def test_torchelastic_error_file_members_are_log_lines_not_code(tmp_path):
    text = ('[ERROR] 2021-09-13 22:18:26,678 error_handler: {\n'
            '  "message": {\n'
            '    "message": "RendezvousConnectionError: The connection to the C10d store has failed. '
            'See inner exception for details.",\n')
    d = _diagnose(tmp_path, text)
    assert d["category"] == "connection_failure" and d["evidence"][0]["line"] == 3
    # A source line echoed in a traceback is still code, not evidence.
    code = ('Traceback (most recent call last):\n  File "x.py", line 3, in f\n'
            '    "RendezvousConnectionError: The connection to the C10d store has failed."\n')
    assert _diagnose(tmp_path, code)["source"] != "rule"


def test_quoted_exception_lines_of_a_printed_list_are_output(tmp_path):
    # a list or JSON array of the ranks' errors, printed: each element is a log line
    listed = ("'RuntimeError: Address already in use', 'RuntimeError: NCCL error in: "
              "/pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:784, unhandled system error'\n")
    assert _diagnose(tmp_path, listed)["category"] == "port_conflict"
    arrayed = ('  "RuntimeError: [6] is setting up NCCL communicator and retrieving ncclUniqueId from [0] '
               "via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\",\n")
    assert _diagnose(tmp_path, arrayed)["category"] == "connection_failure"
    # the same string under a frame head is the frame's source
    code = ('Traceback (most recent call last):\n  File "x.py", line 3, in f\n'
            "    'RuntimeError: Address already in use',\n")
    assert _diagnose(tmp_path, code)["source"] != "rule"


def test_a_lone_decode_error_after_nccl_built_its_communicators_is_not_the_config(tmp_path):
    lone = "json.decoder.JSONDecodeError: Expecting ',' delimiter: line 14 column 9 (char 331)\n"
    launched = ("[2024-03-01 10:00:00,000] [INFO] [launch.py:256:main] process 311 spawned with "
                "command: ['/usr/bin/python', '-u', 'train.py', '--local_rank=0']\n")
    nccl = ("node2:311:402 [0] NCCL INFO Channel 00/02 :    0   1\n"
            "node2:311:402 [0] NCCL INFO comm 0x55d0c8a0 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n")
    assert _diagnose(tmp_path, launched + lone)["category"] == "config_json_syntax"
    assert _diagnose(tmp_path, launched + nccl + lone)["category"] == "unknown"


# A message pasted on its own in quotes is output; a source string holding the same words (in a
# traceback's code line) stays code. A bare AttributeError message opens on a quote, as source
# strings do; the dynamic loader's message in quotes opens on the shared object's path.
@pytest.mark.parametrize("message, source_line, category", [
    ("'DummyOptim' object has no attribute 'param_groups'",
     "'DummyOptim' object has no attribute 'param_groups' if flag else None,", "scheduler_config"),
    ('"/opt/conda/lib/python3.8/site-packages/detectron2/_C.cpython-38-x86_64-linux-gnu.so: '
     'undefined symbol: _ZN2at4_ops5zeros4callEv"',
     '"the .so: undefined symbol: x means a rebuild",', "version_mismatch"),
], ids=["python message", "loader message"])
def test_a_quoted_message_is_output_but_a_quoted_source_string_is_code(tmp_path, message, source_line,
                                                                        category):
    assert _diagnose(tmp_path, message + "\n")["category"] == category
    source = ("Traceback (most recent call last):\n"
              '  File "/work/train.py", line 9, in main\n'
              f"    {source_line}\n"
              "ValueError: bad flag\n")
    assert _diagnose(tmp_path, source)["category"] != category


_TITLE = ("raise EnvironmentError('CUDA_HOME environment variable is not set. ' "
          "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.\n")
_RAISE_IN_FRAMES = ('  File "/work/setup.py", line 9, in <module>\n'
                    "    raise EnvironmentError('CUDA_HOME environment variable is not set. '\n"
                    "KeyboardInterrupt\n")


_TITLE_CLOSED = ("raise ValueError(f'The provided lr scheduler \"{scheduler}\" is invalid') ValueError: The "
                 "provided lr scheduler \"<torch.optim.lr_scheduler.StepLR object at 0x7f01aa2b3c40>\" is invalid\n")
_CLOSED_IN_FRAMES = ('  File "/venv/lib/python3.10/site-packages/pytorch_lightning/core/optimizer.py", line 9, in f\n'
                     "    raise ValueError(f'The provided lr scheduler \"{scheduler}\" is invalid')\n"
                     "KeyboardInterrupt\n")


@pytest.mark.parametrize("text, category, read", [
    (_TITLE, "op_build_error", True), (_RAISE_IN_FRAMES, "op_build_error", False),
    (_TITLE_CLOSED, "version_mismatch", True), (_CLOSED_IN_FRAMES, "version_mismatch", False)])
def test_a_raise_line_joined_to_its_exception_is_output_after_it(tmp_path, text, category, read):
    # an issue title glues the raise to the exception it printed, after the quote or after the
    # call's closing `)` (`...') ValueError: ...`); a frame's raise alone is code
    assert (_diagnose(tmp_path, text)["category"] == category) is read


def test_a_lambda_or_generator_frame_raises_for_the_function_around_it():
    # Python 3.11+ prints the <lambda> and <genexpr> frames of a sort key; the raise site that
    # rules name is the builder's function holding them, not the synthetic frames
    from classifier.diagnosis.structure import raised_in
    from classifier.diagnosis.traceback import Frame
    b = "/venv/lib/python3.12/site-packages/deepspeed/ops/op_builder/builder.py"
    frames = [Frame(b, "jit_load", 595), Frame(b, "compute_capability_args", 710),
              Frame(b, "<lambda>", 710), Frame(b, "<genexpr>", 710)]
    assert raised_in(frames).func == "compute_capability_args"
    # a lambda of another file stays the raise site: its own code raised
    mixed = [Frame(b, "load", 480), Frame("/home/u/train.py", "<lambda>", 30)]
    assert raised_in(mixed).where == "/home/u/train.py:<lambda>"
    assert raised_in([Frame("/home/u/train.py", "<listcomp>", 3)]).func == "<listcomp>"


GLOO_FRAMES = """\
Traceback (most recent call last):
  File "/opt/conda/lib/python3.8/site-packages/torch/distributed/distributed_c10d.py", line 761, in _new_process_group_helper
    pg = ProcessGroupGloo(prefix_store, rank, world_size, timeout=timeout)
RuntimeError: {message}
"""


@pytest.mark.parametrize("message, last, category", [
    ("So", True, "connection_failure"),             # a stub at the end: the frames decide
    ("So", False, "unknown"),                       # the same stub with lines after it
    ("Something else broke", True, "unknown"),      # a whole message no rule knows
    ("Una", True, "unknown"),                       # may go on to the interface's error
])
def test_a_message_stub_at_the_end_of_the_paste_counts_as_cut(tmp_path, message, last, category):
    text = GLOO_FRAMES.format(message=message) + ("" if last else "Exiting.\n")
    assert _diagnose(tmp_path, text)["category"] == category


# A message quoted inside the reporter's sentence is output: prose goes on after the closing
# quote, where a source string is followed by code (`%`, `,`, `.format(`, `if`) or nothing.
@pytest.mark.parametrize("sentence, code, category", [
    ('"Duplicate GPU detected : rank 1 and rank 0 both on CUDA device a4000" from NCCL INFO.',
     '"Duplicate GPU detected : rank %d and rank %d both on CUDA device %s" % (a, b, c)',
     "device_visibility"),
    ('"No space left on device" while saving the checkpoint',
     '"No space left on device" if full else "ok"', "disk_full"),
])
def test_a_message_quoted_in_a_sentence_is_output_but_a_source_string_is_code(tmp_path, sentence,
                                                                              code, category):
    assert _diagnose(tmp_path, sentence + "\n")["category"] == category
    assert _diagnose(tmp_path, code + "\n")["category"] != category
    # under a frame head the same sentence is still the frame's code line
    framed = ('Traceback (most recent call last):\n  File "x.py", line 3, in f\n'
              f"    {sentence}\n")
    assert _diagnose(tmp_path, framed)["source"] != "rule"


# A runtime's error code leads its message like an exception's name; quoted among other output
# (a reporter's quote after the start-up lines) it is that output, under a frame head it is code.
def test_a_quoted_runtime_error_code_among_output_is_read(tmp_path):
    quoted = '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
    startup = ("Launching Web UI with arguments: --precision full --no-half\n"
               "Loading weights [7460a6fa] from /models/sd-v1-4.ckpt\n")
    assert _diagnose(tmp_path, startup + quoted + "Aborted (core dumped)\n")["category"] == "version_mismatch"
    code = ('Traceback (most recent call last):\n  File "x.py", line 3, in f\n'
            '    "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
            "ValueError: bad flag\n")
    assert _diagnose(tmp_path, code)["category"] != "version_mismatch"
