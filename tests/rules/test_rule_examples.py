"""Every example in every rule file is a test: `pytest -k <rule id or category>`."""

import pytest

from classifier.rules.load import default_rules
from classifier.rules.examples import check_example, example_cases

RULES = default_rules()
CASES = list(example_cases(RULES))


@pytest.mark.parametrize("rule,kind,text,facts", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule_example(rule, kind, text, facts):
    problem = check_example(rule, kind, text, facts, RULES)
    assert problem is None, problem
