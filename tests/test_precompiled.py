"""Patterns rebuilt from recorded code (classifier.precompiled, classifier.rules.regexcode)
are the patterns a fresh compile makes, and a damaged table only costs a compile."""

import calendar
import os
import random
import re
import subprocess
import sys

import pytest
import regex

from classifier import precompiled
from classifier.diagnosis.stamps import timegm
from classifier.rules import regexcode
from classifier.rules.load import default_rules
from conftest import ROOT

SAMPLES = ["[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
           "2024-10-02T14:00:00.123Z host-1:42:42 [3] NCCL INFO Channel 00/0 : 0[0] -> 1[1]",
           '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/config.py", line 9',
           "RuntimeError: Ninja is required to load C++ extensions", "", "x" * 300]


def _own_patterns():
    """Every `re_compile` pattern dsdiag's modules made in this process, with its flags."""
    import classifier.diagnosis.diagnose  # noqa: F401 - imports every module of the pipeline
    import classifier.diagnosis.escaped  # noqa: F401 - and the bytes patterns' readers,
    import classifier.diagnosis.storms  # noqa: F401 - which it imports as a log needs them
    return [precompiled.from_table_name(key) for key in {**precompiled._load(), **precompiled._new}]


def test_rebuilt_stdlib_patterns_equal_a_fresh_compile():
    pairs = _own_patterns()
    assert len(pairs) > 100
    assert any(isinstance(pattern, bytes) for pattern, _ in pairs)
    for pattern, flags in pairs:
        entry = precompiled._record(pattern, int(flags))
        rebuilt = precompiled._rebuild(pattern, entry)
        fresh = re.compile(pattern, int(flags))
        # Pattern equality compares the pattern, its flags and its compiled code.
        assert rebuilt == fresh, pattern
        assert rebuilt.groupindex == fresh.groupindex and rebuilt.groups == fresh.groups
        for text in SAMPLES:
            text = text.encode() if isinstance(pattern, bytes) else text
            got, want = rebuilt.search(text), fresh.search(text)
            assert (got and got.span()) == (want and want.span())


def test_a_damaged_entry_falls_back_to_compiling(monkeypatch):
    table = {"0:a(?P<x>b)c": [32, "not base64!", 1, [["x", 1]]]}
    monkeypatch.setattr(precompiled, "_table", table)
    monkeypatch.setattr(precompiled, "_new", {})
    got = precompiled.re_compile("a(?P<x>b)c")
    assert got == re.compile("a(?P<x>b)c") and got.search("zabc")["x"] == "b"
    assert "0:a(?P<x>b)c" not in table


def test_a_bytes_pattern_and_a_str_pattern_have_their_own_entries():
    for pattern in (rb"ab+\xff", "ab+\xff", "b0:ab+"):
        assert precompiled.re_compile(pattern) == re.compile(pattern)
        assert precompiled.from_table_name(precompiled.table_name(pattern, 2)) == (pattern, 2)
    assert precompiled.table_name(b"x", 0) != precompiled.table_name("x", 0)


def test_rule_regexes_rebuilt_from_code_match_like_parsed_ones():
    rules = default_rules()
    sources = sorted({p for rule in rules.rules for p in rule.regex_sources()})
    table = regexcode.record(sources)
    assert len(table) == len(sources)  # this regex release's internals are the ones we know
    regexcode.use("test", table)
    try:
        for rule in rules.rules:
            examples = rule.examples
            texts = SAMPLES + [t for t in (examples.get("match") or []) + (examples.get("no_match") or [])
                               if isinstance(t, str)]
            for pattern in rule.regex_sources():
                rebuilt, fresh = regexcode.compile(pattern), regex.compile(pattern)
                assert rebuilt is not fresh and rebuilt.pattern == fresh.pattern
                assert rebuilt.flags == fresh.flags and rebuilt.groupindex == fresh.groupindex
                for text in texts:
                    got, want = rebuilt.search(text), fresh.search(text)
                    assert (got and (got.span(), got.groupdict())) == \
                        (want and (want.span(), want.groupdict())), (rule.id, pattern, text)
    finally:
        regexcode.load("")


def test_timegm_is_calendars():
    rng = random.Random(7)
    for _ in range(20000):
        fields = (rng.randint(1, 9999), rng.randint(1, 12), rng.randint(0, 40),
                  rng.randint(0, 30), rng.randint(0, 99), rng.randint(0, 99))
        assert timegm(*fields) == calendar.timegm(fields + (0, 0, 0))
    for year, month in ((2020, 0), (2020, 13), (0, 5), (10000, 1)):
        with pytest.raises(ValueError):
            timegm(year, month, 1, 0, 0, 0)


def test_a_small_log_diagnosis_skips_the_slow_stdlib_imports(tmp_path):
    # Each of these cost a small log's run milliseconds (inspect via dataclasses, OpenSSL via
    # hashlib, Hyperscan's 6.5 MB library, regex's parser, ...); a diagnosis from a warm cache
    # needs none of them.
    probe = ("import sys, io\nfrom classifier.cli import main\n"
             "sys.stdout = io.StringIO()\nmain(['--format', 'json', sys.argv[1]])\n"
             "sys.stdout = sys.__stdout__\n"
             "from classifier import precompiled\n"
             "print(','.join(m for m in ('inspect', 'dataclasses', 'hashlib', 'platform', "
             "'calendar', 'pickle', 'gzip', 'lzma', 'bz2', 'yaml', 'hyperscan', 'regex._regex_core') "
             "if m in sys.modules), "
             "len(precompiled._new))")
    log = ROOT / "examples" / "zero3_oom_rank3_of_16.log"
    env_cache = {"DSDIAG_CACHE_DIR": str(tmp_path)}
    import os
    env = {**os.environ, **env_cache}
    for _ in range(2):  # the first run builds the caches
        proc = subprocess.run([sys.executable, "-c", probe, str(log)], capture_output=True,
                              text=True, cwd=ROOT, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
    # Nothing slow imported, and no pattern left to record: every pattern is built the same
    # way each run (a set's order would make a new one every time and rewrite the table).
    assert proc.stdout.split() == ["0"]



def test_the_engine_loaded_alone_is_the_one_import_regex_uses(tmp_path):
    # regexcode loads regex's C module without the package; a later `import regex` (for a
    # pattern not in the table) still loads the package whole, with the same Pattern type.
    probe = ("import sys\nfrom classifier.rules.load import default_rules\n"
             "from classifier.rules import regexcode\n"
             "rule = next(r for r in default_rules().rules if r.regex_sources())\n"
             "built = regexcode.compile(rule.regex_sources()[0])\n"
             "parsed = 'regex._regex_core' in sys.modules\n"
             "import regex\n"
             "print(parsed, regex._regex.compile is not None, type(built) is regex.Pattern, "
             "built.flags == regex.compile(rule.regex_sources()[0]).flags)\n")
    env = {**os.environ, "DSDIAG_CACHE_DIR": str(tmp_path)}
    for _ in range(2):  # the first run records the table
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True", "True"]


def test_a_table_full_of_other_releases_patterns_still_takes_new_ones(tmp_path):
    # The table is keyed by the Python release alone, so earlier releases' patterns fill it;
    # once full, a new pattern must still be kept (the stale ones make way), or every run of
    # a newer dsdiag parses it again (the vocabulary's ~5 ms on a user's long-lived cache).
    probe = ("import sys\nfrom classifier import precompiled as p\n"
             "p.MAX_ENTRIES = 50\n"
             "if sys.argv[1] == 'fill':\n"
             "    for i in range(50): p.re_compile(f'stale{i}[0-9]+')\n"
             "else:\n"
             "    p.re_compile('fresh[a-z]+'); p.re_compile('stale7[0-9]+')\n"
             "p.save(); p._table = None\n"
             "t = p._load(); print(len(t), '0:fresh[a-z]+' in t, '0:stale7[0-9]+' in t, '0:stale8[0-9]+' in t)\n")
    env = {**os.environ, "DSDIAG_CACHE_DIR": str(tmp_path)}

    def run(mode):
        proc = subprocess.run([sys.executable, "-c", probe, mode], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    assert run("fill") == ["50", "False", "True", "True"]
    # full: the new pattern is kept beside the one this run used; the unused ones are dropped
    assert run("use") == ["2", "True", "True", "False"]
