"""Reading hostile bytes: compression, NULs, invalid UTF-8, `\\r` rewrites, giant lines."""

import gzip

from classifier.diagnosis.normalize import visible_text
from classifier.diagnosis.read import MAX_LINE, Warnings, read_lines


def _read(tmp_path, data, name="x.log"):
    path = tmp_path / name
    path.write_bytes(data)
    warnings = Warnings()
    return [(r.lineno, r.text) for r in read_lines(str(path), warnings)], warnings.as_list()


def test_lines_are_numbered_and_last_line_without_newline_kept(tmp_path):
    lines, warnings = _read(tmp_path, b"a\nb\r\nc")
    assert lines == [(1, "a"), (2, "b"), (3, "c")] and warnings == []


def test_nul_bytes_and_invalid_utf8_never_stop_the_scan(tmp_path):
    lines, warnings = _read(tmp_path, b"ok\x00\x00 line\n\xff\xfe bad \xc3\nlast\n")
    assert lines[0] == (1, "ok line")
    assert lines[1][1] == "\ufffd\ufffd bad \ufffd"
    assert lines[2] == (3, "last")
    assert [w["code"] for w in warnings] == ["nul_bytes"]


def test_overlong_line_is_truncated_with_a_warning_and_reading_goes_on(tmp_path):
    big = b"CUDA out of memory " + b"x" * (3 * MAX_LINE) + b"\nnext\n"
    lines, warnings = _read(tmp_path, big)
    assert len(lines[0][1]) == MAX_LINE and lines[0][1].startswith("CUDA out of memory")
    assert lines[1] == (2, "next")
    assert warnings[0]["code"] == "line_truncated"


def test_truncated_gzip_yields_what_was_readable_and_warns(tmp_path):
    data = gzip.compress(b"".join(b"line %d\n" % i for i in range(20000)))
    lines, warnings = _read(tmp_path, data[: len(data) // 2], name="cut.gz")
    assert lines and lines[0] == (1, "line 0")
    assert [w["code"] for w in warnings] == ["truncated_input"]


def test_utf16_with_bom_is_decoded(tmp_path):
    lines, _ = _read(tmp_path, "héllo\nworld\n".encode("utf-16"))
    assert [t for _, t in lines] == ["héllo", "world"]


def test_empty_input_has_no_lines(tmp_path):
    assert _read(tmp_path, b"") == ([], [])


def test_progress_bar_rewrites_and_colours_resolve_to_what_a_terminal_shows():
    raw = "\r  0%|          | 0/10\r 50%|█████     | 5/10\r\x1b[31mRuntimeError: boom\x1b[0m"
    assert visible_text(raw) == "RuntimeError: boom"
    assert visible_text("\r 10%|█\r") == " 10%|█"


def test_messages_between_progress_bar_redraws_are_kept():
    bar = " 20%|██        | 2/10 [00:02<00:08,  1.0it/s]"
    # Another rank's error written right after a bar, then the bar redrawn over it.
    assert visible_text("\r" + bar + "RuntimeError: CUDA out of memory.\r" + bar) == \
        "RuntimeError: CUDA out of memory."
    assert visible_text("RuntimeError: boom\r" + bar) == "RuntimeError: boom"
    # Bars only: the last redraw stands for the line.
    assert visible_text("Loading checkpoint shards:  50%|█████     | 1/2 [00:05<00:05,  5.1s/it]\r"
                        "Loading checkpoint shards: 100%|██████████| 2/2 [00:07<00:00,  3.6s/it]") == \
        "Loading checkpoint shards: 100%|██████████| 2/2 [00:07<00:00,  3.6s/it]"
