"""Characters a paste picks up on its way through a browser, a chat tool or a word processor.

A copy out of a rendered page puts no-break and other typographic spaces and zero-width marks
where the log had plain spaces. Forum software (Discourse), Slack, Word and Google Docs also
"smarten" text outside code blocks: straight quotes become curly (`'x'` -> `‘x’`, `"x"` ->
`“x”`), `--` becomes an en or em dash and `...` an ellipsis. A Chinese or Japanese input
method types ASCII punctuation in its full-width forms (`error：`, `（`, `，`), in logs a
script prints and in pastes retyped around them. Rules are written against the
log's own characters, so the message they read has all of these folded back; the evidence
text keeps the line as it was pasted. Each mark is one character, so folding never joins or
splits a line: line numbers stay the log's.
"""

# The typographic forms each ASCII mark is folded back from: single quotes and primes (a
# smartened `'` is often the closing one, or a prime `′`), double quotes, and the hyphen, the
# no-break hyphen and the minus sign. The prefilter's gates look for these forms too (gates.py).
SMART_FORMS = {"'": "\u2018\u2019\u201a\u201b\u2032\u02bc", '"': "\u201c\u201d\u201e\u201f\u2033",
               "-": "\u2010\u2011\u2212"}
_PLAIN = str.maketrans({
    **dict.fromkeys(map(chr, (0xA0, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000)), " "),
    **dict.fromkeys(map(chr, (0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF)), None),
    **{form: mark for mark, forms in SMART_FORMS.items() for form in forms},
    "\u2026": "...",
    # full-width ASCII (U+FF01-FF5E) is the same character shifted: `（` -> `(`, `Ａ` -> `A`
    **{chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)},
})
# An en or em dash stood for `--` (a flag: `—deepspeed`, `–nproc_per_node`), except one
# between two blanks, which Word makes of a lone `-` (`2024-01-01 12:00:00 – INFO – ...`).
_DASHES = ("\u2013", "\u2014")
_SPACED = (("\uff1a", ": "), ("\uff0c", ", "), ("\uff1b", "; "))


def plain_chars(text: str) -> str:
    """`text` with web-copy spaces, zero-width marks and smart punctuation made plain ASCII."""
    if text.isascii():
        return text
    for wide, narrow in _SPACED:
        if wide in text:  # a full-width colon or comma carries its own space: `error：Failed`
            text = text.replace(wide + " ", narrow).replace(wide, narrow)
    text = text.translate(_PLAIN)
    for dash in _DASHES:
        if dash in text:  # str.replace: a regex with a callback cost a tenth of the line's time
            text = text.replace(f" {dash} ", " - ").replace(dash, "--")
    return text
