"""A paste that is one quoted message and nothing else (a reporter quoting what the tool printed,
`"No space left on device"`) is read as that message; a quoted string with code or other
lines around it stays a source line's string (match.scan, hit.is_code)."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job


def _category(tmp_path, text):
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return diagnose_job([str(log)], use_model=False)["category"]


@pytest.mark.parametrize("text", [
    '"No space left on device"\n',
    "'No space left on device'\n",
    '\n"No space left on device".\n',
    # a single space before the quote, as a reporter's sentence left it
    ' "No space left on device"\n',
    # two ranks' copies of it, one under the other
    '"No space left on device"\n"No space left on device"\n',
])
def test_lone_quoted_message_is_read(tmp_path, text):
    assert _category(tmp_path, text) == "disk_full"


@pytest.mark.parametrize("text", [
    # the string of a raise spread over lines: code
    'raise OSError(\n    "No space left on device"\n)\n',
    # a lone string indented as a source line is code
    '                "No space left on device"\n',
    '\t"No space left on device"\n',
    # a quoted line among other output stays as before
    'Saving checkpoint\n"No space left on device"\n',
    '"No space left on device"\n"Saving checkpoint"\n',
])
def test_quoted_string_with_lines_around_stays_code(tmp_path, text):
    assert _category(tmp_path, text) != "disk_full"


# The import system's messages quoted whole, even in a docstring's triple quotes: the names
# in quotes after the words are values, where a source string would hold a placeholder.
@pytest.mark.parametrize("text", [
    '"""cannot import name \'L2Norm\' from \'megatron.core.transformer.torch_norm\'"""\n',
    '"No module named \'torch._six\'"\n',
    "Loading the model\n\"cannot import name 'cached_download' from 'huggingface_hub'\"\n",
])
def test_quoted_import_message_is_read(tmp_path, text):
    assert _category(tmp_path, text) == "version_mismatch"


def test_import_message_with_placeholders_stays_code(tmp_path):
    text = 'raise ImportError(\n    "cannot import name {name!r} from {module!r}"\n)\n'
    assert _category(tmp_path, text) != "version_mismatch"


@pytest.mark.parametrize("numbers", [(1, 3), (1, 2, 5), (2, 4)])
def test_a_gap_that_leaves_the_buffer_empty_is_no_lone_message(numbers):
    """The prefilter can skip lines; a gap clears the scan's buffer, and when only blanks follow,
    the drain must not read a lone message from an empty buffer (a fuzz input crashed here)."""
    from classifier.diagnosis import match
    from classifier.diagnosis.normalize import normalize
    from classifier.diagnosis.read import RawLine
    from classifier.rules.load import default_rules

    texts = ['"No space left on device"'] + [""] * (len(numbers) - 1)
    raw = [RawLine("gap.log", n, text) for n, text in zip(numbers, texts)]
    hits = list(match.scan(normalize(raw), default_rules().keyword_index()))
    assert all(h.rule.category != "disk_full" or h.lines[0].lineno == 1 for h in hits)


@pytest.mark.parametrize("text,category", [
    # rules that refuse a quoted copy of their text (a source line's string) read the lone quote
    ("'use_libuv was requested but PyTorch was built without libuv support'\n", "version_mismatch"),
    ('"Type bf16 is not supported on your device."\n', "precision_conflict"),
    ('"Type fp16 is not supported."\n"Type fp16 is not supported."\n', "precision_conflict"),
    # a quote that does not close on its line opens no source string (Python closes each piece
    # of a string spread over lines; triple quotes hold their own): a quoted message the paste
    # wrapped onto the next line, closing there, is output
    ('"NCCL watchdog thread terminated with exception: [Rank 1] Watchdog caught collective '
     'operation timeout: WorkNCCL(SeqNum=103, OpType=BROADCAST, NumelIn=213, NumelOut=213, Timeout\n'
     '(ms)=1800000) ran for 1800913 milliseconds before timing out.".\n', "nccl_timeout"),
    ("'RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capac\n"
     "ity; 14.51 GiB already allocated)' is what I get\n", "gpu_oom"),
])
def test_lone_quoted_message_reads_past_a_rules_quote_guard(tmp_path, text, category):
    assert _category(tmp_path, text) == category


def test_the_same_string_inside_code_stays_code(tmp_path):
    text = '    TORCH_CHECK(false, "use_libuv was requested but PyTorch was built without libuv support");\n'
    assert _category(tmp_path, text) != "version_mismatch"
    text = 'raise ValueError(\n    "Type bf16 is not supported on your device."\n)\n'
    assert _category(tmp_path, text) != "precision_conflict"
    # each piece closes on its line (a string spread over lines), or triple quotes open a block
    text = ('raise RuntimeError(\n    "Watchdog caught collective operation timeout: "\n'
            '    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 10 milliseconds"\n)\n')
    assert _category(tmp_path, text) != "nccl_timeout"
    text = ('def check():\n    """Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)\n'
            '    ran for 10 milliseconds before timing out."""\n')
    assert _category(tmp_path, text) != "nccl_timeout"
