"""A whole log printed as one JSON record or Python repr, longer than the reader's line limit,
is read as the lines it stands for (escaped.py), its failure at the end included."""

import gzip
import json

import pytest

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.escaped import unescaped
from classifier.diagnosis.read import MAX_LINE

HEALTHY = ("[2024-05-02 10:{m:02d}:{s:02d},118] [INFO] [logging.py:96:log_dist] [Rank 0] "
           "step={i}, skipped=0, lr=[1.9e-05], mom=[(0.9, 0.999)] \u2014 it's \"fine\"")
OOM = """Traceback (most recent call last):
  File "/workspace/train.py", line 211, in <module>
    main()
  File "/workspace/train.py", line 187, in main
    loss = engine(batch)
  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1501, in _call_impl
    return forward_call(*args, **kwargs)
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity; 75.02 GiB already allocated; 1.20 GiB free; 76.40 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.
[2024-05-02 10:59:59,001] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u', 'train.py', '--local_rank=0'] exits with return code = 1
"""


def _log(lines=1500):
    healthy = [HEALTHY.format(m=i // 60 % 60, s=i % 60, i=i) for i in range(lines)]
    return "\n".join(healthy) + "\n" + OOM


@pytest.mark.parametrize("form", [
    lambda text: json.dumps({"log": text, "stream": "stderr"}),
    lambda text: json.dumps({"time": "2024-05-02T10:59:59Z", "log": text}, ensure_ascii=False),
    repr,
])
@pytest.mark.parametrize("compressed", [False, True])
def test_a_long_log_printed_as_one_string_keeps_its_failure(form, compressed, tmp_path):
    text = form(_log())
    assert "\n" not in text and len(text) > 2 * MAX_LINE
    data = text.encode()
    path = tmp_path / ("paste.log.gz" if compressed else "paste.log")
    path.write_bytes(gzip.compress(data) if compressed else data)
    assert diagnose_job([str(path)])["category"] == "gpu_oom"


@pytest.mark.parametrize("size", [1, 5, 12, 13, 4096])
def test_decoding_does_not_depend_on_where_chunks_are_cut(size):
    log = _log(700) + "astral \U0001F600, \\n kept, tab\there, ctrl \x1b[0m\n"
    for data in (json.dumps({"log": log}).encode() + b"\nnext line\n",
                 repr(log).encode() + b"\nnext line\n"):
        out = b"".join(unescaped([data[i:i + size] for i in range(0, len(data), size)], MAX_LINE))
        assert out.decode() == log + "next line\n"


def test_other_inputs_pass_untouched():
    long_line = b'{"msg": "' + b"x\\t" * MAX_LINE + b'"}'  # one long string, no lines in it
    for data in (b"a\nb\\nc\\nd\\n\n" + long_line, b"plain " * MAX_LINE, long_line[:100] + b"\n"):
        chunks = [data[i:i + 1000] for i in range(0, len(data), 1000)]
        assert b"".join(unescaped(chunks, MAX_LINE)) == data
