"""Side-by-side, syntax-highlighted diff as self-contained HTML (pygments + difflib).

No JavaScript: the result goes into an ``ipywidgets.HTML`` or a report notebook. Lines are
tokenized as one text (so multi-line comments stay coloured), then split per line; each
token becomes a ``<span>`` with pygments' short class name, styled by :func:`diff_css`.
"""

from __future__ import annotations

import difflib
import html
from dataclasses import dataclass

from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer
from pygments.token import STANDARD_TYPES, Token, _TokenType

_SCOPE = ".wb-diff"


@dataclass(frozen=True)
class DiffStats:
    """Line counts of one diff."""

    added: int
    removed: int
    changed: int
    unchanged: int


def _css_class(ttype: _TokenType) -> str:
    while ttype not in STANDARD_TYPES and ttype.parent is not None:
        ttype = ttype.parent
    return STANDARD_TYPES.get(ttype, "")


def highlight_lines(source: str) -> list[str]:
    """One HTML fragment per source line (tokens as ``<span class="...">``)."""
    lines: list[str] = [""]
    for ttype, value in CudaLexer(stripnl=False, ensurenl=False).get_tokens(source):
        cls = _css_class(ttype) if ttype is not Token.Text else ""
        pieces = value.split("\n")
        for i, piece in enumerate(pieces):
            if i > 0:
                lines.append("")
            if piece:
                text = html.escape(piece)
                lines[-1] += f'<span class="{cls}">{text}</span>' if cls else text
    if source.endswith("\n") and lines and lines[-1] == "":
        lines.pop()
    return lines


def diff_css() -> str:
    """The stylesheet for :func:`side_by_side_diff_html`, scoped to ``.wb-diff``."""
    pyg = HtmlFormatter(style="default").get_style_defs(f"{_SCOPE} td.wb-code")
    return "\n".join([
        f"{_SCOPE} {{ font-family: monospace; font-size: 12px; border-collapse: collapse; width: 100%; }}",
        f"{_SCOPE} td {{ padding: 0 6px; vertical-align: top; white-space: pre; }}",
        f"{_SCOPE} td.wb-ln {{ color: #999; text-align: right; user-select: none; width: 3em; }}",
        f"{_SCOPE} td.wb-code {{ width: 50%; max-width: 50%; overflow-x: auto; }}",
        ".wb-diff-scroll { max-height: 480px; overflow: auto; border: 1px solid #ddd; }",
        f"{_SCOPE} th {{ text-align: left; background: #f0f0f0; padding: 2px 6px; }}",
        f"{_SCOPE} tr.wb-del td.wb-left, {_SCOPE} tr.wb-chg td.wb-left {{ background: #ffecec; }}",
        f"{_SCOPE} tr.wb-add td.wb-right, {_SCOPE} tr.wb-chg td.wb-right {{ background: #eaffea; }}",
        pyg,
    ])


def diff_stats(left: str, right: str) -> DiffStats:
    """How many lines were added, removed, changed (paired) and kept."""
    a, b = left.splitlines(), right.splitlines()
    added = removed = changed = same = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            same += i2 - i1
        elif tag == "delete":
            removed += i2 - i1
        elif tag == "insert":
            added += j2 - j1
        else:
            pairs = min(i2 - i1, j2 - j1)
            changed += pairs
            removed += (i2 - i1) - pairs
            added += (j2 - j1) - pairs
    return DiffStats(added=added, removed=removed, changed=changed, unchanged=same)


def side_by_side_diff_html(left: str, right: str, *, left_title: str = "baseline",
                           right_title: str = "template", context: int | None = None) -> str:
    """A two-column HTML table: removed lines red on the left, added green on the right.

    ``context`` (lines) folds long unchanged runs; None shows every line.
    """
    a_html, b_html = highlight_lines(left), highlight_lines(right)
    a, b = left.splitlines(), right.splitlines()
    rows: list[str] = []

    def row(kind: str, i: int | None, j: int | None) -> str:
        ln_a = "" if i is None else str(i + 1)
        ln_b = "" if j is None else str(j + 1)
        code_a = "" if i is None else a_html[i]
        code_b = "" if j is None else b_html[j]
        return (f'<tr class="wb-{kind}"><td class="wb-ln">{ln_a}</td>'
                f'<td class="wb-code wb-left">{code_a}</td><td class="wb-ln">{ln_b}</td>'
                f'<td class="wb-code wb-right">{code_b}</td></tr>')

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            n = i2 - i1
            if context is not None and n > 2 * context + 1:
                for k in range(context):
                    rows.append(row("eq", i1 + k, j1 + k))
                rows.append(f'<tr class="wb-fold"><td></td><td colspan="3">… {n - 2 * context} '
                            f"unchanged lines …</td></tr>")
                for k in range(n - context, n):
                    rows.append(row("eq", i1 + k, j1 + k))
            else:
                rows.extend(row("eq", i1 + k, j1 + k) for k in range(n))
        elif tag == "delete":
            rows.extend(row("del", i, None) for i in range(i1, i2))
        elif tag == "insert":
            rows.extend(row("add", None, j) for j in range(j1, j2))
        else:
            la, lb = i2 - i1, j2 - j1
            for k in range(max(la, lb)):
                i = i1 + k if k < la else None
                j = j1 + k if k < lb else None
                kind = "chg" if i is not None and j is not None else ("del" if j is None else "add")
                rows.append(row(kind, i, j))
    stats = diff_stats(left, right)
    summary = (f"+{stats.added} added, −{stats.removed} removed, ~{stats.changed} changed, "
               f"{stats.unchanged} unchanged")
    return (f"<style>{diff_css()}</style>"
            f'<div class="wb-diff-summary">{html.escape(summary)}</div>'
            f'<div class="wb-diff-scroll"><table class="wb-diff"><tr><th></th>'
            f"<th>{html.escape(left_title)}</th><th></th>"
            f"<th>{html.escape(right_title)}</th></tr>{''.join(rows)}</table></div>")
