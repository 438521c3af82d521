"""Adjacent early exits of a kernel's body read as one bounds check, before the analysis
(issue 28: first contact).

``if (x >= w) return; if (y >= h) return;`` leaves exactly where ``if ((x >= w) || (y >=
h)) return;`` does: ``||`` evaluates its right side only where its left is false, as the
second statement runs only where the first did not return. The families that read a point's
bounds check (the direct convolution's OUT_Y / OUT_X and USE_SMEM, the stencils) take the
first ``if (..) return;`` of the body as the check and what follows as what it guards, so a
second exit was not part of the check: the convolution now refuses it with the line
(:mod:`.conv`), and without this pass a kernel spelling its check as two statements lost the
family's knobs (tests/spellings_s23a/conv_const_struct_unroll_unsigned.cu).

Rewritten: a run of two or more statements at the top level of the entry's body, each an
``if`` with no ``else`` whose consequence is ``return;`` (or ``{ return; }``), with nothing
between them but comments. The conditions are joined by ``||`` in order, each in
parentheses, in the first statement's place; the others' text becomes blank, so every line
keeps its number.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import strip, text
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body


def joined_exits(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each run of adjacent ``if (C) return;`` of ``entry``'s body written
    as one ``if ((C1) || (C2)) return;`` (unchanged when there is none, or the kernel cannot
    be found: the analysis reports that itself)."""
    body = entry_body(current, entry)
    if body is None:
        return current
    runs: list[list[Node]] = [[]]
    for s in body.named_children:
        if s.type == "comment":
            continue
        if _condition(s) is not None:
            runs[-1].append(s)
        elif runs[-1]:
            runs.append([])
    edits: list[tuple[int, int, str]] = []
    for run in (r for r in runs if len(r) > 1):
        joined = " || ".join(f"({text(_condition(s))})" for s in run)
        edits.append((run[0].start_byte, run[0].end_byte, f"if ({joined}) return;"))
        edits += [(s.start_byte, s.end_byte, _blank(text(s))) for s in run[1:]]
    return current.edited(edits) if edits else current


def _condition(s: Node) -> Node | None:
    """The condition of ``s`` where it is ``if (C) return;`` (or ``{ return; }``), no else."""
    if s.type != "if_statement" or s.child_by_field_name("alternative") is not None:
        return None
    cons, cond = s.child_by_field_name("consequence"), s.child_by_field_name("condition")
    if cons is not None and cons.type == "compound_statement":
        inner = [c for c in cons.named_children if c.type != "comment"]
        cons = inner[0] if len(inner) == 1 else None
    if cons is None or cons.type != "return_statement" or cons.named_child_count or \
            cond is None or cond.type != "condition_clause" or cond.named_child_count != 1 or \
            cond.named_children[0].type == "declaration":
        return None
    return strip(cond.named_children[0])


def _blank(statement: str) -> str:
    """A statement's text as blank text with its line breaks."""
    return "\n" * statement.count("\n")
