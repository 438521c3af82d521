"""A one-element kernel's early exit read as the guard it is, for the vector family.

``int i = blockIdx.x * B + threadIdx.x; if (i >= n) return; REST`` runs REST exactly where
``int i = ...; if (i < n) { REST }`` does: the exit is the body's, so nothing runs after REST
either way, and REST's declarations, now in a block, end where the body ends. The vector
family (:mod:`.vector`) reads the second spelling only (the guarded region it copies per
item and lane is the ``if``'s consequence); this pass writes the first as the second.

Rewritten: a statement at the top level of the entry's body ``if (V >= B) return;`` (or
``if (B <= V) return;``, or ``{ return; }``), no ``else``, V a name, with at least one
statement after it: the ``if`` becomes ``if (V < B) {`` (its line breaks kept, so every line
keeps its number) and ``}`` closes before the body's own brace. A condition of another form
(``i > n``, ``i >= n || j >= m``) is left as written. :func:`~.semantic.lift_kernel` lifts this
spelling where the vector family applies to it and not to the kernel as written, and the
kernel as written otherwise: the other families read early exits themselves (items a thread
turn them into ``continue``).
"""

from __future__ import annotations

from workbench.templater.analysis import binary, strip, text
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.inline_exits import _condition
from workbench.templater.point_split import entry_body


def guarded_tail(current: InlinedSource, entry: str | None) -> InlinedSource | None:
    """``current`` with its first ``if (i >= n) return;`` written as ``if (i < n) { ... }``
    around the rest of the body; None where the body has no such exit."""
    body = entry_body(current, entry)
    if body is None:
        return None
    stmts = [s for s in body.named_children if s.type != "comment"]
    for s in stmts[:-1]:
        cond = _condition(s)
        parts = binary(cond) if cond is not None else None
        if parts is None:
            continue
        left, op, right = parts
        if op == "<=":
            left, right, op = right, left, ">="
        if op != ">=" or strip(left).type != "identifier":
            continue
        breaks = "\n" * text(s).count("\n")
        guard = f"if ({text(strip(left))} < {text(strip(right))}) {{{breaks}"
        close = body.end_byte - 1  # the body's closing brace
        return current.edited([(s.start_byte, s.end_byte, guard), (close, close, "} ")])
    return None
