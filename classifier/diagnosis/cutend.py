"""A paste that stops in the middle of its last message: what the cut prefix still proves.

`... Some NCCL operations have failed or timed ou` still names a collective timeout: a rule
pattern that matches up to the end of the text and would go on matching (a partial match)
counts there, and only there, when it covers at least MIN_CUT characters, with lower
confidence (the hit carries `message_cut`). A shorter one (from MIN_CUT_SHORT) counts when it
has read most of one of the rule's keywords and only fixed wording is left up to its end
(`CUDA error: uncorrectable EC`). The values captured up to the cut are kept except
the one the cut may have shortened.

A prefix counts only when it is unambiguous, that is, when the rest of the line could not
have told another story:
- a copy of an earlier whole line is known to its end: it matches what that line matches
  (torch's `... cannot be initialized to connect to [localhost.localdom`, a warning repeated
  for each address, is healthy once it goes on to `errno: 97`; a cut NCCL retry is a retry);
- a rule that decides after the cut: a pattern whose still-unmatched part is a choice among
  named alternatives (`... keyword argument '(dispatch_batches|split_batches|...)'`), among
  a few codes (`cannot be retrieved (gai error: -(?:2|3|5)`) or a code of two digits or more
  (`exit code 255`) has not yet read what decides it, and does not fire;
- other rules: when such an undecided rule is of another category than the rules that would
  fire (`TypeError: Accelerator.__init__() got an unexpected` may go on to a renamed API, a
  scheduler argument or an optimizer's), the words that decide were cut off, and none fires.
"""

from collections import deque
from collections.abc import Iterator

from classifier.diagnosis.budget import UNTIMED_TEXT
from classifier.precompiled import re_compile
from classifier.diagnosis.hit import (MIN_CUT, MIN_CUT_KEYWORD, _CODE_LINE, _FRAME_HEAD, Hit, _excluded,
                                      _has_context, _near, _after_echo, match_start)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.budget import RegexBudget
    from classifier.diagnosis.match import KeywordIndex

# The next characters a continuation is probed with: letters and digits first, so that free
# text is told by its first FREE probes.
_PROBE = "abcdefghijklmnopqrstuvwxyz0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "".join(
    c for c in map(chr, range(33, 127)) if not c.isalnum())
# An exception's line, which may follow a frame that shows no source
_EXCEPTION_HEAD = re_compile(r"(?:[A-Za-z_]\w{0,60}\.){0,8}[A-Z]\w{0,60}(?:Error|Exception|Interrupt|Exit|Warning)\b")
MAX_FORCED = 48  # characters of fixed wording followed after the cut before giving up
MIN_CUT_SHORT = 16     # a partial match shorter than MIN_CUT still counts from this length
MIN_KEYWORD_READ = 12  # ... when it has read this many characters of one of the rule's keywords
FREE = 8         # a rest that admits this many next characters is free text, a number or a name
LIST = 4         # ... and this many, a list of names (fewer: variants of one wording)


def _partial_at_end(pattern, msg, rule, budget):
    """The partial match of `pattern` that reaches the end of `msg`, or None."""
    m = budget.search(pattern, msg, rule.builtin, partial=True)
    if m is None or m.end() != len(msg):
        return None
    covered = m.end() - match_start(m)
    if covered < MIN_CUT and (covered < MIN_CUT_SHORT or
                              _keyword_read(rule, msg, match_start(m)) < MIN_KEYWORD_READ):
        return None
    return m


def _keyword_read(rule, msg: str, start: int) -> int:
    """How many characters of one of the rule's keywords, whole or cut where the line stops,
    the match from `start` has read: a short match that has read most of a rule's own
    distinctive words (`CUDA error: uncorrectable EC`) says as much as a long generic one."""
    hay = msg[start:] if rule.exact_case else msg[start:].lower()
    best = 0
    for key in rule.keywords:
        if key in hay:
            best = max(best, len(key))
            continue
        for n in range(min(len(key) - 1, len(hay)), best, -1):
            if hay.endswith(key[:n]):
                best = n
                break
    return best


def _admitted(pattern, text, start, rule, budget):
    """Up to 2 * FREE characters the match starting at `start` may go on with after `text`,
    and whether one of them completes it."""
    out, complete = [], False
    # Probes are anchored where the match starts (a search from the line's start costs ~60x
    # more); a user's pattern is searched within the regex budget.
    anchored = rule.builtin and len(text) <= UNTIMED_TEXT
    for c in _PROBE:
        if anchored:
            m = pattern.match(text + c, start, partial=True)
        else:
            m = budget.search(pattern, text + c, rule.builtin, partial=True, pos=start)
        if m is not None and m.end() == len(text) + 1 and m.start() == start:
            out.append(c)
            complete = complete or not m.partial
            if len(out) >= 2 * FREE:  # a letter's two cases are one way on
                break
    return out, complete


def _one_way(chars: list[str]) -> list[str]:
    """The next characters that are different ways on: a letter's two cases, an optional blank
    before the next character and a quote of either kind are one way each."""
    ways = sorted({"'" if c == '"' else c.lower() for c in chars})
    return [c for c in ways if c != " "] or ways


def _fixed_number(pattern, text, start, rule, budget) -> bool:
    """Whether the pattern goes on at `text` with a fixed number of two digits or more: a code
    (an exit status, an errno) whose value the cut line never showed."""
    for _ in range(2):
        nxt, _complete = _admitted(pattern, text, start, rule, budget)
        if len(nxt) != 1 or not nxt[0].isdigit():
            return False
        text += nxt[0]
    return True


def _decided_after_cut(pattern, msg, m, rule, budget) -> bool:
    """Whether what decides the pattern lies after the cut: the rest of it is followed while it
    is fixed wording (one way on); a choice among a few ways (a list of names) or a fixed
    number (`exit code 255`) met on the way was not read, while a complete match or free text
    (many ways on) means the cut prefix already said what the pattern asks."""
    text, start = msg, m.start()
    for _ in range(MAX_FORCED):
        nxt, complete = _admitted(pattern, text, start, rule, budget)
        nxt = _one_way(nxt)
        if len(nxt) >= FREE or complete and len(nxt) == 1 and not nxt[0].isdigit():
            return False
        if len(nxt) >= LIST:
            return True   # a list of names: the one that decides was cut off
        if len(nxt) != 1:
            # a wording's variants (`status` or `code`, `sm_` or `compute_`, `fp16` or `fp32`),
            # but a choice of a few codes starting a value (`gai error: -(?:2|3|5)`) is what
            # decides, and it was cut
            return bool(nxt) and all(c.isdigit() for c in nxt) and not text[-1:].isalnum()
        if nxt[0].isdigit() and not text[-1:].isalnum() and _fixed_number(pattern, text, start, rule, budget):
            return True   # a code the pattern names (`exit code 255`; not `bf16`, `than 0`)
        text += nxt[0]
    return False


def _forced_rest(pattern, msg, m, rule, budget) -> bool:
    """Whether the rest of a short partial match is fixed wording up to a complete match: the
    cut removed no choice. A short match is held to this, as `Attempted loss sca` must not pass
    for `Attempted loss scale: 1`, nor `expected scalar typ` for a half-precision type; and
    the cut must fall inside a word (`# transport retry counter` is a whole comment)."""
    text, start = msg, m.start()
    for _ in range(MAX_FORCED):
        nxt, complete = _admitted(pattern, text, start, rule, budget)
        ways = _one_way(nxt)
        if len(ways) != 1 or text is msg and not (ways[0].isalnum() or ways[0] == "_"):
            return False  # a choice, or a line that ends with a whole word may well be whole
        if complete:
            return True
        text += next(c for c in nxt if c.lower() == ways[0] or c == '"')  # as the pattern spells it
    return False


def _keyword_inside(rule, msg: str, start: int) -> bool:
    """Whether a keyword of the rule, whole or cut at the end, lies in the partial match.

    A partial match that has read none of the rule's words is free text that may still go
    anywhere: `slurmstepd: error: execve(): /tmp/slurmd/job89/slu` holds the compiler rule's
    `: error:` before the match, whose cut path could as well have ended `.cu:4:2: error:`."""
    text = msg[start:]
    low = text.lower()
    for key in rule.keywords:
        hay = text if rule.exact_case else low
        if key in hay:
            return True
        # the keyword cut where the line stops, at least MIN_CUT_KEYWORD characters of it
        for n in range(min(len(key) - 1, len(hay)), MIN_CUT_KEYWORD - 1, -1):
            if hay.endswith(key[:n]):
                return True
    return not rule.keywords


def cut_at_end(buf: deque, at: int, index: "KeywordIndex", seen: set,
               budget: "RegexBudget") -> Iterator[Hit]:
    """Hits on the input's very last line, buf[at], when it stops mid-message (see above)."""
    line = buf[at]
    # A cut stops inside a word: a line ending in a number, punctuation or a separator may
    # well be complete.
    if _CODE_LINE.match(line.msg) or len(line.msg) < MIN_CUT_SHORT or not line.msg[-1].isalpha():
        return
    # The line under a frame's `File "x.py", line N, in f` is that frame's source (argparse's
    # `self.error(_('the following arguments are re`), unless it is the exception itself
    # (a frame with no source to show): the words of a cut source line prove nothing.
    if at > 0 and _FRAME_HEAD.search(buf[at - 1].msg) and not _EXCEPTION_HEAD.match(line.msg):
        return
    # A copy of an earlier whole line (a warning or a retry printed again and again) is known to
    # its end: the rules that whole line matches are the ones the cut copy matches.
    whole = next((other.msg for other in reversed(buf) if len(other.msg) > len(line.msg)
                  and other.msg.startswith(line.msg)), None)
    budget.start(line)
    found, open_ = [], set()  # the rules that fire; categories whose deciding words were cut
    for rule in index.rules_cut_at_end(line.msg):
        if (rule.id, line.source, line.lineno) in seen:
            continue
        for j, whole_pattern in enumerate(rule.patterns):
            pattern = rule.partial_pattern(j)  # a lazy repeat's partial matches are not to be trusted
            m = _partial_at_end(pattern, line.msg, rule, budget)
            if m is None or not m.partial:
                continue
            if rule.context and not _has_context(rule, buf, at, budget):
                break  # a cut line needs the context a whole one does
            if rule.exclude and _excluded(rule, line.msg, budget):
                break
            if rule.not_near and _near(rule, buf, at, budget):
                break  # ... and is held off by what holds the whole one off
            if rule.not_after and _after_echo(rule, buf, at, budget):
                break
            if not _keyword_inside(rule, line.msg, match_start(m)):
                continue
            if whole is not None:
                if budget.search(whole_pattern, whole, rule.builtin) is None or \
                        (rule.exclude and _excluded(rule, whole, budget)):
                    continue
            elif _decided_after_cut(pattern, line.msg, m, rule, budget):
                open_.add(rule.category)
                continue  # a shorter pattern of the rule may have read all it needs
            if m.end() - match_start(m) < MIN_CUT and not _forced_rest(pattern, line.msg, m, rule, budget):
                continue
            found.append((rule, m))
            break
    # Another category's rule that the cut stopped before its deciding words might have been
    # the whole line's: then the prefix proves none of them. Rules that each read all they
    # check are weighed by root cause, as on a whole line.
    if open_ - {rule.category for rule, _ in found}:
        return
    for rule, m in found:
        facts = {k: v.strip() for k, v in m.groupdict().items()
                 if v and v.strip() and m.end(k) < m.end()}
        facts["message_cut"] = "the log ends in the middle of this message"
        seen.add((rule.id, line.source, line.lineno))
        yield Hit(rule, [line], facts)
