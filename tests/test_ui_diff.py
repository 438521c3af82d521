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


def _notes(out: str) -> list[str]:
    """The parameter note of each row ("" where none)."""
    import re

    rows = re.findall(r"<tr class=\"wb-[a-z]+\">(.*?)</tr>", out)
    found = [re.search(r'<div class="wb-notes">(.*?)</div>', r) for r in rows]
    return [re.sub("<[^>]+>", "", m.group(1)) if m else "" for m in found]


def test_parameters_column_names_each_parameter_beside_the_lines_using_it() -> None:
    from workbench.core.params import Pow2Range

    block = Pow2Range("BLOCK", min=32, max=1024, default=128)
    left = "int a = 1;\nk<<<grid, 256>>>(x);\n// BLOCK in a comment governs nothing\nint b;\n"
    right = ("int a = 1;\nk<<<grid, BLOCK>>>(x);\n// BLOCK in a comment governs nothing\n"
             "int b = BLOCK;\n")
    out = side_by_side_diff_html(left, right, params=[block])
    assert "parameters under the lines using them" in out
    assert _notes(out) == ["", "256 → BLOCK pow2 32..1024, default 128", "", "BLOCK"]


def test_parameters_accept_the_dict_form_and_no_params_leaves_the_column_out() -> None:
    out = side_by_side_diff_html("x = 8;\n", "x = VEC;\n", params=[
        {"name": "VEC", "kind": "choice", "values": [1, 2, 4, 8], "default": 8}])
    assert _notes(out) == ["8 → VEC one of 1, 2, 4, 8, default 8"]
    assert '<div class="wb-notes">' not in side_by_side_diff_html("x = 8;\n", "x = VEC;\n")


def test_changed_tokens_are_marked_inside_changed_lines() -> None:
    out = side_by_side_diff_html("int y = 2;\n", "int y = VEC;\n")
    assert '<span class="mi wb-hl">2</span>' in out
    assert 'wb-hl">VEC</span>' in out
    assert out.count("wb-hl") == 2 + out.split("</style>")[0].count("wb-hl")


def test_long_lines_wrap_in_fixed_equal_columns() -> None:
    css = side_by_side_diff_html("a\n", "b\n").split("</style>")[0]
    assert "table-layout: fixed" in css and "white-space: pre-wrap" in css
    assert "overflow-x: hidden" in css and "text-align: left" in css


def test_diff_cells_keep_left_alignment_and_indentation_without_the_stylesheet() -> None:
    """The review notebook's saved output is sanitized (its <style> dropped) and JupyterLab's
    table rules right-aligned the code and collapsed its indentation: every code cell
    carries its alignment and white-space inline."""
    import re

    from workbench.ui.diff import side_by_side_diff_html

    text = side_by_side_diff_html("int a;\n    int b;\n", "int a;\n    int c;\n")
    cells = re.findall(r'<td class="wb-code[^"]*" style="([^"]*)"', text)
    assert cells and all("text-align: left" in c and "white-space: pre-wrap" in c
                         for c in cells)
    assert "    int" in re.sub(r"<[^>]+>", "", text)  # the indentation is in the text
