"""A logger's stamp and level in front of every line (`2024-...Z INFO `) leave the message's
own head alone: a key/value table's row keeps its edge and first cell, a notebook's arrow
(`---> 11 from ...`) its dashes (the notebook's message line is cut off here: the frames tell)."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.normalize import peel_prefixes

TABLE = """-----------------------------
| grad_norm     | 2.34e+05 |
| lg_loss_scale | -0.821   |
| loss          | 5.99e+04 |
| mse           | 0.914    |
| samples       | 402      |
| step          | 200      |
-----------------------------
"""
NOTEBOOK = """---------------------------------------------------------------------------
ModuleNotFoundError                       Traceback (most recent call last)
[<ipython-input-2-8f93516a9283>](https://localhost:8080/#) in <cell line: 13>()
     11 from omegaconf import OmegaConf
---> 13 from taming.models import cond_transformer, vqgan
     14 import taming.modules

2 frames
[/content/taming-transformers/taming/data/utils.py](https://localhost:8080/#) in <module>
      9 import torch
---> 11 from torch._six import string_classes
     12 from tqdm import tqdm
"""


def _stamped(text):
    return "\n".join(f"2024-01-01T12:00:{i:02d}.123Z INFO {line}"
                     for i, line in enumerate(text.split("\n")))


@pytest.mark.parametrize("text, want", [(TABLE, "fp16_overflow"), (NOTEBOOK, "version_mismatch")])
def test_a_stamped_paste_keeps_its_category(text, want, tmp_path):
    for form in (text, _stamped(text)):
        log = tmp_path / "paste.log"
        log.write_text(form)
        assert diagnose_job([str(log)])["category"] == want


@pytest.mark.parametrize("line, msg", [
    ("2024-01-01T12:00:01.123Z INFO | lg_loss_scale | -0.821   |", "| lg_loss_scale | -0.821   |"),
    ("2024-01-01 12:00:00 | INFO | | lg_loss_scale | -0.821 |", "| lg_loss_scale | -0.821 |"),
    ("2024-01-01T12:00:01Z INFO ---> 11 from torch._six import x", "---> 11 from torch._six import x"),
    # the logger's own separators still go
    ("2024-01-01 12:00:00 | ERROR | stderr | RuntimeError: x", "RuntimeError: x"),
    ("2024-01-01 12:00:00,123 - INFO - Running training", "Running training"),
    ("2024-01-01 12:00:00 | INFO | msg", "msg"),
])
def test_the_level_is_peeled_and_the_message_head_stays(line, msg):
    assert peel_prefixes(line)[0] == msg
