"""A KeyError's bare quoted key at the top of a paste, before Python's chaining banner, is output
(the exception's message), not a string literal of the source (hit.is_key_message)."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.hit import is_key_message
from classifier.diagnosis.normalize import RawLine, normalize

BANNER = "During handling of the above exception, another exception occurred:"


def _lines(*texts):
    return [line for line in normalize([RawLine("p", n, t) for n, t in enumerate(texts, 1)])
            if line.msg]


def _diagnose(tmp_path, text):
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return diagnose_job([str(log)], use_model=False)


@pytest.mark.parametrize("texts, expected", [
    (("'LOCAL_RANK'", BANNER), True),
    (('"WORLD_SIZE"', "The above exception was the direct cause of the following exception:"), True),
    # a string literal of the source, or a key that does not stand alone, stays code
    (("'LOCAL_RANK'", "    main()"), False),
    (("'LOCAL_RANK' + suffix", BANNER), False),
    (("'LOCAL_RANK'",), False),
])
def test_is_key_message(texts, expected):
    assert is_key_message(_lines(*texts)) is expected


def test_keyerror_head_cut_is_read(tmp_path):
    text = ("'LOCAL_RANK'\n\n" + BANNER + "\n\n"
            "  File \"/work/utils/dist_util.py\", line 22, in setup_dist\n"
            "    th.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))\n")
    result = _diagnose(tmp_path, text)
    assert result["category"] == "env_var_missing"
    assert result["rule"] == "env_var_missing.environ_keyerror_head_cut"


def test_other_quoted_key_stays_silent(tmp_path):
    text = "'model.embed_tokens.weight'\n\n" + BANNER + "\n"
    assert _diagnose(tmp_path, text)["category"] != "env_var_missing"
