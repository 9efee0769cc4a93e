"""Keywords count where a word starts, in the matcher and the prefilter alike; exact_case
keywords only as written."""

import textwrap

import pytest

from classifier.diagnosis.match import KeywordIndex
from classifier.rules.load import load_rules

RULE_FILE = textwrap.dedent("""\
    category: op_build_error
    rules:
      - id: op_build_error.kw_fault
        title: a fault
        keywords: ["fault"]
        patterns: ['fault']
        examples:
          match: ['segmentation fault here', 'a fault', 'x fault y']
          no_match: ['default', 'defaults']
      - id: op_build_error.kw_memoryerror
        title: memory error
        keywords: ["memoryerror"]
        patterns: ['(?i)memoryerror']
        examples:
          match: ['_ArrayMemoryError: x', 'MemoryError', 'builtins.MemoryError: y']
          no_match: ['nomemoryerror', 'x']
      - id: op_build_error.kw_exact
        title: a state column
        exact_case: true
        keywords: ["TIMEOUT "]
        patterns: ['TIMEOUT\\s+\\d+:\\d+']
        examples:
          match: ['1 TIMEOUT 0:0', 'job TIMEOUT   0:15', '12 TIMEOUT 1:0']
          no_match: ['NCCL_TIMEOUT=1800', 'timeout 0:0']
    """)


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rules")
    (folder / "op_build_error.yaml").write_text(RULE_FILE)
    return load_rules([folder])


def _ids(rules, msg):
    return {r.id.split(".")[1] for r in KeywordIndex(rules.rules).rules_for(msg)} & {
        "kw_fault", "kw_memoryerror", "kw_exact"}


@pytest.mark.parametrize("msg,want", [
    ("[default3]: using the default config", set()),        # `fault` inside `default`
    ("Segmentation fault (core dumped)", {"kw_fault"}),
    ("numpy.core._exceptions._ArrayMemoryError: Unable", {"kw_memoryerror"}),  # camel case
    ("nomemoryerror", set()),
    ("4412093 train TIMEOUT      0:0", {"kw_exact"}),
    ("NCCL_TIMEOUT=1800 timeout=30", set()),                 # exact case, and the blank
    ("4412093 train timeout      0:0", set()),
])
def test_a_keyword_counts_where_a_word_starts(rules, msg, want):
    assert _ids(rules, msg) == want


@pytest.mark.parametrize("engine", ["hyperscan", "re"])
@pytest.mark.parametrize("line,selected", [
    (b"[default3]: using the default config", False),
    (b"[rank0]: \x1b[31mSegmentation fault\x1b[0m", True),
    (b'{"log":"\\nfault in worker\\n"}', True),                 # JSON: `\n` before the word
    (b"_ArrayMemoryError: Unable to allocate", True),
    (b"NCCL_TIMEOUT=1800", False),
    (b"4412093 train TIMEOUT      0:0", True),
])
def test_the_prefilter_selects_by_the_same_rule(rules, engine, line, selected):
    pytest.importorskip("hyperscan")
    from classifier.diagnosis.finder import make_finder
    keywords = {(k, r.exact_case) for r in rules.rules if r.id.startswith("op_build_error.kw_")
                for k in r.keywords}
    finder = make_finder(keywords, (), engine)
    assert bool(finder.line_starts(line + b"\n")) is selected


def test_exact_case_must_be_a_boolean(tmp_path):
    from classifier.rules.load import RuleError
    (tmp_path / "op_build_error.yaml").write_text(RULE_FILE.replace("exact_case: true", "exact_case: yes please"))
    with pytest.raises(RuleError, match="exact_case"):
        load_rules([tmp_path])


@pytest.mark.parametrize("select,problem", [
    ('select: {keywords: ["nope"]}', "select.keywords"),
    ("select: {after: 500}", "select.after"),
    ("select: [1, 2]", "select must be a mapping"),
])
def test_select_names_the_rules_own_keywords_and_a_bounded_reach(tmp_path, select, problem):
    from classifier.rules.load import RuleError
    bad = RULE_FILE.replace("    exact_case: true\n", f"    exact_case: true\n    {select}\n")
    (tmp_path / "op_build_error.yaml").write_text(bad)
    with pytest.raises(RuleError, match=problem):
        load_rules([tmp_path])


def test_hyperscan_and_python_find_the_same_rules_in_the_same_order():
    # KeywordIndex answers a run's first lines in Python and later ones with Hyperscan's
    # cached database where the wheel is installed. Both must answer every corpus line alike,
    # order included (hit order), and so must "auto" across its switch.
    pytest.importorskip("hyperscan")
    from classifier.corpus.evaluate import find_cases
    from classifier.diagnosis.finder import HYPERSCAN_AFTER
    from classifier.diagnosis.normalize import normalize
    from classifier.diagnosis.read import Warnings, read_lines
    from classifier.rules.load import default_rules
    from conftest import ROOT
    rules = default_rules().rules
    fast, python = KeywordIndex(rules, engine="hyperscan"), KeywordIndex(rules, engine="re")
    auto = KeywordIndex(rules)
    checked = 0
    for log, _ in find_cases(ROOT / "corpus"):
        for line in normalize(read_lines(str(log), Warnings())):
            want = fast.rules_for(line.msg)
            assert want == python.rules_for(line.msg) == auto.rules_for(line.msg), line.msg
            assert fast._substrings(line.msg.lower()) == python._substrings(line.msg.lower())
            checked += 1
            if checked == HYPERSCAN_AFTER // 2:
                assert auto._finder.name == "python"  # a small log never loads Hyperscan
    assert (fast._finder.name, python._finder.name, auto._finder.name) == ("hyperscan", "python", "hyperscan")
    assert checked > 50_000


def test_python_keyword_finder_agrees_on_odd_lines():
    # Lines shorter than a gram, longer than the reused slices, non-ASCII and lone surrogates
    # (undecodable bytes): the Python finder must list what Hyperscan lists, in its order.
    pytest.importorskip("hyperscan")
    from classifier.diagnosis.finder import KeywordSubstrings
    from classifier.rules.load import default_rules
    index = KeywordIndex(default_rules().rules)
    lows = index._lows
    fast, python = KeywordSubstrings(lows, "hyperscan"), KeywordSubstrings(lows, "re")
    lines = ["", "x", "xid", "oo", "ıd: xid", "İstanbul cuda out of memory",
             "a" * 9000 + " cuda out of memory " + "nccl timeout " * 20,
             "seg\udcfffault nccl error\udc80", "ſegmentation fault timeout"]
    lines += [kw for kw in lows[::7]] + [kw[:-1] for kw in lows[::11]]
    for line in lines:
        low = line.lower()
        assert python(low) == fast(low), line[:80]
    assert (fast.name, python.name) == ("hyperscan", "python")
