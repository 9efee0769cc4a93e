"""Stage 3d: a message the paste lost, read back from the statement that raised it.

Python prints the raising frame's source line just above the exception line, and for most
library errors that line holds the message itself: `raise ValueError("Type fp16 is not
supported.")`, `assert cuda_home is not None, "CUDA_HOME does not exist, ..."`. A paste that
stops after that frame, or inside the exception line, has lost the words the rules match but
not the statement that would have printed them. This stage rebuilds `Type: literal` from that
statement and lets the line rules read it, for exceptions no other hit explains.

Only a literal counts, and only where the traceback shows no complete message: a message that
is whole says more than its source (an f-string's `{values}` are filled in), and a statement
that raises a variable (`raise err`) proves nothing about the wording.
"""


from classifier.precompiled import re_compile
from classifier.diagnosis.match import scan

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.budget import RegexBudget
    from classifier.diagnosis.match import Hit, KeywordIndex
    from classifier.diagnosis.traceback import Raised

# The string a `raise Type("...")` or `assert cond, "..."` statement starts with (a prefix
# `f`, `r` or `b` allowed); it may run to the end of the line when the call goes on below.
_LITERAL = r"""(?:[rRfFbBuU]{1,2})?(?P<q>["'])(?P<msg>(?:\\.|(?!(?P=q)).){1,2000})(?:(?P=q)|$)"""
_RAISE = re_compile(r"^raise\s+(?P<type>[A-Za-z_][\w.]{0,200})\s*\(\s*" + _LITERAL)
_ASSERT = re_compile(r"^assert\s.{1,2000}?,\s*\(?\s*" + _LITERAL)
_ESCAPE = re_compile(r"""\\([\\'"nt])""")


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: {"n": " ", "t": " "}.get(m.group(1), m.group(1)), text)


def raise_literal(source: str) -> tuple[str, str] | None:
    """(exception type, message literal) of a raise or assert statement, else None."""
    source = source.strip()
    if source.startswith("raise"):
        m = _RAISE.match(source)
        return (m.group("type"), _unescape(m.group("msg"))) if m else None
    if source.startswith("assert"):
        m = _ASSERT.match(source)
        return ("AssertionError", _unescape(m.group("msg"))) if m else None
    return None


def _lost_message(raised: "Raised") -> tuple[str, str] | None:
    """The (type, message) the raising statement gives when the paste shows no whole message."""
    if not raised.frames:
        return None
    found = raise_literal(raised.frames[-1].source)
    if found is None:
        return None
    etype, literal = found
    if raised.line is not None:
        # An exception line is there: it must be this statement's, cut inside its message.
        shown = (raised.message or "").strip()
        if raised.type and raised.type.rsplit(".", 1)[-1] != etype.rsplit(".", 1)[-1]:
            return None
        if len(shown) >= len(literal.strip()) or not literal.startswith(shown):
            return None
    return etype, literal


def source_hits(records: list["Raised"], index: "KeywordIndex", budget: "RegexBudget",
                explained, meets) -> list["Hit"]:
    """Hits of the line rules on messages rebuilt from raising statements.

    `explained(raised)` says whether another hit already points into that exception;
    `meets(structure, raised)` checks a rule's structure block (classifier.diagnosis.structure)
    on the rebuilt exception. A rule that needs lines around its match or a trend does not
    fire here.
    """
    from classifier.diagnosis.normalize import Line

    hits = []
    for raised in records:
        if explained(raised):
            continue
        lost = _lost_message(raised)
        if lost is None:
            continue
        etype, literal = lost
        at = raised.anchor
        text = f"{etype}: {literal}"
        line = Line(at.source, at.lineno, at.text, text, at.rank, at.host, at.ts, at.index, at.task)
        rebuilt = _Rebuilt(raised, etype, literal)
        for hit in scan([line], index, budget=budget):
            rule = hit.rule
            if rule.trend or rule.context:
                continue
            if rule.structure is not None and meets(rule.structure, rebuilt) is None:
                continue
            hit.lines = [at]
            hit.facts = dict(hit.facts)
            hit.facts["message_cut"] = ("the paste ends before the exception's message; it was "
                                        "read from the raising statement")
            hit.facts["raise_statement"] = raised.frames[-1].source.strip()[:300]
            hits.append(hit)
    return hits


class _Rebuilt:
    """A Raised as seen with its rebuilt message (what structure conditions read)."""

    def __init__(self, raised: "Raised", etype: str, literal: str) -> None:
        self.frames = raised.frames
        self.type = etype
        self.message = literal
        self.line = raised.line or raised.anchor
        self.cut = False
