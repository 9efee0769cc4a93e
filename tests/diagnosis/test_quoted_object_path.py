"""A line that opens on a quote is a source line's string (hit._CODE_LINE) unless it is shaped
like output no source string opens on. The linker's lines open on the object file they name
(`build/x.o: file not recognized: ...`), relative or absolute, as the dynamic loader's open on a
shared object (`/x/_C.so: undefined symbol: ...`): a reporter quoting them, quotes and all, is
quoting output."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job


def _category(tmp_path, text):
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return diagnose_job([str(log)], use_model=False)["category"]


@pytest.mark.parametrize("text", [
    # the linker's and distutils' lines run together in one quoted sentence
    "\"csrc/fused/softmax.o: file not recognized: File format not recognized collect2: error: ld"
    " returned 1 exit status error: command 'x86_64-linux-gnu-g++' failed with exit status 1\"\n",
    "'/tmp/build/temp.linux-x86_64-3.8/csrc/adam.o: file not recognized: file truncated"
    " collect2: error: ld returned 1 exit status'\n",
])
def test_quoted_linker_output_is_read(tmp_path, text):
    assert _category(tmp_path, text) == "op_build_error"


@pytest.mark.parametrize("text", [
    # under a traceback's frame head a quoted line is that frame's source
    '  File "/work/setup.py", line 40, in <module>\n'
    '    "csrc/softmax.o: file not recognized collect2: error: ld returned 1 exit status"\n',
    # a string that does not open on an object file's path stays a source line's string
    "\"see the log: collect2: error: ld returned 1 exit status\" if failed else 'ok'\n",
])
def test_other_quoted_strings_stay_code(tmp_path, text):
    assert _category(tmp_path, text) != "op_build_error"
