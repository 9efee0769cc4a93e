"""Diagnoses the structure decides: who called the parser, frames without a message, a line
cut at the end of the paste, trends over many lines."""

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
