"""The column-partials family's records and the index arithmetic its analysis reads
kernels with (:mod:`.colreduce_match`, :mod:`.colreduce_fold`, :mod:`.colreduce`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, builtin, int_value, strip, text, write_target
from workbench.templater.plan import Plan
from workbench.templater.regtile import single_assignment_values
from workbench.templater.rules import literal
from workbench.templater.stencil import Poly, add, poly_of, scale

_ZERO = {"0", "0.0", "0.f", "0.0f", "0.0F", "0u", "0.", "0L", "0LL", "0ll", "0l"}
_PURE_CALLS = {"min", "max", "fminf", "fmaxf", "fmin", "fmax", "fabsf", "fabs", "abs",
               "sqrtf", "sqrt", "expf", "exp", "logf", "log", "__ldg"}


@dataclass(frozen=True)
class ColumnRead:
    """One read of a kernel pointer at the thread's (row, column): ``ptr[r * ld + col]``."""

    node: Node
    ptr: str
    ld: str  # C text of the row stride in elements
    c_type: str  # the pointee's C type


@dataclass(frozen=True)
class PartialSum:
    """One sum of the row walk, ``acc += value``, and the partial row it is stored to."""

    value: Node  # E of ``acc += E``
    out: str
    out_ld: str  # C text of the partial row stride
    out_type: str
    store: Node  # the partial row's store


@dataclass(frozen=True)
class ColumnReduction:
    """A recognised column reduction: what the regenerated kernel needs, as C text. One row
    walk may feed several sums (``sg += dy * x; sb += dy;``), each to its own partial rows,
    all in the accumulator type ``acc_type``."""

    acc_type: str
    sums: tuple[PartialSum, ...]
    reads: tuple[ColumnRead, ...]
    locals_: tuple[Node, ...]  # the row loop's value locals (declarations), in order
    width: str  # C text of the column bound W (``col < W``)
    rows: str  # C text of the row bound N
    block_x: int
    block_y: int
    mode: str  # "stride" | "slice"
    chunks: int  # stride: the grid's y extent as written (partial rows)
    rows_per_chunk: int  # slice: rows per block as written
    loop: Node
    tree: str  # "none" | "halving" | "serial"


def _c_type(plan: Plan, ptr: str) -> str:
    return plan.kernel.param(ptr).base_type


def _zero(node: Node | None) -> bool:
    return node is not None and text(strip(node)).strip() in _ZERO


class _Index:
    """Index polynomials of one kernel, with the block sizes as literals."""

    def __init__(self, plan: Plan, keep: set[str]) -> None:
        self.plan = plan
        self.values = single_assignment_values(plan.body, keep)
        self.sizes: dict[str, int] = {
            "x": literal(plan.block[0]) or 0,
            "y": (literal(plan.block[1]) or 0) if len(plan.block) > 1 else 1}

    def leaf(self, node: Node) -> Poly | None:
        dim = builtin(node, "blockDim")
        if dim in ("x", "y") and self.sizes[dim]:
            return {(): self.sizes[dim]}
        if dim == "z":
            return {(): 1}
        return None

    def of(self, node: Node) -> Poly:
        return poly_of(node, self.values, leaf=self.leaf, divide=True)

    def address(self, node: Node) -> tuple[str, Poly] | None:
        """(kernel pointer, element index) of a pointer expression, or None."""
        node = strip(node)
        if node.type == "identifier":
            name = text(node)
            if self.plan.pointer(name):
                return name, {}
            value = self.values.get(name)
            return None if value is None else self.address(value)
        parts = binary(node)
        if parts is not None and parts[1] in ("+", "-"):
            left = self.address(parts[0])
            if left is not None:
                off = self.of(parts[2])
                return left[0], add(left[1], off if parts[1] == "+" else scale(off, -1))
            right = self.address(parts[2])
            if right is not None and parts[1] == "+":
                return right[0], add(right[1], self.of(parts[0]))
        if node.type == "pointer_expression" and text(node.child_by_field_name("operator")) \
                == "&":
            arg = node.child_by_field_name("argument")
            return None if arg is None else self.element(arg)
        return None

    def element(self, node: Node) -> tuple[str, Poly] | None:
        """(kernel pointer, element index) of ``p[i]`` / ``*(p + i)``, or None."""
        node = strip(node)
        if node.type == "subscript_expression":
            base = self.address(node.child_by_field_name("argument"))  # type: ignore[arg-type]
            idx = node.child_by_field_name("indices")
            if base is None or idx is None or len(idx.named_children) != 1:
                return None
            return base[0], add(base[1], self.of(idx.named_children[0]))
        if node.type == "pointer_expression" and text(node.child_by_field_name("operator")) \
                == "*":
            arg = node.child_by_field_name("argument")
            return None if arg is None else self.address(arg)
        return None


def _column_poly(ix: _Index) -> Poly:
    return {("blockIdx.x",): ix.sizes["x"], ("threadIdx.x",): 1}


def _free(p: Poly, banned: set[str]) -> bool:
    return not any(a in banned or a.startswith(("threadIdx", "blockIdx", "gridDim", "#"))
                   for m in p for a in m)


def _poly_c(p: Poly) -> str:
    """C text of a polynomial over kernel scalars (an ``int`` expression)."""
    out = []
    for m, c in sorted(p.items()):
        parts = ([] if c == 1 and m else [str(c)]) + [f"({a})" if not a.isidentifier() else a
                                                      for a in m]
        out.append(" * ".join(parts))
    return "(" + " + ".join(out) + ")" if out else "0"


def _statements(node: Node) -> list[Node]:
    """The statements of a block (comments and ``#pragma`` lines left out: the body is
    regenerated, so an author's unroll hint changes nothing it computes)."""
    if node.type == "compound_statement":
        return [c for c in node.named_children if c.type != "comment" and not (
            c.type == "preproc_call" and text(c).lstrip("# \t").startswith("pragma"))]
    return [node]


def _expression(stmt: Node) -> Node | None:
    inner = _statements(stmt)
    if len(inner) != 1 or inner[0].type != "expression_statement" or \
            not inner[0].named_children:
        return None
    return inner[0].named_children[0]


def _is_sync(stmt: Node) -> bool:
    e = _expression(stmt)
    return e is not None and e.type == "call_expression" and \
        text(e.child_by_field_name("function")) == "__syncthreads"


def _condition(stmt: Node) -> Node:
    cond = stmt.child_by_field_name("condition")
    assert cond is not None
    if cond.type in ("condition_clause", "parenthesized_expression") and cond.named_children:
        return cond.named_children[0]
    return cond


def _mul_atom(p: Poly, atom: str) -> Poly:
    return {tuple(sorted((*m, atom))): c for m, c in p.items()}


def _increment(node: Node, var: str) -> Node | str | None:
    """The step of ``var += S`` (the node S), ``"1"`` for ``++var`` / ``var++``, else None."""
    if node.type == "assignment_expression" and text(node.child_by_field_name("left")) == var \
            and text(node.child_by_field_name("operator")) == "+=":
        return node.child_by_field_name("right")
    if node.type == "update_expression" and text(node.child_by_field_name("argument")) == var \
            and "++" in text(node):
        return "1"
    return None


def _target(node: Node) -> str | None:
    left = write_target(node)
    return text(left) if left is not None and left.type == "identifier" else None


def _enclosing_loop(node: Node, body: Node) -> Node | None:
    p = node.parent
    while p is not None and p != body:
        if p.type in ("for_statement", "while_statement", "do_statement"):
            return p
        p = p.parent
    return None


def inside_consequence(node: Node, stmt: Node) -> bool:
    cons = stmt.child_by_field_name("consequence")
    return cons is not None and cons.start_byte <= node.start_byte and \
        node.end_byte <= cons.end_byte


def _only_return(stmt: Node) -> bool:
    cons = stmt.child_by_field_name("consequence")
    inner = _statements(cons) if cons is not None else []
    return len(inner) == 1 and inner[0].type == "return_statement" and \
        stmt.child_by_field_name("alternative") is None


def _top(node: Node, body: Node) -> Node:
    while node.parent is not None and node.parent != body:
        node = node.parent
    return node


def _is_param(plan: Plan, name: str) -> bool:
    try:
        plan.kernel.param(name)
    except KeyError:
        return False
    return True


def _extents(ix: _Index, decl: Node) -> list[int] | None:
    d = decl.child_by_field_name("declarator")
    out: list[int] = []
    while d is not None and d.type == "array_declarator":
        size_node = d.child_by_field_name("size")
        size = None if size_node is None else ix.of(size_node)
        if size is None or set(size) - {()} or size.get((), 0) <= 0:
            return None
        out.insert(0, size[()])
        d = d.child_by_field_name("declarator")
    return out or None


def _shared_base(node: Node) -> str | None:
    node = strip(node)
    while node.type == "subscript_expression":
        node = strip(node.child_by_field_name("argument"))  # type: ignore[arg-type]
    return text(node) if node.type == "identifier" else None


def _shared_index(ix: _Index, node: Node, ext: list[int]) -> Poly | None:
    """The flat element index of ``sh[a][b]`` / ``sh[i]`` (row-major over ``ext``)."""
    idx: list[Node] = []
    node = strip(node)
    while node.type == "subscript_expression":
        i = node.child_by_field_name("indices")
        if i is None or len(i.named_children) != 1:
            return None
        idx.insert(0, i.named_children[0])
        node = strip(node.child_by_field_name("argument"))  # type: ignore[arg-type]
    if len(idx) != len(ext):
        return None
    out: Poly = {}
    for k, i in enumerate(idx):
        stride = 1
        for e in ext[k + 1:]:
            stride *= e
        out = add(out, scale(ix.of(i), stride))
    return out


def _norm(node: Node | None) -> str:
    return "" if node is None else "".join(text(strip(node)).split())


def _ceil_div_by(rule: str, k: int) -> str | None:
    """X of a launch rule ``ceil_div(X, k)`` (as Python text), else None."""
    try:
        tree = ast.parse(rule, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and \
            tree.func.id == "ceil_div" and len(tree.args) == 2 and \
            isinstance(tree.args[1], ast.Constant) and tree.args[1].value == k:
        return ast.unparse(tree.args[0])
    return None


def _is_row0(plan: Plan, cond: Node) -> bool:
    """``cond`` is ``threadIdx.y == 0`` (or a local copy of threadIdx.y)."""
    parts = binary(cond)
    return parts is not None and parts[1] == "==" and plan.facts.is_thread(parts[0], "y") \
        and int_value(parts[2]) == 0
