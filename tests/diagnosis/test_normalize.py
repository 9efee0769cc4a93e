"""Each prefix form real launchers write, on realistic lines, and the message left for rules."""

import pytest

from classifier.diagnosis.normalize import peel_prefixes, strip_prefixes

CASES = [
    # (line, message, rank, host)
    ("[rank3]: torch.OutOfMemoryError: CUDA out of memory.",
     "torch.OutOfMemoryError: CUDA out of memory.", 3, None),
    ("[rank12]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 12] Watchdog caught",
     "[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 12] Watchdog caught", 12, None),
    ("[default3]:RuntimeError: CUDA error: invalid device ordinal",
     "RuntimeError: CUDA error: invalid device ordinal", 3, None),
    ("[:3]:  File \"/x/accelerate/accelerator.py\", line 1209, in prepare",
     "File \"/x/accelerate/accelerator.py\", line 1209, in prepare", 3, None),
    ("[default:3]:ValueError: x", "ValueError: x", 3, None),
    ("  7: KeyError: 'LOCAL_RANK'", "KeyError: 'LOCAL_RANK'", 7, None),
    ("worker-1: [2024-05-02 17:40:14,003] [INFO] [launch.py:145:main] WORLD INFO DICT",
     "[INFO] [launch.py:145:main] WORLD INFO DICT", None, "worker-1"),
    ("worker-1: [rank9]: ValueError: boom", "ValueError: boom", 9, "worker-1"),
    ("localhost: RuntimeError: x", "RuntimeError: x", None, "localhost"),
    ("[1,3]<stderr>:ValueError: environment variable MASTER_ADDR expected, but not set",
     "ValueError: environment variable MASTER_ADDR expected, but not set", 3, None),
    ("2024-09-14T03:13:09.612910004Z RuntimeError: file write failed",
     "RuntimeError: file write failed", None, None),
    ("[2024-03-11 09:14:02,118] [INFO] [config.py:1000:print] world_size ... 8",
     "[INFO] [config.py:1000:print] world_size ... 8", None, None),
    ("2024-03-11 09:14:02,118 - INFO - trainer - step 4", "trainer - step 4", None, None),
    ("Mar  3 11:02:07 gpu17 kernel: Out of memory: Killed process 4242 (python3)",
     "Out of memory: Killed process 4242 (python3)", None, None),
    ("[1234567.891011] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
     "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", None, None),
    ("│ /usr/lib/python3/site-packages/deepspeed/runtime/engine.py:300 in __init__        │",
     "/usr/lib/python3/site-packages/deepspeed/runtime/engine.py:300 in __init__", None, None),
    ("[rank0]: │ ❱ 50 │   model_engine = deepspeed.initialize(  │",
     "❱ 50 │   model_engine = deepspeed.initialize(", 0, None),
    ("gpu-node-01.cluster: [rank9]: x", "x", 9, "gpu-node-01.cluster"),
    ("10.0.0.5: ValueError: y", "ValueError: y", None, "10.0.0.5"),
    ("(RayTrainWorker pid=48213, ip=10.0.4.7) torch.OutOfMemoryError: CUDA out of memory.",
     "torch.OutOfMemoryError: CUDA out of memory.", None, None),
    ("[pod/llama-ft-worker-1/pytorch] [rank9]: AssertionError", "AssertionError", 9, "llama-ft-worker-1"),
    ("trainer-1  | RuntimeError: Address already in use", "RuntimeError: Address already in use", None,
     "trainer-1"),
    # a compose container_name, then FastChat's `time | level | logger | ` around a frame
    ("qanything-container-local  | 2024-02-20 21:46:23 | ERROR | stderr |   File \"/x/worker.py\", line 71",
     'File "/x/worker.py", line 71', None, "qanything-container-local"),
    ("2024-02-20 21:46:23 | INFO | model_worker | Loading the model", "Loading the model", None, None),
    ("0 | model | GPT2LMHeadModel | 124 M", "0 | model | GPT2LMHeadModel | 124 M", None, None),
    ("loss  | 0.5312", "loss  | 0.5312", None, None),
    # moreutils `ts` stamps with no date (`ts -s`, `ts -i`, `ts '%.T'`, `ts '%.s'`) and rich's
    # log column, in front of rank labels and frames
    ("00:00:05 [rank0]: Traceback (most recent call last):", "Traceback (most recent call last):", 0, None),
    ('14:03:07.512208   File "/x/train.py", line 9, in <module>', 'File "/x/train.py", line 9, in <module>',
     None, None),
    ("1796518808.408548 [rank1]: ValueError: expected input of shape [4, 8]",
     "ValueError: expected input of shape [4, 8]", 1, None),
    ("1796518808 [1,0]<stderr>:KeyError: 'label_ids'", "KeyError: 'label_ids'", 0, None),
    ("[14:03:07] ERROR    Training crashed", "ERROR    Training crashed", None, None),
    # journalctl's -o short-iso(-precise) and -o short(-precise): the host and the writer's
    # `name[pid]: ` after the stamp; a unit the writer names after it is no host label
    ("2026-12-06T00:53:01.001371+0000 gpu-node-07 train.sh[48213]: [rank1]: KeyError: 'label_ids'",
     "KeyError: 'label_ids'", 1, None),
    ("Dec 06 00:53:01.001371 gpu-node-07 python3[812]:   File \"/w/train.py\", line 47, in main",
     'File "/w/train.py", line 47, in main', None, None),
    ("Jan 10 08:45:05 gpu-4 systemd[1]: train-llm.service: A process of this unit has been killed",
     "train-llm.service: A process of this unit has been killed", None, None),
    # Not prefixes: an exception name, a plain message, NCCL's own host:pid:tid label, tools.
    ("12:30 run started", "12:30 run started", None, None),
    ("1234567890123 samples seen", "1234567890123 samples seen", None, None),
    ("0.000011 rank 0 step 0 loss 0.4186", "0.000011 rank 0 step 0 loss 0.4186", None, None),
    ("collect2: error: ld returned 1 exit status", "collect2: error: ld returned 1 exit status", None, None),
    ("libcudart.so.11.0: cannot open shared object file: No such file or directory",
     "libcudart.so.11.0: cannot open shared object file: No such file or directory", None, None),
    ("RuntimeError: Address already in use", "RuntimeError: Address already in use", None, None),
    ("nvidia-container-cli: device error: 4: unknown device", "nvidia-container-cli: device error: 4: unknown device",
     None, None),
    ("nvidia-container-cli.real: device error: 1: unknown device",
     "nvidia-container-cli.real: device error: 1: unknown device", None, None),
    # a pdsh host that happens to be named after the vendor is still a host
    ("nvidia-dgx-01: [rank3]: RuntimeError: boom", "RuntimeError: boom", 3, "nvidia-dgx-01"),
    ("node1:1201:1201 [0] NCCL INFO Bootstrap : Using eth0", "node1:1201:1201 [0] NCCL INFO Bootstrap : Using eth0",
     None, None),
    # vLLM's logger head, before 0.8 and after (file in brackets), behind a worker's pid label
    ('ERROR 04-28 15:55:45 worker_base.py:157]   File "/x/worker.py", line 149, in f',
     'File "/x/worker.py", line 149, in f', None, None),
    ("(EngineCore_0 pid=412) ERROR 08-01 10:00:00 [core.py:588] ValueError: no KV cache",
     "ValueError: no KV cache", None, None),
    ("INFO 03-11 19:53:41.120 remote_rm_utils.py:24] Request error", "Request error", None, None),
    # a level word and a date that are the message's own
    ("ERROR 404 on GET /v1/models", "ERROR 404 on GET /v1/models", None, None),
    ("Epoch 04-28: done", "Epoch 04-28: done", None, None),
]


@pytest.mark.parametrize("line,msg,rank,host", CASES, ids=[c[0][:30] for c in CASES])
def test_prefix_forms(line, msg, rank, host):
    got_msg, got_rank, got_host, _ = strip_prefixes(line)
    assert (got_msg, got_rank, got_host) == (msg, rank, host)


NESTED = [
    # (line, message, rank, task): the innermost rank label is the rank, an outer one the task
    ("1: [rank13]: RuntimeError: CUDA error: an illegal memory access was encountered",
     "RuntimeError: CUDA error: an illegal memory access was encountered", 13, 1),
    ("  0: [default3]:[W1002 14:31:10.673 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog",
     "[W1002 14:31:10.673 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog", 3, 0),
    ("1: gpu-node-02: [rank9]: ValueError: x", "ValueError: x", 9, 1),
    ("3: KeyError: 'LOCAL_RANK'", "KeyError: 'LOCAL_RANK'", 3, None),
    # srun's label is always outermost: a bare `2: ` after a rank label is not a rank
    ("[rank4]: 2: something", "something", 4, None),
    # a paste indented as a markdown code block keeps its labels
    ("    [rank1]: KeyError: 'label_ids'", "KeyError: 'label_ids'", 1, None),
    ("\t[default0]:[rank0]: ValueError: x", "ValueError: x", 0, 0),
]


@pytest.mark.parametrize("line,msg,rank,task", NESTED, ids=[c[0][:24] for c in NESTED])
def test_nested_rank_labels(line, msg, rank, task):
    got_msg, got_rank, got_task, _, _ = peel_prefixes(line)
    assert (got_msg, got_rank, got_task) == (msg, rank, task)


def test_timestamps_are_parsed_for_ordering():
    _, _, _, a = strip_prefixes("[2024-03-11 09:14:02,118] x")
    _, _, _, b = strip_prefixes("2024-03-11T09:14:03.5Z y")
    assert a is not None and b is not None and b - a == pytest.approx(1.382)


def _lines(*texts):
    from classifier.diagnosis.normalize import normalize
    from classifier.diagnosis.read import RawLine
    return list(normalize(RawLine("job.log", i, t) for i, t in enumerate(texts, 1)))


def test_container_runtime_records_and_html_escapes_are_unwrapped():
    docker, cri, escaped, pytest_e, dmesg_h = _lines(
        '{"log":"[rank2]: torch.OutOfMemoryError: CUDA out of memory.\\n","stream":"stderr","time":"2024-09-14T03:13:09.612910004Z"}',
        "2024-09-14T03:13:09.612910004Z stderr F [rank5]: KeyError: 'LOCAL_RANK'",
        "KeyError: &#x27;LOCAL_RANK&#x27; raised in &lt;module&gt;",
        "E       RuntimeError: CUDA error: invalid device ordinal",
        "[  +0.000844] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)")
    assert (docker.msg, docker.rank, docker.ts is not None) == ("torch.OutOfMemoryError: CUDA out of memory.", 2, True)
    assert docker.text.startswith('{"log":')  # evidence shows the line as the log holds it
    assert (cri.msg, cri.rank, cri.ts is not None) == ("KeyError: 'LOCAL_RANK'", 5, True)
    assert escaped.msg == "KeyError: 'LOCAL_RANK' raised in <module>"
    assert pytest_e.msg == "RuntimeError: CUDA error: invalid device ordinal"
    assert dmesg_h.msg.startswith("nvidia 0000:03:00.0: AER")
    # a JSON object that is not a runtime record, or a bare ampersand, is left alone
    other, amp = _lines('{"log": 3, "msg": "x"}', "loss & grad_norm: 1.0 &amp")
    assert other.msg == '{"log": 3, "msg": "x"}' and amp.msg == "loss & grad_norm: 1.0 &amp"


def test_web_copy_characters_are_read_as_plain_ones(tmp_path):
    nbsp, zero_width = _lines(
        "[rank1]:\u00a0torch.OutOfMemoryError:\u00a0CUDA\u00a0out\u00a0of\u00a0memory.",
        "\ufeffRuntimeError:\u200b NCCL error")
    assert (nbsp.msg, nbsp.rank) == ("torch.OutOfMemoryError: CUDA out of memory.", 1)
    assert nbsp.text.startswith("[rank1]:\u00a0")  # evidence keeps the line as it was pasted
    assert zero_width.msg == "RuntimeError: NCCL error"
    # and a whole paste copied that way is diagnosed as the plain one
    from classifier.diagnosis.diagnose import diagnose_job
    log = tmp_path / "paste.log"
    log.write_text("Traceback (most recent call last):\n"
                   "\u00a0\u00a0File \"/w/train.py\", line 9, in <module>\n"
                   "\u00a0\u00a0\u00a0\u00a0local_rank = int(os.environ['LOCAL_RANK'])\n"
                   "KeyError:\u00a0'LOCAL_RANK'\n", encoding="utf-8")
    assert diagnose_job([str(log)])["category"] == "env_var_missing"


@pytest.mark.parametrize("line, msg", [
    ("`IndexError: index out of range in self`", "IndexError: index out of range in self"),
    ("[rank0]: `KeyError: 'RANK'`", "KeyError: 'RANK'"),
    ("`RuntimeError: CUDA error: inv", "RuntimeError: CUDA error: inv"),   # cut before its end
    ("```", "```"),                                                           # a fence stays
    ("`deepspeed` was not found, run `pip install deepspeed`",
     "`deepspeed` was not found, run `pip install deepspeed`"),               # spans inside stay
    # the span was opened lines above: its closing backtick alone ends the message
    ("Exception: Current loss scale already at minimum - cannot decrease scale`",
     "Exception: Current loss scale already at minimum - cannot decrease scale"),
    ("run `make` first`", "run `make` first`"),                               # not a lone closer
    ("``", "``"),
])
def test_a_message_quoted_as_inline_code_loses_its_backticks(line, msg):
    assert peel_prefixes(line)[0] == msg


@pytest.mark.parametrize("line, msg", [
    ("**RuntimeError: Expected to have finished reduction**", "RuntimeError: Expected to have finished reduction"),
    ("[rank1]: **KeyError: 'RANK'", "KeyError: 'RANK'"),                    # cut before the closing marks
    ("__Error while loading__", "Error while loading"),
    ("**kwargs)", "**kwargs)"),                                              # code stays
    ('__name__ == "__main__"', '__name__ == "__main__"'),
    ("**Error** in step 3", "**Error** in step 3"),                          # bold inside a sentence stays
])
def test_a_message_retyped_in_markdown_bold_loses_its_marks(line, msg):
    assert peel_prefixes(line)[0] == msg


RAY_NOTE = ("(Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or"
            " see https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html"
            "#log-deduplication for more options.)")
RAY_DEDUP = [
    # Ray's log dedup suffix is the driver's, not the message's: it goes like a prefix does
    ("RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details) [repeated 6x across cluster]",
     "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"),
    ("(RayTrainWorker pid=954, ip=10.67.132.202) node-5:954:3133 [6] NCCL INFO Using network Socket [repeated 15x across cluster]",
     "node-5:954:3133 [6] NCCL INFO Using network Socket"),
    (f"(pid=38582) [rank3]: RuntimeError: Connection refused [repeated 7x across cluster] {RAY_NOTE}",
     "RuntimeError: Connection refused"),
    # a line Ray itself received cut keeps its cut end
    ("(RayWorker pid=75832) bms-airtrunk-c-g1v2-ap [repeated 2x across cluster]", "bms-airtrunk-c-g1v2-ap"),
    # the words inside a message, or without Ray's exact shape, stay
    ("[repeated 3x across cluster] ValueError: x", "[repeated 3x across cluster] ValueError: x"),
    ("WARNING: step skipped [repeated 3 times]", "WARNING: step skipped [repeated 3 times]"),
]


@pytest.mark.parametrize("line,msg", RAY_DEDUP, ids=[c[0][:30] for c in RAY_DEDUP])
def test_ray_dedup_suffix_is_peeled(line, msg):
    assert peel_prefixes(line)[0] == msg


READ_PLAINLY = [
    # two ranks printed the same exception line at once: their characters interleave
    ("ImportErrorImportError: : cannot import name 'flash_attn_unpadded_qkvpacked_func'",
     "ImportError: cannot import name 'flash_attn_unpadded_qkvpacked_func'"),
    ("[rank1]: RuntimeErrorRuntimeError: CUDA error: invalid device ordinal",
     "RuntimeError: CUDA error: invalid device ordinal"),
    ("KeyErrorKeyError: : 'input_ids_j'", "KeyError: 'input_ids_j'"),
    ("torch.distributed.DistBackendErrortorch.distributed.DistBackendError: : NCCL error",
     "torch.distributed.DistBackendError: NCCL error"),
    # one copy, or two different names, stay as written
    ("RuntimeError: RuntimeError: x", "RuntimeError: RuntimeError: x"),
    ("ValueErrorKeyError: : x", "ValueErrorKeyError: : x"),
    # a printed dict or repr holds an error message with its quotes escaped
    ("{'err_cpu': 'ERROR:\"clamp_min_cpu\" not implemented for \\'Half\\''}",
     "{'err_cpu': 'ERROR:\"clamp_min_cpu\" not implemented for 'Half''}"),
    (" AttributeError: \\'dict\\' object has no attribute \\'get\\'", "AttributeError: 'dict' object has no attribute 'get'"),
    # a JSON string's escaped double quotes are the JSON reader's to undo
    ('"message": "File \\"train.py\\", line 3"', '"message": "File \\"train.py\\", line 3"'),
]


@pytest.mark.parametrize("line,msg", READ_PLAINLY, ids=[c[0][:30] for c in READ_PLAINLY])
def test_a_doubled_head_or_a_reprs_escaped_quotes_are_read_plainly(line, msg):
    assert peel_prefixes(line)[0] == msg


def test_a_line_anchored_rule_still_reads_a_ray_deduplicated_traceback(tmp_path):
    from classifier.diagnosis.diagnose import diagnose_job
    from classifier.rules.load import default_rules
    head = "(RayTrainWorker pid=4821, ip=10.0.4.7) "
    tail = " [repeated 7x across cluster]"
    log = tmp_path / "ray.log"
    log.write_text("\n".join([
        head + "Traceback (most recent call last):",
        head + '  File "/opt/venv/lib/python3.10/site-packages/torch/distributed/rendezvous.py", line 143,'
        " in _env_rendezvous_handler" + tail,
        head + "    store = TCPStore(master_addr, master_port, world_size, start_daemon)" + tail,
        head + "RuntimeError: Connection refused" + tail + " " + RAY_NOTE,
    ]) + "\n")
    d = diagnose_job([str(log)], default_rules())
    assert (d["category"], d["rule"]) == ("connection_failure", "connection_failure.store_connect_errno")


def test_a_traceback_behind_dateless_ts_stamps_is_read(tmp_path):
    """moreutils' `ts '%.T'`, `ts '%.s'` and `ts -i` in front of every line of a real torchrun job
    (rank 1 raised a KeyError): the rank's own exception still ends the job (`unknown`), not its
    peer's lost connection that follows it."""
    from pathlib import Path
    from classifier.diagnosis.diagnose import diagnose_job
    job = (Path(__file__).parents[2] / "corpus/unknown/user_exc_torchrun_norecord.log").read_text()
    for n, stamp in enumerate(("14:03:07.512208 ", "1796518808.408548 ", "00:00:01 ")):
        log = tmp_path / f"job{n}.log"
        log.write_text("".join(stamp + line + "\n" for line in job.splitlines()))
        assert diagnose_job([str(log)])["category"] == "unknown", stamp


def test_a_traceback_behind_journald_headers_is_read(tmp_path):
    """`journalctl -o short-iso-precise` / `-o short-precise` of a unit that ran a real torchrun
    job (rank 1 raised a KeyError): `unknown`, not the peer's lost connection."""
    from pathlib import Path
    from classifier.diagnosis.diagnose import diagnose_job
    job = (Path(__file__).parents[2] / "corpus/unknown/user_exc_torchrun_norecord.log").read_text()
    for n, stamp in enumerate(("2026-12-06T00:53:01.001371+0000 gpu-node-07 train.sh[48213]: ",
                               "Dec 06 00:53:01.001371 gpu-node-07 train.sh[48213]: ")):
        log = tmp_path / f"job{n}.log"
        log.write_text("".join(stamp + line + "\n" for line in job.splitlines()))
        assert diagnose_job([str(log)])["category"] == "unknown", stamp


def test_journald_json_records_are_unwrapped():
    """`journalctl -o json`: the line is the record's MESSAGE, its time __REALTIME_TIMESTAMP."""
    rec, other = _lines(
        '{"__CURSOR":"s=ab12;i=7","__REALTIME_TIMESTAMP":"1796518808037000","_HOSTNAME":"gpu-node-07",'
        '"SYSLOG_IDENTIFIER":"python3","_PID":"48213","MESSAGE":"[rank1]: KeyError: \'label_ids\'"}',
        '{"MESSAGE_ID": 3, "note": "x"}')
    assert (rec.msg, rec.rank, rec.ts) == ("KeyError: 'label_ids'", 1, 1796518808.037)
    assert other.msg == '{"MESSAGE_ID": 3, "note": "x"}'


def test_a_wrappers_captured_stream_repr_is_read_as_lines(tmp_path):
    """A launcher script that prints subprocess.run's `stderr: b'...'` after its own
    CalledProcessError: the job's lines inside the repr are read one by one, so the rank's own
    KeyError, not its peer's lost connection, ends the job."""
    from classifier.diagnosis.diagnose import diagnose_job
    job = ("rank 0 step 0 loss 0.3149\n"
           "[rank1]: Traceback (most recent call last):\n"
           '[rank1]:   File "/work/train.py", line 47, in main\n'
           '[rank1]:     raise KeyError("label_ids")\n'
           "[rank1]: KeyError: 'label_ids'\n"
           "[rank0]: Traceback (most recent call last):\n"
           '[rank0]:   File "/work/train.py", line 42, in main\n'
           "[rank0]:     dist.all_reduce(p.grad)\n"
           "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed "
           "by peer [127.0.0.1]:15531. This is typically caused by a remote worker crashing.\n")
    log = tmp_path / "launch.log"
    log.write_text("subprocess.CalledProcessError: Command '['torchrun', 'train.py']' returned non-zero exit "
                   "status 1.\nstderr: " + repr(job.encode()) + "\n")
    assert diagnose_job([str(log)])["category"] == "unknown"
    # a message's own repr with escapes stays one line
    one, = _lines("KeyError: 'a\\nb\\nc'")
    assert one.msg == "KeyError: 'a\\nb\\nc'"


def test_csv_exported_rows_are_unwrapped(tmp_path):
    """CloudWatch Logs Insights' CSV download (`@timestamp,@message`, quotes doubled): each row is
    its stamp and message, so a real torchrun job's traceback is read (`unknown`, rank 1's own
    KeyError) and Python logging's `09:14:02,118` milliseconds stay a stamp."""
    import csv
    import io
    from pathlib import Path
    from classifier.diagnosis.diagnose import diagnose_job
    quoted, bare, logging_ms = _lines(
        '2026-12-06 00:53:03.003,"[rank1]:   File ""/w/train.py"", line 77, in <module>"',
        "2026-12-06 00:53:02.002,[rank1]: Traceback (most recent call last):",
        "2024-03-11 09:14:02,118 - INFO - trainer - step 4")
    assert (quoted.msg, quoted.rank, quoted.ts is not None) == ('File "/w/train.py", line 77, in <module>', 1, True)
    assert (bare.msg, bare.rank) == ("Traceback (most recent call last):", 1)
    assert logging_ms.msg == "trainer - step 4"
    job = (Path(__file__).parents[2] / "corpus/unknown/user_exc_torchrun_norecord.log").read_text()
    out = io.StringIO()
    rows = csv.writer(out)
    rows.writerow(["@timestamp", "@message"])
    for i, line in enumerate(job.splitlines()):
        rows.writerow([f"2026-12-06 00:53:{i % 60:02d}.{i:03d}", line])
    log = tmp_path / "logs-insights-results.csv"
    log.write_text(out.getvalue())
    assert diagnose_job([str(log)])["category"] == "unknown"


def test_a_vllm_error_record_stays_a_failure_once_its_head_is_peeled(tmp_path):
    """vLLM's ERROR record says the job failed whatever its words (a worker's last line before it
    died); an INFO record with the same words is chatter."""
    from classifier.diagnosis.diagnose import diagnose_job
    log = tmp_path / "job.log"
    log.write_text("INFO 04-28 15:55:40 llm_engine.py:100] Initializing an LLM engine\n"
                   "ERROR 04-28 15:55:45 multiproc_worker_utils.py:226] Worker VllmWorkerProcess pid 412 died, exit code: -9\n")
    assert diagnose_job([str(log)])["category"] != "none"
    log.write_text("INFO 04-28 15:55:40 llm_engine.py:100] Initializing an LLM engine\n"
                   "INFO 04-28 15:55:45 metrics.py:406] Avg prompt throughput: 0.0 tokens/s\n")
    assert diagnose_job([str(log)])["category"] == "none"


@pytest.mark.parametrize("line, msg, seconds", [
    # transformers' / accelerate's example scripts: `%m/%d/%Y %H:%M:%S - %(levelname)s - %(name)s`
    ("12/05/2023 10:57:26 - INFO - llmtuner.tuner.core.utils - Gradient checkpointing enabled.",
     "llmtuner.tuner.core.utils - Gradient checkpointing enabled.", 1701773846),
    ("04/24/2018 12:11:33 PM: [ Reading data ... ]", "[ Reading data ... ]", 1524571893),   # 12-hour clock
    ("04/24/2018 01:11:33 AM: x", "x", 1524532293),
    ("15/04/2023 15:21:03: train entered", "train entered", 1681572063),        # day first: 15 is no month
    ("6-10-2022 08:49:15ValueError: invalid literal for int()", "ValueError: invalid literal for int()",
     1654850955),                                                                # glued to the message
    ("1.2.2023 7:05:01,250 | WARNING | low disk", "low disk", 1672643101.25),
])
def test_month_and_day_first_stamps_are_peeled_and_timed(line, msg, seconds):
    got, _, _, _, ts = peel_prefixes(line)
    assert got == msg and ts == pytest.approx(seconds)


@pytest.mark.parametrize("line", [
    "10/20/30 not a date", "3.14159 pi", "1/2/2023 no time here", "12-05-2023 10:57:26x lower case glued",
    "99/99/2023 10:00:00 no calendar has this",
])
def test_what_only_looks_like_a_dated_stamp_stays(line):
    got, _, _, _, ts = peel_prefixes(line)
    assert ts is None and (got == line or line.startswith("99/99"))


def test_a_traceback_behind_day_first_stamps_glued_to_it_is_read(tmp_path):
    """A console that stamps every line `D-M-YYYY HH:MM:SS` with no blank before the text: the
    frames and the exception under them are read as they would be unstamped."""
    from classifier.diagnosis.diagnose import diagnose_job
    body = ['Traceback (most recent call last):',
            '  File "/opt/conda/lib/python3.10/site-packages/numexpr/utils.py", line 159, in _init_num_threads',
            "    requested_threads = int(os.environ['OMP_NUM_THREADS'])",
            "ValueError: invalid literal for int() with base 10: '0-15'"]
    for n, stamp in enumerate(("", "3-1-2025 14:02:11", "13/1/2025 14:02:11 ")):
        log = tmp_path / f"job{n}.log"
        log.write_text("".join(stamp + line + "\n" for line in body))
        d = diagnose_job([str(log)])
        assert (d["category"], d["rule"]) == ("env_var_missing", "env_var_missing.environ_value_not_int"), stamp
