"""Side-by-side diff HTML."""

from __future__ import annotations

from workbench.ui.diff import diff_stats, highlight_lines, side_by_side_diff_html

LEFT = "/* a\n   b */\nint x = 1;\nint y = 2;\nint z = 3;\n"
RIGHT = "/* a\n   b */\nint x = 1;\nint y = VEC;\nint z = 3;\nint w = 4;\n"


def test_highlight_keeps_one_fragment_per_line_and_colours_multiline_comment() -> None:
    lines = highlight_lines(LEFT)
    assert len(lines) == 5
    assert 'class="cm"' in lines[0] and 'class="cm"' in lines[1]
    assert 'class="kt"' in lines[2]  # int is a keyword type


def test_stats_count_changed_and_added_lines() -> None:
    s = diff_stats(LEFT, RIGHT)
    assert (s.added, s.removed, s.changed, s.unchanged) == (1, 0, 1, 4)


def test_html_marks_rows_and_escapes_source() -> None:
    out = side_by_side_diff_html("a < b\n", "a < c\n", left_title="base", right_title="tpl")
    table = out.split("</style>", 1)[1]
    assert "&lt;" in table and "a < b" not in table
    assert 'class="wb-chg"' in out
    assert "<th>base</th>" in out and "<th>tpl</th>" in out


def test_context_folds_long_unchanged_runs() -> None:
    left = "".join(f"line{i}\n" for i in range(50))
    right = left.replace("line25\n", "changed\n")
    out = side_by_side_diff_html(left, right, context=3)
    assert "19 unchanged lines" in out and "18 unchanged lines" in out
    assert out.count('class="wb-eq"') == 12
