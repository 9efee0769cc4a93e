"""Version-specific advice cannot go stale silently: wheel indexes, DeepSpeed op switches and the
torch / DeepSpeed names that remediation text quotes are checked against known values and the
installed packages (torch and deepspeed as `make install-test` pins them)."""

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

from classifier.diagnosis.remediate import OP_BUILD_VARS
from classifier.rules.load import default_rules

# The pytorch.org wheel indexes (download.pytorch.org/whl/cuXY) and the torch releases each one
# carries, first and last (pytorch.org/get-started/previous-versions). None: still carried by
# the newest release this table knows (torch 2.9). An index missing here, or one whose last
# release is older than OLDEST_CURRENT_TORCH, must not be advised; add a row with its source
# when a new index appears.
WHEEL_INDEXES = {
    "cu117": ("1.13.0", "2.0.1"),
    "cu118": ("2.0.0", "2.7.1"),
    "cu121": ("2.1.0", "2.5.1"),
    "cu124": ("2.4.0", "2.6.0"),
    "cu126": ("2.6.0", None),
    "cu128": ("2.7.0", None),
}
OLDEST_CURRENT_TORCH = "2.6.0"  # the oldest torch release advice still has to serve
INDEX = re.compile(r"\bcu(\d{3})\b")


def _version(text):
    return tuple(int(x) for x in text.split("."))


def _remediation_texts():
    """(where, text) of every checklist item and remediation step the shipped rules can print."""
    rules = default_rules()
    out = []
    for info in rules.categories.values():
        out.append((f"{info.id} checklist", info.checklist))
        out += [(f"{info.id} remediation", s if isinstance(s, str) else s["text"]) for s in info.remediation]
    for rule in rules.rules:
        out += [(rule.id, s if isinstance(s, str) else s["text"]) for s in rule.remediation]
    return out


TEXTS = _remediation_texts()


def test_every_wheel_index_advised_is_known_and_still_current():
    seen = set()
    for where, text in TEXTS:
        for m in INDEX.finditer(text):
            index = m.group(0)
            seen.add(index)
            assert index in WHEEL_INDEXES, f"{where}: {index} is not in the table of known indexes"
            last = WHEEL_INDEXES[index][1]
            assert last is None or _version(last) >= _version(OLDEST_CURRENT_TORCH), (
                f"{where}: {index} stopped at torch {last}; advise an index current torch releases use")
    assert seen, "no wheel index advised at all: the check would pass vacuously"


def test_the_table_rejects_the_index_that_went_stale():
    # cu121 was the advice until it ended with torch 2.5: the check above must refuse it.
    assert _version(WHEEL_INDEXES["cu121"][1]) < _version(OLDEST_CURRENT_TORCH)


def _installed_build_vars():
    """NAME -> BUILD_VAR of every op builder in the installed deepspeed, read from its sources."""
    spec = importlib.util.find_spec("deepspeed")
    if spec is None:
        pytest.skip("deepspeed is installed by `make install-test`")
    root = Path(next(iter(spec.submodule_search_locations))) / "ops" / "op_builder"
    found = {}
    for path in root.rglob("*.py"):
        text = path.read_text()
        for name, var in zip(re.findall(r"^\s+NAME = [\"'](\w+)[\"']", text, re.M),
                             re.findall(r"^\s+BUILD_VAR = [\"'](\w+)[\"']", text, re.M)):
            found.setdefault(name, var)
    return found


def test_op_build_variables_match_the_installed_deepspeed():
    installed = _installed_build_vars()
    for op, var in OP_BUILD_VARS.items():
        assert installed.get(op) == var, (op, var, installed.get(op))
    known = set(installed.values()) | {"DS_BUILD_OPS"}
    for where, text in TEXTS:
        for var in re.findall(r"\bDS_BUILD_[A-Z_]+\b", text):
            assert var in known, f"{where}: {var} is no DeepSpeed build switch"


def _resolves(dotted):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_torch_and_deepspeed_names_quoted_in_remediation_exist():
    pytest.importorskip("deepspeed", reason="deepspeed is installed by `make install-test`")
    names = {m for _, text in TEXTS
             for quoted in re.findall(r"`([^`]+)`", text)
             for m in re.findall(r"\b(?:torch|deepspeed)(?:\.[A-Za-z_]\w*)+", quoted)}
    assert "torch._C._GLIBCXX_USE_CXX11_ABI" in names
    missing = sorted(n for n in names if not _resolves(n))
    assert not missing, missing
