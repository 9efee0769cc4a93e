"""Pastes through forums, chat tools and word processors: smart punctuation read as ASCII."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.normalize import normalize
from classifier.diagnosis.read import RawLine
from classifier.diagnosis.typography import plain_chars


@pytest.mark.parametrize("pasted, plain", [
    ("KeyError: \u2018LOCAL_RANK\u2019", "KeyError: 'LOCAL_RANK'"),
    ("  File \u201c/opt/conda/lib/python3.10/site-packages/deepspeed/__init__.py\u201d, line 171",
     '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/__init__.py", line 171'),
    ("TypeError: FusedAdam.__init__() got an unexpected keyword argument \u2018beta\u2019",
     "TypeError: FusedAdam.__init__() got an unexpected keyword argument 'beta'"),
    ("deepspeed \u2014num_gpus=8 train.py \u2013deepspeed ds_config.json",   # Word's `--`
     "deepspeed --num_gpus=8 train.py --deepspeed ds_config.json"),
    ("2024-01-01 12:00:00,118 \u2013 ERROR \u2013 trainer \u2013 loss is nan",  # a lone ` - `
     "2024-01-01 12:00:00,118 - ERROR - trainer - loss is nan"),
    ("Loading extension module cpu_adam\u2026", "Loading extension module cpu_adam..."),
    ("rank\u00a03:\u200b step", "rank 3: step"),
    ("plain ascii stays 'as' \"is\" -- ...", "plain ascii stays 'as' \"is\" -- ..."),
    # a Chinese input method's full-width punctuation; its colon and comma carry their own space
    ("error\uff1aFailed to read file \uff08data.json\uff09", "error: Failed to read file (data.json)"),
    ("RuntimeError\uff1a CUDA out of memory\uff0cTried to allocate 2.00 GiB",
     "RuntimeError: CUDA out of memory, Tried to allocate 2.00 GiB"),
    ("\u8bad\u7ec3\u5931\u8d25\uff1b\uff2e\uff23\uff23\uff2c", "\u8bad\u7ec3\u5931\u8d25; NCCL"),
])
def test_smart_punctuation_is_folded(pasted, plain):
    assert plain_chars(pasted) == plain


def test_folding_keeps_line_numbers_and_the_pasted_text():
    raw = ["Traceback (most recent call last):",
           "  File \u201c/w/train.py\u201d, line 9, in <module>",
           "    local_rank = int(os.environ[\u2018LOCAL_RANK\u2019])",
           "KeyError: \u2018LOCAL_RANK\u2019"]
    lines = list(normalize([RawLine("x", i, t) for i, t in enumerate(raw, 1)]))
    assert [line.lineno for line in lines] == [1, 2, 3, 4]
    assert lines[3].msg == "KeyError: 'LOCAL_RANK'"
    assert lines[3].text == raw[3]  # evidence shows what was pasted


@pytest.mark.parametrize("lines, category", [
    (["[rank0]: Traceback (most recent call last):",
      "[rank0]:   File \u201c/w/train.py\u201d, line 40, in <module>",
      "[rank0]:     model, optimizer, _, _ = deepspeed.initialize(args=args, model=model)",
      "[rank0]:   File \u201c/opt/conda/lib/python3.10/site-packages/torch/optim/adamw.py\u201d, "
      "line 53, in __init__",
      "[rank0]: TypeError: FusedAdam.__init__() got an unexpected keyword argument \u2018beta\u2019"],
     "config_field_error"),
    (["Traceback (most recent call last):",
      "  File \u201c/w/train.py\u201d, line 9, in <module>",
      "    local_rank = int(os.environ[\u2018LOCAL_RANK\u2019])",
      "KeyError: \u2018LOCAL_RANK\u2019"], "env_var_missing"),
    # typed with a Chinese input method around the machine output: the error record is a failure
    (["step 10 loss 1.20",
      "error\uff1aFailed to read file '/data/train.json' with error <class 'pyarrow.lib.ArrowInvalid'>"
      "\uff1a JSON parse error"], "unknown"),
    (["[rank0]: torch.OutOfMemoryError\uff1aCUDA out of memory. Tried to allocate 2.00 GiB"], "gpu_oom"),
    # typed into an issue outside a code block: bold, and markdown's escaped backticks
    (["**RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling \\`cublasCreate(handle)\\`**"],
     "gpu_oom"),
])
def test_a_smartened_paste_keeps_its_diagnosis(lines, category, tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert diagnose_job([str(log)])["category"] == category
    plain = tmp_path / "plain.log"
    plain.write_text(plain_chars("\n".join(lines)) + "\n", encoding="utf-8")
    assert diagnose_job([str(plain)])["category"] == category


@pytest.mark.parametrize("select", ["re", "hyperscan"])
def test_a_full_width_keyword_line_is_selected_in_a_big_log(tmp_path, select):
    # the prefilter reads raw bytes: a keyword's punctuation typed full-width must still pick
    # its line, so a big log gets the answer the full path gives
    steps = "".join(f"[rank0]: step {i} loss 1.{i % 10}\n" for i in range(6000))
    log = tmp_path / "build.log"
    log.write_text(steps + "ninja\uff1abuild stopped\uff1asubcommand failed.\n" + steps, encoding="utf-8")
    full = diagnose_job([str(log)], select=False)
    assert full["category"] == "op_build_error"
    assert diagnose_job([str(log)], select=select)["category"] == full["category"]
