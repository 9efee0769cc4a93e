"""Stage 5: the checklist item and the concrete next steps, filled with values from the log."""

import re
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from classifier.facts import fact_text, typed_facts

if TYPE_CHECKING:
    from classifier.rules.model import CategoryInfo, Rule

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def _as_int(value):
    try:
        return int(float(str(value).replace(",", "")))
    except (TypeError, ValueError):
        return None


def derive_facts(category: str, facts: Mapping[str, object],
                 ranks_seen: Collection[int]) -> dict[str, object]:
    """Add values computed from the captured ones (corrected batch sizes, world size), and type
    them all for the JSON contract (classifier/facts.py)."""
    out = dict(facts)
    if "world_size" not in out and len(ranks_seen) > 1:
        out["world_size"] = max(ranks_seen) + 1
    if category == "batch_size_mismatch":
        tbs = _as_int(out.get("train_batch_size"))
        micro = _as_int(out.get("micro_batch"))
        gas = _as_int(out.get("grad_acc"))
        world = _as_int(out.get("world_size"))
        if micro and gas and world:
            out["expected_train_batch_size"] = micro * gas * world
        if tbs and micro and world and tbs % (micro * world) == 0:
            out["suggested_grad_acc"] = tbs // (micro * world)
    return typed_facts(out)


def fill(template: str, facts: Mapping[str, object]) -> str | None:
    """Fill `{name}` placeholders; None when a named value is missing from the facts."""
    missing = False

    def sub(m):
        nonlocal missing
        value = facts.get(m.group(1))
        if value is None:
            missing = True
            return m.group(0)
        # A template puts values in `code`; a backtick from the log would end that span early.
        return fact_text(value).replace("`", "'")

    text = _PLACEHOLDER.sub(sub, template)
    return None if missing else text


def _what_the_log_shows(facts: Mapping[str, object]) -> str | None:
    """Say what a diagnosis rests on when the log did not show the whole message."""
    if "message_cut" not in facts:
        return None
    if "raised_in" in facts:
        return (f"The log stops before the exception's message, so this rests on its frames: it "
                f"was raised in {facts['raised_in']}. Get the full log of that rank (or rerun "
                f"with the output unbuffered) to read the message itself.")
    return ("The log ends in the middle of this message; what it shows is enough to name the "
            "failure, but read the full log of that rank for the rest (values, the rank it names).")


def remediation_for(category_info: "CategoryInfo | None", rule: "Rule | None",
                    facts: Mapping[str, object]) -> list[str]:
    """Checklist item first, then the rule's own steps, then the category's, all filled."""
    steps = []
    if category_info is not None and category_info.checklist:
        steps.append("Checklist: " + category_info.checklist.strip())
    read_from = _what_the_log_shows(facts)
    if read_from:
        steps.append(read_from)
    templates = list(rule.remediation if rule is not None else ())
    if category_info is not None:
        templates += list(category_info.remediation)
    for template in templates:
        text = fill(template.strip(), facts)
        if text and text not in steps:
            steps.append(text)
    return steps
