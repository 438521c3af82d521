"""The 1-D spelling of the tiled GEMM family (:mod:`.regtile`): one block of ``T * T``
threads whose flat index is split into a row and a column, and shared tiles declared flat.

A thread's row is ``tid / T`` (or ``tid >> log2 T``) and its column ``tid % T`` (or
``tid & (T - 1)``), ``tid`` being ``threadIdx.x`` or a local holding it; for a launch block of
exactly ``T * T`` threads that is the thread ``(x, y) = (tid % T, tid / T)`` of a ``(T, T)``
block, so the 2-D analysis applies with those two expressions as the thread's x and y. The
flat index itself may be used only inside such a split or as the whole index of a flat tile
(``S[tid]`` is ``S[tid / T][tid % T]``); anything else (``tid < n``, ``S[tid ^ 1]``) numbers
the threads in a way the rewrite does not model and is refused.

A flat tile ``__shared__ float S[T * T]`` read as ``S[r * T + c]`` is the 2-D tile ``S[r][c]``
when ``0 <= c < T``: ``c`` a thread column or the variable of a loop ``for (v = 0; v < T;
++v)``; every access must have that form, else the transform is refused with the line.
"""

from __future__ import annotations

import ast

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    factors,
    int_expr_value,
    int_value,
    strip,
    terms,
    text,
    walk,
)

#: Constant integer expressions (``BLOCKSIZE * BLOCKSIZE``, ``TILE - 1``): analysis's folding.
const_value = int_expr_value


def assigns(body: Node, name: str) -> bool:
    """Whether ``body`` assigns ``name`` (``name = ...``, ``name += ...``, ``++name``)."""
    for n in walk(body):
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if target is not None and text(strip(target)) == name:
                return True
    return False


def rule_threads(rule: str) -> int | None:
    """A launch rule's value when it is a product of integer literals (``1024``,
    ``32 * 32``), else None."""
    try:
        node = ast.parse(rule.strip(), mode="eval").body
    except SyntaxError:
        return None

    def value(n: ast.expr) -> int | None:
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            a, b = value(n.left), value(n.right)
            return a * b if a is not None and b is not None else None
        return None
    return value(node)


def square_side(threads: int | None) -> int | None:
    """T where ``threads == T * T`` and T >= 2, else None."""
    if threads is None or threads < 4:
        return None
    side = round(threads ** 0.5)
    return side if side * side == threads else None


class ThreadSplit:
    """The flat thread index of a 1-D block of ``tile * tile`` threads and its splits."""

    def __init__(self, tile: int, single_values: dict[str, Node]) -> None:
        self.tile = tile
        # locals holding the flat index (``int tid = threadIdx.x;``, or another such local)
        self.flat: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, value in single_values.items():
                if name not in self.flat and self.is_flat(value):
                    self.flat.add(name)
                    changed = True

    def is_flat(self, node: Node) -> bool:
        node = strip(node)
        return builtin(node, "threadIdx") == "x" or (
            node.type == "identifier" and text(node) in self.flat)

    def dim(self, node: Node) -> str | None:
        """"y" for a row split of the flat index, "x" for a column split, else None."""
        parts = binary(node)
        if parts is None or not self.is_flat(parts[0]):
            return None
        _left, op, right = parts
        t, value = self.tile, const_value(right)
        if value is None:
            return None
        if (op == "/" and value == t) or (op == ">>" and value < 31 and 1 << value == t):
            return "y"
        if (op == "%" and value == t) or (op == "&" and value == t - 1 and t & (t - 1) == 0):
            return "x"
        return None

    def allowed_use(self, use: Node) -> bool:
        """Whether a use of the flat index (``threadIdx.x`` or an alias of it) is the left
        side of a split or the value of a local that holds the flat index."""
        parent = use.parent
        while parent is not None and parent.type in ("parenthesized_expression",
                                                     "cast_expression"):
            parent = parent.parent
        if parent is None:
            return False
        if parent.type == "binary_expression" and self.dim(parent) is not None:
            return True
        if parent.type == "init_declarator":
            declared = parent.child_by_field_name("declarator")
            return declared is not None and declared != use and text(declared) in self.flat
        return False


def flat_index(index: Node, tile: int) -> tuple[Node, Node] | None:
    """(row, column) of a flat tile index written ``row * T + column`` (either order of the
    terms and of the factors), else None."""
    row_terms: list[tuple[int, Node]] = []
    col_terms: list[tuple[int, Node]] = []
    for sign, term in terms(index):
        fs = factors(term)
        if len(fs) == 2 and int_value(fs[1]) == tile:
            row_terms.append((sign, fs[0]))
        elif len(fs) == 2 and int_value(fs[0]) == tile:
            row_terms.append((sign, fs[1]))
        else:
            col_terms.append((sign, term))
    if len(row_terms) != 1 or len(col_terms) != 1 or row_terms[0][0] != 1 or \
            col_terms[0][0] != 1:
        return None
    return strip(row_terms[0][1]), strip(col_terms[0][1])


def counts_below(var: Node, at: Node, tile: int) -> bool:
    """Whether identifier ``var`` (used at ``at``) is the variable of an enclosing loop
    ``for (int v = 0; v < T; ++v)`` (``v++``, ``v += 1``) that never assigns it in its body."""
    name = text(var)
    loop = at.parent
    while loop is not None:
        if loop.type == "for_statement":
            init = loop.child_by_field_name("initializer")
            if init is not None and init.type == "declaration":
                decls = init.children_by_field_name("declarator")
                if len(decls) == 1 and decls[0].type == "init_declarator" and \
                        text(decls[0].child_by_field_name("declarator")) == name:
                    return _runs_to(loop, name, decls[0].child_by_field_name("value"), tile)
        loop = loop.parent
    return False


def _runs_to(loop: Node, name: str, start: Node | None, tile: int) -> bool:
    cond, update = loop.child_by_field_name("condition"), loop.child_by_field_name("update")
    body = loop.child_by_field_name("body")
    if const_value(start) != 0 or cond is None or update is None or body is None:
        return False
    parts = binary(cond)
    if parts is None or text(strip(parts[0])) != name or parts[1] != "<" or \
            const_value(parts[2]) != tile:
        return False
    step = " ".join(text(update).split())
    if step not in (f"++{name}", f"{name}++", f"{name} += 1"):
        return False
    return not assigns(body, name)
