"""A cut last line is read with each pattern's greedy twin: a lazy repeat of a negated class
must not make a line that can no longer match look like the start of the message."""

import textwrap

import pytest
import regex

from classifier.rules.literal import greedy_twin
from classifier.rules.load import default_rules
from conftest import diagnose_text, load_user_rules

RULE_FILE = textwrap.dedent("""\
    category: gpu_hardware
    rules:
      - id: gpu_hardware.lazy_widget_fault
        title: a widget fault in a module
        keywords: ["widget fault in"]
        patterns: ['widget fault in [^\\s(]{0,300}?module \\d+']
        examples:
          match: ['widget fault in gpu0/module 3', 'widget fault in x.module 12', 'widget fault in module 1']
          no_match: ['widget fault in (x) module 3', 'widget fault in a b module 3']
    """)
HEAD = "step 10 loss 1.2\nstep 11 loss 1.1\n"


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    return load_user_rules(tmp_path_factory.mktemp("rules"), "gpu_hardware", RULE_FILE)


def _category(rules, tmp_path, text):
    d = diagnose_text(rules, tmp_path, text)
    return d["category"], "message_cut" in d["facts"]


@pytest.mark.parametrize("cut", [
    "widget fault in gpu0(slot3)/modu",   # `(` is outside the class: no module can follow
    "widget fault in gpu0 slot3/modu",    # ... nor after a blank
])
def test_a_cut_line_that_cannot_become_the_message_is_not_read_as_it(rules, tmp_path, cut):
    assert _category(rules, tmp_path, HEAD + cut) == ("none", False)


def test_a_cut_line_that_can_still_become_the_message_counts(rules, tmp_path):
    assert _category(rules, tmp_path, HEAD + "widget fault in gpu0/slot3/modu") == ("gpu_hardware", True)


@pytest.mark.parametrize("pattern, twin", [
    (r"foo [^\s(]{0,300}?bar", r"foo [^\s(]{0,300}bar"),
    (r"a*?b+?c??d{2,}?e{,3}?", r"a*b+c?d{2,}e{,3}"),
    (r"(?P<x>.+?)\?x(?:a|b)??", r"(?P<x>.+)\?x(?:a|b)?"),
    (r"[?]*?[[:alpha:]?]+?\p{L}?x\d{1,3}?", r"[?]*[[:alpha:]?]+\p{L}?x\d{1,3}"),
    (r"(?i)no lazy (?=here)? at all+", r"(?i)no lazy (?=here)? at all+"),
    (r"a*+b", r"a*+b"),                   # possessive stays
])
def test_greedy_twin_drops_only_the_lazy_marks(pattern, twin):
    assert greedy_twin(pattern) == twin


def test_every_built_in_greedy_twin_reads_the_rule_examples_as_the_pattern_does():
    checked = 0
    for rule in default_rules().rules:
        for j, source in enumerate(rule._src()[0]):
            twin = greedy_twin(source)
            if twin == source:
                continue
            compiled = regex.compile(twin)
            for example in rule.examples.get("match", []) + rule.examples.get("no_match", []):
                text = example["text"] if isinstance(example, dict) else example
                for line in text.splitlines():
                    assert bool(rule.pattern(j).search(line)) == bool(compiled.search(line)), (rule.id, line)
            checked += 1
    assert checked > 100
