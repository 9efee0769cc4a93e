"""20,000 healthy multi-rank lines in front of a failure change nothing; alone they are `none`."""

import pytest

from conftest import DEMO, LOGS, diagnose_json
from noise import healthy_lines

CASES = sorted(p.name for p in LOGS.glob("*.log")) + ["DEMO"]


@pytest.fixture(scope="module")
def noise_text():
    return "\n".join(healthy_lines(20000)) + "\n"


def test_noise_alone_is_healthy(tmp_path, noise_text):
    path = tmp_path / "noise.log"
    path.write_text(noise_text)
    code, d = diagnose_json(path)
    assert (code, d["category"], d["secondary"]) == (1, "none", [])


@pytest.mark.parametrize("name", CASES)
def test_noise_in_front_keeps_the_diagnosis(tmp_path, noise_text, name):
    source = DEMO if name == "DEMO" else LOGS / name
    _, plain = diagnose_json(source)
    noisy = tmp_path / name
    noisy.write_text(noise_text + source.read_text())
    _, d = diagnose_json(noisy)
    assert d["category"] == plain["category"]
    if plain["evidence"]:
        assert d["evidence"][0]["line"] == plain["evidence"][0]["line"] + 20000
