"""The compiled-pattern tables kept with marshal: read back as written, or not at all."""

import pytest

from classifier.rules import cache


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DSDIAG_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_a_table_comes_back_as_written(cache_dir):
    table = {"a(?P<x>b)": [0, "QQAAAA==", [("x", 1)], 0, [97, 98], 0, 2], "c": [1, "", [], None, 0, 0, 1]}
    assert cache.write_cached("t", "k" * 64, table, binary=True)
    assert cache.read_cached("t", "k" * 64, binary=True) == table
    assert cache.read_cached("t", "j" * 64, binary=True) is None  # another key
    assert cache.read_cached("t", "k" * 64) is None  # not the JSON file


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_a_damaged_table_is_ignored(cache_dir, damage):
    key = "k" * 64
    cache.write_cached("t", key, {"p": [1, 2, 3] * 100}, binary=True)
    (path,) = cache_dir.glob("t-*.marshal")
    raw = path.read_bytes()
    head = key.encode() + b"\n"
    path.write_bytes({"truncated": raw[:len(raw) // 2], "garbage": head + b"\xff\x00 not marshal",
                      "empty": head}[damage])
    assert cache.read_cached("t", key, binary=True) is None


def test_data_marshal_cannot_keep_is_not_written(cache_dir):
    assert not cache.write_cached("t", "k" * 64, {"p": object()}, binary=True)
    assert not list(cache_dir.iterdir())
