"""A rule that fires on an exception's structure alone is vetoed by its `exclude`, `not_near`
and `not_after` as a line rule is, on the same lines around the exception."""

import textwrap

import pytest

from classifier.rules.examples import check_example
from conftest import diagnose_text, load_user_rules

RULE_FILE = textwrap.dedent("""\
    category: env_var_missing
    rules:
      - id: env_var_missing.probe_environ_frames
        title: a launcher variable read from os.environ was missing (frames only)
        structure:
          exception: 'ProbeLookupError$'
          source: 'os\\.environ\\['
        exclude: ['PROBE_OPTIONAL']
        not_near: ['dry run of the launcher']
        not_after: ['restarting the worker group']
        examples:
          match:
            - text: |
                Traceback (most recent call last):
                  File "/srv/train.py", line 12, in <module>
                    rank = int(os.environ["PROBE_RANK"])
                ProbeLookupError: 'PROBE_RANK'
            - text: |
                Traceback (most recent call last):
                  File "C:\\\\jobs\\\\train.py", line 3, in main
                    world = os.environ['PROBE_WORLD']
                ProbeLookupError: 'PROBE_WORLD'
            - text: |
                [rank1]: Traceback (most recent call last):
                [rank1]:   File "/srv/launch.py", line 40, in setup
                [rank1]:     addr = os.environ["PROBE_ADDR"]
                [rank1]: ProbeLookupError: 'PROBE_ADDR'
          no_match:
            - text: |
                [launcher] dry run of the launcher: nothing is started
                [rank0]: Traceback (most recent call last):
                [rank0]:   File "/opt/app/run.py", line 7, in setup
                [rank0]:     host = os.environ["PROBE_HOST"]
                [rank0]: ProbeLookupError: 'PROBE_HOST'
            - text: |
                ProbeLookupError: 'PROBE_OPTIONAL' while reading os.environ['PROBE_OPTIONAL']
    """)
TRACEBACK = ('Traceback (most recent call last):\n'
             '  File "/srv/train.py", line 12, in <module>\n'
             '    rank = int(os.environ["PROBE_RANK"])\n'
             "ProbeLookupError: 'PROBE_RANK'\n")
HEALTHY = "".join(f"step {i} loss 1.{i}\n" for i in range(8))


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    return load_user_rules(tmp_path_factory.mktemp("rules"), "env_var_missing", RULE_FILE)


def _rule(rules, tmp_path, text):
    return diagnose_text(rules, tmp_path, text)["rule"]


@pytest.mark.parametrize("text, fires", [
    (HEALTHY + TRACEBACK, True),
    ("dry run of the launcher\n" + HEALTHY + TRACEBACK, False),            # not_near, before
    (HEALTHY + TRACEBACK + "dry run of the launcher\n", False),            # ... and just after
    (HEALTHY + TRACEBACK + "x\ny\ndry run of the launcher\n", True),       # past the lines after
    ("dry run of the launcher\n" + HEALTHY * 7 + TRACEBACK, True),         # over 50 lines before
    ("restarting the worker group\n" + HEALTHY + TRACEBACK, False),         # not_after
    (HEALTHY + TRACEBACK + "restarting the worker group\n", True),          # not_after reads no line after
    (HEALTHY + TRACEBACK.replace("PROBE_RANK", "PROBE_OPTIONAL"), False),   # exclude, on the exception
])
def test_structure_only_rules_obey_their_vetoes(rules, tmp_path, text, fires):
    assert (_rule(rules, tmp_path, text) == "env_var_missing.probe_environ_frames") is fires


def test_a_structure_only_rules_examples_check_its_vetoes(rules):
    rule = next(r for r in rules.rules if r.id == "env_var_missing.probe_environ_frames")
    for kind in ("match", "no_match"):
        for example in rule.examples[kind]:
            assert check_example(rule, kind, example["text"], {}, rules) is None, (kind, example["text"])
