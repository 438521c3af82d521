"""The scalar tail of a vectorized region (:mod:`.vector`): where the bound is not known to
be a multiple of VEC, the thread whose vector would cross it takes the elements left before
the bound one by one, each through the kernel's own per-element statements.

An item's vector runs where it ends at or before the bound (``i < n && (VEC == 1 || n - i >=
VEC)``; ``n - i`` only where ``i < n``, so an unsigned index cannot wrap); an item that starts
before the bound and would cross it runs ``for (t = i; t < n; ++t) { const T i = t; BODY }``
with BODY the statements as written (every other transform's edits kept, the vector's own
left out). The item is its thread's last: every later item starts a whole stride of vectors
further. Its loads are not hoisted with the others', and it runs after the thread's earlier
items' stores, as the kernel as written orders one thread's elements. The vector loads keep
their alignment from the streams' offsets (each a multiple of VEC), which the tail does not
touch; at VEC 1 the test is ``i < n`` and the tail is dead code.
"""

from __future__ import annotations

from collections.abc import Callable

from workbench.templater.rewrite import Edit, Rewriter


def rendered_without(rw: Rewriter, edits: list[Edit], render: Callable[[], str]) -> str:
    """What ``render`` returns with ``edits`` (one transform's own) left out of ``rw``: the
    statements as written, with every other transform's edits."""
    with rw.keeping(lambda e: e not in edits):
        return render()


def whole_test(var: str, bound: str, tail: bool) -> str:
    """The test an item's vector runs under: before the bound, and (with a tail) ending at or
    before it."""
    if not tail:
        return f"{var} < {bound}"
    return f"{var} < {bound} && (VEC == 1 || ({bound}) - {var} >= VEC)"


def tail_text(var: str, var_type: str, bound: str, scalar_body: str) -> str:
    """The branch after an item's vector path: the elements from ``var`` up to the bound,
    one by one, through ``scalar_body`` (a compound statement reading ``var``)."""
    return (f" else if ({var} < {bound}) {{  // the vector would cross {bound}: one by one\n"
            f"        for ({var_type} wb_tail = {var}; wb_tail < {bound}; ++wb_tail) {{\n"
            f"          const {var_type} {var} = wb_tail;\n"
            f"          {scalar_body}\n        }}\n      }}")
