"""The built-in rules are validated once and read back from the cache (classifier/rules/cache.py)
while their files stay the same; a damaged or unwritable cache costs time, never a diagnosis."""

import json
import marshal
import os
import shutil
import subprocess
import sys

import pytest

from classifier.rules import stamp
from classifier.rules.load import RuleError, builtin_rules_dir, load_rules
from conftest import DEMO, ROOT, run_dsdiag

# A fresh interpreter: load the rules, diagnose the demo, say whether any YAML was parsed.
PROBE = r"""
import sys
from classifier.diagnosis.diagnose import diagnose_job
from classifier.rules.load import load_rules
rules = load_rules()
result = diagnose_job([sys.argv[1]], rules)
print(rules.version, result["category"], "yaml" in sys.modules)
"""


def _probe(cache_dir):
    proc = subprocess.run([sys.executable, "-c", PROBE, str(DEMO)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={"DSDIAG_CACHE_DIR": str(cache_dir),
                                                     "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    version, category, yaml_imported = proc.stdout.split()
    return version, category, yaml_imported == "True"


def _cache_files(directory, kind="rules"):
    if kind == "rules":  # the validated rules are kept with marshal (stamp.RULES_KIND)
        return sorted(directory.glob(f"{stamp.RULES_KIND}-*.marshal"))
    return sorted(directory.glob(f"{kind}-*.marshal"))


def _snapshot(rules):
    """Everything a diagnosis reads from each rule, examples included (a cached rule's
    regexes and steps are unpacked on first use: the sizes and flags are read before)."""
    return [(r.id, r.category, r.title, r.role, r.priority, r.keywords, r.has_patterns,
             r.has_context, r._sizes, r._src(), r.required, r.remediation, r.trend,
             r._structure_data, r.path, r.info.checklist, r.info.remediation, r.info.references,
             r.examples) for r in rules.rules]


def test_the_first_run_writes_the_cache_and_the_next_one_parses_no_yaml(tmp_path):
    first = _probe(tmp_path)
    assert first[2], "the first run has to parse the rule files"
    assert len(_cache_files(tmp_path)) == 1 and len(_cache_files(tmp_path, "redaction")) == 1
    second = _probe(tmp_path)
    assert second == (first[0], first[1], False)  # same rule-set hash and answer, no YAML


def test_the_cached_rule_set_equals_the_one_read_from_yaml(tmp_path, monkeypatch):
    monkeypatch.setenv("DSDIAG_CACHE_DIR", str(tmp_path))
    from_yaml = load_rules(check_builtin=False)
    assert _cache_files(tmp_path)
    from_cache = load_rules()
    assert all(r._examples is None for r in from_cache.rules)  # examples stayed in the YAML
    assert from_cache.version == from_yaml.version
    assert _snapshot(from_cache) == _snapshot(from_yaml)
    assert {k: vars_of(v) for k, v in from_cache.categories.items()} == \
        {k: vars_of(v) for k, v in from_yaml.categories.items()}


def vars_of(info):
    return (info.id, info.checklist, info.remediation, info.references)


def _copied_rules(tmp_path, monkeypatch):
    """(rules dir, rules loaded from it, port_conflict.yaml, its text, a rule's title) of a
    copy of the built-in rules, with the cache in tmp_path."""
    monkeypatch.setenv("DSDIAG_CACHE_DIR", str(tmp_path / "cache"))
    rules_dir = tmp_path / "rules"
    shutil.copytree(builtin_rules_dir(), rules_dir)
    before = load_rules(builtin_dir=rules_dir)
    path = rules_dir / "port_conflict.yaml"
    return rules_dir, before, path, path.read_text(), before.by_id("port_conflict.tcpstore_bind_errno").title


def test_a_changed_rule_file_rebuilds_the_cache(tmp_path, monkeypatch):
    rules_dir, before, path, text, old_title = _copied_rules(tmp_path, monkeypatch)
    path.write_text(text.replace(old_title, "A retitled rule", 1))
    after = load_rules(builtin_dir=rules_dir)
    assert after.by_id("port_conflict.tcpstore_bind_errno").title == "A retitled rule"
    assert after.version != before.version
    assert len(_cache_files(tmp_path / "cache")) == 2
    # A rule file broken after it was cached is reported, not served from the old cache.
    path.write_text(text + "  - id: port_conflict.no_title\n")
    with pytest.raises(RuleError, match="port_conflict.yaml"):
        load_rules(builtin_dir=rules_dir)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "other_key", "bad_shape"])
def test_a_damaged_cache_file_is_ignored_and_rebuilt(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("DSDIAG_CACHE_DIR", str(tmp_path))
    good = load_rules()
    [path] = _cache_files(tmp_path)
    raw = path.read_bytes()
    key, _, blob = raw.partition(b"\n")  # the full key, then the marshalled data
    damaged = {
        "truncate": raw[:len(raw) // 2],
        "garbage": key + b"\n\x00\xff not marshal",
        "other_key": b"0" * 64 + b"\n" + blob,
        "bad_shape": key + b"\n" + marshal.dumps([["x.yaml", 3]]),
    }[damage]
    path.write_bytes(damaged)
    again = load_rules()
    assert _snapshot(again) == _snapshot(good)
    assert path.read_bytes() == raw  # written back whole


def test_an_unwritable_cache_dir_still_diagnoses(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")  # mkdir under a file fails, even for root
    for _ in range(2):
        proc = run_dsdiag("--format", "json", DEMO, env={"DSDIAG_CACHE_DIR": str(blocker / "sub")})
        assert proc.returncode == 0, proc.stderr.decode()
        assert json.loads(proc.stdout)["category"] == "gpu_oom"
        assert proc.stderr == b""
    assert not list(tmp_path.rglob("*.tmp"))


def test_version_is_the_same_with_and_without_the_cache(tmp_path):
    lines = {run_dsdiag("--version", env={"DSDIAG_CACHE_DIR": value}).stdout
             for value in ("off", str(tmp_path), str(tmp_path))}
    assert len(lines) == 1 and b"(rules sha256:" in lines.pop()


def test_user_rules_are_still_validated_next_to_cached_builtins(tmp_path, monkeypatch):
    monkeypatch.setenv("DSDIAG_CACHE_DIR", str(tmp_path / "cache"))
    load_rules()  # warm: the built-in ids now come from the cache
    user = tmp_path / "user"
    user.mkdir()
    builtin_rule = (builtin_rules_dir() / "port_conflict.yaml").read_text()
    (user / "port_conflict.yaml").write_text(builtin_rule)  # every id already taken
    with pytest.raises(RuleError, match="duplicate rule id"):
        load_rules([user])


def test_cached_bytes_come_back_only_under_their_key(tmp_path, monkeypatch):
    from classifier.rules.cache import cache_key, read_cached_bytes, write_cached_bytes
    monkeypatch.setenv("DSDIAG_CACHE_DIR", str(tmp_path))
    key, other = cache_key(b"a"), cache_key(b"b")
    payload = bytes(range(256)) * 4  # any bytes, newlines included
    assert read_cached_bytes("db", key) is None
    assert write_cached_bytes("db", key, payload)
    assert read_cached_bytes("db", key) == payload
    assert read_cached_bytes("db", other) is None          # another key's file name
    path = next(tmp_path.glob("db-*.bin"))
    path.write_bytes(path.read_bytes()[:40])               # cut inside the key line
    assert read_cached_bytes("db", key) is None
    monkeypatch.setenv("DSDIAG_CACHE_DIR", "off")
    assert not write_cached_bytes("db", key, payload) and read_cached_bytes("db", key) is None


def test_unchanged_rule_files_are_known_by_their_stat_and_not_read(tmp_path, monkeypatch):
    from classifier.rules import load, stamp
    monkeypatch.setenv("DSDIAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(stamp, "SETTLED_S", -1.0)  # the copies were written just now
    rules_dir = tmp_path / "rules"
    shutil.copytree(builtin_rules_dir(), rules_dir)
    first = load_rules(builtin_dir=rules_dir)
    assert list((tmp_path / "cache").glob("rulestamp-*.marshal"))

    def unread(paths):
        raise AssertionError("rule files read although their stat was known")
    monkeypatch.setattr(load, "_read_all", unread)
    again = load_rules(builtin_dir=rules_dir)
    assert again.version == first.version and _snapshot(again) == _snapshot(first)
    monkeypatch.undo()


@pytest.mark.parametrize("settled", [True, False])
def test_a_rule_file_rewritten_to_the_same_size_is_hashed_again(tmp_path, monkeypatch, settled):
    from classifier.rules import stamp
    monkeypatch.setattr(stamp, "SETTLED_S", -1.0 if settled else 3600.0)
    rules_dir, before, path, text, old_title = _copied_rules(tmp_path, monkeypatch)
    new_title = old_title[:-1] + ("X" if old_title[-1] != "X" else "Y")
    stat = path.stat()
    path.write_text(text.replace(old_title, new_title, 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # mtime set back; ctime moves
    after = load_rules(builtin_dir=rules_dir)
    assert after.by_id("port_conflict.tcpstore_bind_errno").title == new_title
    assert after.version != before.version
    monkeypatch.setenv("DSDIAG_CACHE_DIR", "off")
    assert load_rules(builtin_dir=rules_dir).version == after.version
