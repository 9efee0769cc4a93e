"""Keyword regexes: a trie of literals, and a keyword bounded where it is a word of its own.

Kept apart from match.py so the keyword finder (finder.py), which match.py loads on first
use, builds its patterns without importing match.py back.
"""

import re
from collections.abc import Iterable

from classifier.diagnosis.typography import SMART_FORMS


def trie_regex(words: Iterable[str]) -> str:
    """Build one regex matching any of `words`, shaped as a trie so each position tries one branch.

    A flat alternation of ~200 literals makes `re` try every alternative at every position;
    factoring common prefixes makes the prefilter several times faster. Longer words win over
    their own prefixes, as in the flat longest-first alternation.
    """
    trie = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = True

    def build(node):
        end = "" in node
        branches = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if end:
            return "(?:" + body + ")?"
        return body

    return build(trie)


# Where a keyword may start: not inside a word (`fault` is not in `default`), unless the word
# is camel-cased there (`MemoryError` in `_ArrayMemoryError`, `Timeout` in `ncclTimeout`,
# `Error` in `NCCLError`). Snake_case joins words: `loss nan` is in `train_loss nan`. The end
# is free, so a keyword may be a stem (`required positional argument` + s, `glibc_` + 2.34).
# Chinese, Japanese and Korean run words together, also into an English message pasted after
# them (`...checkpointing和No module named 'torch._six'`): a Latin word starts after those scripts.
_WORD_START = (r"(?:(?<![^\W_])|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])"
               r"|(?<=[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af])(?=[A-Za-z]))")


def _word_led(keyword: str) -> bool:
    # Chinese and Japanese run words together (`ETA: 2621s已杀死`, `错误：`): a keyword in
    # those scripts has no word start to wait for.
    return keyword[0].isalnum() and (keyword[0].isascii() or not "\u2e80" <= keyword[0] <= "\u9fff")


def bounded(keyword: str, exact: bool = False) -> str:
    """`keyword` as a regex, case-insensitive unless `exact`, that finds it where a word starts.

    Run it on the line as written: the case decides where camel-cased words start.
    """
    body = re.escape(keyword) if exact else "(?i:" + re.escape(keyword) + ")"
    return _WORD_START + body if _word_led(keyword) else body


def _punctuation_re(text: str) -> str:
    """`text` escaped, each ASCII punctuation mark also matching its full-width form (a Chinese
    or Japanese input method's `：`, `（`) and its two common smartened forms (`couldn‘t`, `“x”`;
    more would pass Hyperscan's pattern length on long keywords), which normalising folds back
    (typography.py); a colon, comma or semicolon there carries its own space, so the blank after
    it may be missing."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if "!" <= ch <= "~" and not ch.isalnum():
            wide = "|".join(re.escape(c) for c in chr(ord(ch) + 0xFEE0) + SMART_FORMS.get(ch, "")[:2])
            if ch in ":,;" and text[i + 1:i + 2] == " ":
                out.append(f"(?:{re.escape(ch)} |{wide} ?)")
                i += 2
                continue
            out.append(f"(?:{re.escape(ch)}|{wide})")
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def hint_literal(keyword: str) -> str:
    """The lower-cased literal every raw line `keyword_gate(keyword)` finds holds: the keyword, or
    where it has punctuation (which may come full-width), its longest piece without any."""
    if not any("!" <= ch <= "~" and not ch.isalnum() for ch in keyword):
        return keyword.lower()
    pieces = re.split(r"[!-/:-@\[-`{-~]", keyword)
    best = max((p.strip() for p in pieces), key=len)
    return best.lower() if best else keyword.lower()


def keyword_gate(keyword: str, exact: bool = False) -> str:
    """A regex on raw log bytes that finds every line whose message holds `keyword` as bounded.

    Written for Hyperscan and `re` alike (multi-line, no look-around). A superset: the raw line
    may carry what normalising removes just before the keyword — an escape's final letter
    (ANSI `\x1b[0m`, JSON `\n`, `\t`, `\r`) — and an upper-case letter after any letter
    or digit may start a camel-cased word.
    """
    def case(text):
        literal = _punctuation_re(text) if hint_literal(keyword) != keyword.lower() else re.escape(text)
        return literal if exact else "(?i:" + literal + ")"

    if not _word_led(keyword):
        return case(keyword)
    head = r"(?:^|[^A-Za-z0-9]|[mnrt])" + case(keyword)
    if keyword[0].isalpha() and (not exact or keyword[0].isupper()):
        head += r"|[A-Za-z0-9]" + re.escape(keyword[0].upper()) + case(keyword[1:])
    return head
