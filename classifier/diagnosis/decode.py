"""Decoding a whole small input at once: what read.decode_line gives line by line, in one call.

Most logs a triage reads are a few hundred lines, read whole (prefilter.py), and decoding
them one line at a time cost ~2 us a line, a twentieth of their diagnosis. A newline byte
is never part of a UTF-8 sequence, and an invalid sequence cut by one is replaced the same
way whether the decoder sees the newline or the end of the line's bytes, so decoding the
chunk and splitting it gives each line's decode_line text. Inputs that need more than that
(NULs to drop with a warning, lines to truncate) are left to decode_line.
"""

from classifier.diagnosis.read import _CONTROL, MAX_LINE, SAMPLE_CHARS, Warnings


def decode_whole(chunk: bytes, lines: list[bytes], warnings: Warnings) -> list[str] | None:
    """decode_line's text of each of `lines`, the pieces of `chunk` (which ends with a
    newline) between its newlines, with its sample of the text counted; None when a line
    holds a NUL or is over MAX_LINE (then each line takes decode_line)."""
    if b"\x00" in chunk or (len(chunk) > MAX_LINE and max(map(len, lines)) > MAX_LINE):
        return None
    text = chunk.decode("utf-8", errors="replace")
    texts = text.split("\n")
    texts.pop()  # the empty piece after the final newline
    if warnings.sampled_chars < SAMPLE_CHARS:
        chars = len(text) - len(texts)  # the lines' characters, newlines aside
        if warnings.sampled_chars + chars < SAMPLE_CHARS:
            warnings.sampled_chars += chars
            warnings.odd_chars += len(_CONTROL.findall(text))  # no newline is a control here
        else:
            for line in texts:
                if warnings.sampled_chars >= SAMPLE_CHARS:
                    break
                warnings.sampled_chars += len(line)
                warnings.odd_chars += len(_CONTROL.findall(line))
    if "\r" in text:
        texts = [line.rstrip("\r") for line in texts]
    return texts
