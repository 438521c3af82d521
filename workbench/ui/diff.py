"""Side-by-side review diff as self-contained HTML (pygments + difflib, no JavaScript).

Built for reading a template against its baseline in a JupyterLab panel or a report:

- two code columns of equal width with line numbers, syntax colours (each source is
  tokenized as one text, so multi-line comments stay coloured) and long lines *wrapped*
  with their indentation kept, so nothing scrolls sideways and nothing is cut;
- changed lines marked, and inside them the changed tokens (``wb-hl``);
- under each template line that uses parameters, right-aligned in the same cell, their
  names with values and default (the first time); where a baseline literal became a
  parameter, ``256 → BLOCK_THREADS``. No third column: the code keeps the width.

The result goes into an ``ipywidgets.HTML`` or a report notebook unchanged; its stylesheet
is scoped to ``.wb-diff`` and overrides the widget's inherited label styles (right
alignment, fixed line height).
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer
from pygments.token import STANDARD_TYPES, Token, _TokenType

_SCOPE = ".wb-diff"
_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+(\.\d*)?([eE][-+]?\d+)?)[uUlLfF]*$")
#: A code line's tokens: (pygments short class, text) pairs.
TokenLine = list[tuple[str, str]]


@dataclass(frozen=True)
class DiffStats:
    """Line counts of one diff."""

    added: int
    removed: int
    changed: int
    unchanged: int


@dataclass(frozen=True)
class ParamInfo:
    """What the diff says about one parameter: its name, allowed values and default."""

    name: str
    values: str  # e.g. "pow2 32..1024"
    default: str

    @classmethod
    def of(cls, param: Any) -> ParamInfo:
        """From a :class:`workbench.core.params.Parameter` or its dict form with a name."""
        if isinstance(param, Mapping):
            from workbench.core.params import parameter_from_dict

            fields = {k: v for k, v in param.items() if k != "name"}
            param = parameter_from_dict(str(param["name"]), fields)
        return cls(name=param.name, values=param.describe_values(), default=str(param.default))


def _css_class(ttype: _TokenType) -> str:
    while ttype not in STANDARD_TYPES and ttype.parent is not None:
        ttype = ttype.parent
    return STANDARD_TYPES.get(ttype, "")


def token_lines(source: str) -> list[TokenLine]:
    """The source's tokens split per line (tokenized as one text)."""
    lines: list[TokenLine] = [[]]
    for ttype, value in CudaLexer(stripnl=False, ensurenl=False).get_tokens(source):
        cls = _css_class(ttype) if ttype is not Token.Text else ""
        for i, piece in enumerate(value.split("\n")):
            if i > 0:
                lines.append([])
            if piece:
                lines[-1].append((cls, piece))
    if source.endswith("\n") and lines and not lines[-1]:
        lines.pop()
    return lines


def _render(tokens: TokenLine, marked: set[int] | None = None) -> str:
    out = []
    for index, (cls, text) in enumerate(tokens):
        classes = " ".join(c for c in (cls, "wb-hl" if marked and index in marked else "") if c)
        escaped = html.escape(text)
        out.append(f'<span class="{classes}">{escaped}</span>' if classes else escaped)
    return "".join(out)


def highlight_lines(source: str) -> list[str]:
    """One HTML fragment per source line (tokens as ``<span class="...">``)."""
    return [_render(tokens) for tokens in token_lines(source)]


def _changed_tokens(a: TokenLine, b: TokenLine) -> tuple[set[int], set[int]]:
    """Indexes of the tokens that differ between two paired lines (whitespace ignored)."""
    texts_a, texts_b = [t for _, t in a], [t for _, t in b]
    marked_a: set[int] = set()
    marked_b: set[int] = set()
    matcher = difflib.SequenceMatcher(None, texts_a, texts_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            marked_a.update(i for i in range(i1, i2) if texts_a[i].strip())
            marked_b.update(j for j in range(j1, j2) if texts_b[j].strip())
    return marked_a, marked_b


_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d[\w.]*")
#: pygments' short classes of comments (a parameter named in a comment governs nothing).
_COMMENTS = frozenset({"c", "c1", "cm", "cs", "ch"})


def _code_text(tokens: TokenLine) -> str:
    return "".join(text for cls, text in tokens if cls not in _COMMENTS)


def _notes(right: str, left: str | None, params: Mapping[str, ParamInfo],
           explained: set[str]) -> str:
    """The parameters column of one template line, from its code without comments (names
    found as whole words, also inside preprocessor lines, which the lexer keeps whole)."""
    right_words = _WORD.findall(right)
    used = [w for w in right_words if w in params]
    if not used:
        return ""
    left_words = set(_WORD.findall(left)) if left is not None else set()
    replaced = sorted({w for w in left_words if _NUMBER.match(w)} - set(right_words))
    chips = []
    for name in dict.fromkeys(used):
        info = params[name]
        title = html.escape(f"{name}: {info.values}, default {info.default}", quote=True)
        text = f"<b>{html.escape(name)}</b>"
        if name not in left_words and len(replaced) == 1:
            text = f"{html.escape(replaced[0])} → " + text
        if name not in explained:
            text += f" {html.escape(info.values)}, default {html.escape(info.default)}"
            explained.add(name)
        chips.append(f'<span class="wb-param" title="{title}">{text}</span>')
    return " ".join(chips)


def diff_css() -> str:
    """The stylesheet for :func:`side_by_side_diff_html`, scoped to ``.wb-diff``."""
    pyg = HtmlFormatter(style="default").get_style_defs(f"{_SCOPE} td.wb-code")
    s = _SCOPE
    return "\n".join([
        f"{s} {{ display: block; width: 100%; text-align: left; line-height: 1.45; }}",
        f"{s} .wb-diff-summary {{ font-size: 12px; margin: 2px 0 4px; }}",
        f"{s} .wb-diff-scroll {{ max-height: 560px; overflow-y: auto; overflow-x: hidden; "
        "border: 1px solid var(--jp-border-color2, #ddd); }",
        f"{s} table {{ font-family: var(--jp-code-font-family, monospace); font-size: 12px; "
        "border-collapse: collapse; width: 100%; table-layout: fixed; }",
        f"{s} col.wb-ln-col {{ width: 2.8em; }}",
        f"{s} th {{ text-align: left; background: var(--jp-layout-color2, #f0f0f0); "
        "padding: 2px 6px; font-weight: 600; position: sticky; top: 0; z-index: 1; }",
        f"{s} td {{ padding: 0 6px; vertical-align: top; text-align: left; }}",
        f"{s} td.wb-code {{ white-space: pre-wrap; overflow-wrap: anywhere; "
        "word-break: normal; }",
        f"{s} td.wb-ln {{ color: #8a8a8a; text-align: right; user-select: none; "
        "border-right: 1px solid var(--jp-border-color2, #e0e0e0); }",
        f"{s} .wb-notes {{ font-family: var(--jp-ui-font-family, sans-serif); font-size: 11px; "
        "white-space: normal; text-align: right; margin: 0 0 2px; }",
        f"{s} .wb-legend {{ font-weight: normal; font-size: 11px; color: #555; }}",
        f"{s} .wb-param {{ display: inline-block; background: #eef3ff; border-radius: 3px; "
        "padding: 0 4px; margin: 1px 2px 1px 0; color: #1a3a7a; }",
        f"{s} tr.wb-del td.wb-left, {s} tr.wb-chg td.wb-left {{ background: #ffecec; }}",
        f"{s} tr.wb-add td.wb-right, {s} tr.wb-chg td.wb-right {{ background: #eaffea; }}",
        f"{s} tr.wb-chg td.wb-left .wb-hl {{ background: #ffc4c4; border-radius: 2px; }}",
        f"{s} tr.wb-chg td.wb-right .wb-hl {{ background: #b5f0b5; border-radius: 2px; }}",
        f"{s} tr.wb-fold td {{ color: #777; background: var(--jp-layout-color2, #f6f6f6); "
        "text-align: center; font-style: italic; }",
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


def _pairs(a: Sequence[str], b: Sequence[str],
           context: int | None) -> Iterable[tuple[str, int | None, int | None]]:
    """(kind, left index, right index) rows; kind "fold" carries the hidden count as i."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            n = i2 - i1
            if context is not None and n > 2 * context + 1:
                yield from (("eq", i1 + k, j1 + k) for k in range(context))
                yield "fold", n - 2 * context, None
                yield from (("eq", i1 + k, j1 + k) for k in range(n - context, n))
            else:
                yield from (("eq", i1 + k, j1 + k) for k in range(n))
        elif tag == "delete":
            yield from (("del", i, None) for i in range(i1, i2))
        elif tag == "insert":
            yield from (("add", None, j) for j in range(j1, j2))
        else:
            la, lb = i2 - i1, j2 - j1
            for k in range(max(la, lb)):
                i = i1 + k if k < la else None
                j = j1 + k if k < lb else None
                yield ("chg" if i is not None and j is not None
                       else "del" if j is None else "add"), i, j


# Inline on every cell as well as in the stylesheet: a notebook output opened untrusted
# (the review notebook, run by nbclient and saved) is sanitized, its <style> dropped, and
# JupyterLab's own table rules (text-align: right; white-space: normal) then right-aligned
# the code and collapsed its indentation. Style attributes survive the sanitizer.
_CODE_STYLE = ("text-align: left; white-space: pre-wrap; vertical-align: top; "
               "font-family: var(--jp-code-font-family, monospace); padding: 0 6px")
_LN_STYLE = "text-align: right; vertical-align: top; color: #8a8a8a; padding: 0 6px"


def side_by_side_diff_html(left: str, right: str, *, left_title: str = "baseline",
                           right_title: str = "template", context: int | None = None,
                           params: Iterable[Any] = ()) -> str:
    """Baseline on the left, template on the right, parameters beside the lines using them.

    ``context`` (lines) folds long unchanged runs; None shows every line. ``params`` are
    :class:`~workbench.core.params.Parameter` s (or their dict forms with a ``name``); with
    none no parameter notes are drawn.
    """
    infos = {p.name: p for p in (ParamInfo.of(x) for x in params)}
    a_tok, b_tok = token_lines(left), token_lines(right)
    a, b = left.splitlines(), right.splitlines()
    explained: set[str] = set()
    rows: list[str] = []
    for kind, i, j in _pairs(a, b, context):
        if kind == "fold":
            rows.append(f'<tr class="wb-fold"><td colspan="4">… {i} unchanged lines …'
                        "</td></tr>")
            continue
        ta = a_tok[i] if i is not None and i < len(a_tok) else []
        tb = b_tok[j] if j is not None and j < len(b_tok) else []
        marked_a, marked_b = _changed_tokens(ta, tb) if kind == "chg" else (set(), set())
        notes = (_notes(_code_text(tb), _code_text(ta) if i is not None else None, infos,
                        explained) if infos and j is not None else "")
        right_cell = (f'<div class="wb-src">{_render(tb, marked_b)}</div>'
                      + (f'<div class="wb-notes">{notes}</div>' if notes else "")
                      if j is not None else "")
        rows.append(
            f'<tr class="wb-{kind}"><td class="wb-ln" style="{_LN_STYLE}">'
            f'{"" if i is None else i + 1}</td>'
            f'<td class="wb-code wb-left" style="{_CODE_STYLE}"><div class="wb-src">'
            f'{_render(ta, marked_a) if i is not None else ""}</div></td>'
            f'<td class="wb-ln" style="{_LN_STYLE}">{"" if j is None else j + 1}</td>'
            f'<td class="wb-code wb-right" style="{_CODE_STYLE}">{right_cell}</td></tr>')
    stats = diff_stats(left, right)
    summary = (f"+{stats.added} added, −{stats.removed} removed, ~{stats.changed} changed, "
               f"{stats.unchanged} unchanged")
    cols = ('<col class="wb-ln-col"><col class="wb-code-col"><col class="wb-ln-col">'
            '<col class="wb-code-col">')
    head = (f"<tr><th></th><th>{html.escape(left_title)}</th><th></th>"
            f"<th>{html.escape(right_title)}"
            + (' <span class="wb-legend">· parameters under the lines using them</span>'
               if infos else "") + "</th></tr>")
    return (f'<div class="wb-diff"><style>{diff_css()}</style>'
            f'<div class="wb-diff-summary">{html.escape(summary)}</div>'
            f'<div class="wb-diff-scroll"><table style="width: 100%; table-layout: fixed">'
            f"<colgroup>{cols}</colgroup>"
            f"<thead>{head}</thead><tbody>{''.join(rows)}</tbody></table></div></div>")
