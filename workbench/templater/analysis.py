"""What a kernel's body says about its launch: the facts the transforms are built on.

Everything here reads the tree-sitter tree of :mod:`workbench.core.cuda_source`; nothing
matches text. The central question is *which uses does a launch constant govern*: a literal
256 is the block size where it is a thread-stride loop's step, a shared array indexed by the
thread, the first step of a tree reduction over that array, a ``blockIdx.x * 256`` block
offset or ``__launch_bounds__``; elsewhere (a group size, a head dim) it only looks the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from tree_sitter import Node

DIMS = ("x", "y", "z")


def text(node: Node | None) -> str:
    return "" if node is None else (node.text or b"").decode()


def walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def line(node: Node) -> int:
    return node.start_point.row + 1


def tree_root(node: Node) -> Node:
    """The translation unit ``node`` belongs to (the file's own declarations live there)."""
    while node.parent is not None:
        node = node.parent
    return node


def shares_or_syncs(body: Node) -> bool:
    """Whether ``body`` calls ``__syncthreads`` or declares ``__shared__`` memory (the
    one-thread-per-output transforms leave such kernels alone)."""
    return "__syncthreads" in calls(body) or any(
        text(c) == "__shared__" for n in walk(body) if n.type == "declaration"
        for c in n.children)


def inside(node: Node, outer: Node) -> bool:
    """Whether ``node``'s bytes lie within ``outer``'s (``outer`` itself included)."""
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def ancestors(node: Node) -> list[Node]:
    """The nodes holding ``node``, its parent first, the tree's root last."""
    out = []
    while node.parent is not None:
        node = node.parent
        out.append(node)
    return out


def is_barrier(stmt: Node) -> bool:
    """``stmt`` is the statement ``__syncthreads();`` (the block's barrier)."""
    return stmt.type == "expression_statement" and \
        text(stmt).replace(" ", "") == "__syncthreads();"


def strip(node: Node) -> Node:
    """The expression under parentheses and casts (``(long long)row`` -> ``row``)."""
    while True:
        if node.type == "parenthesized_expression" and node.named_child_count == 1:
            node = node.named_children[0]
        elif node.type == "cast_expression" and node.child_by_field_name("value") is not None:
            node = node.child_by_field_name("value")  # type: ignore[assignment]
        elif node.type == "call_expression" and text(node.child_by_field_name("function"))\
                .startswith("static_cast<") and len(_args(node)) == 1:
            node = _args(node)[0]
        else:
            return node


def unparenthesized(node: Node) -> Node:
    """The expression under parentheses (casts kept: they decide the type)."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def subscript_index(sub: Node) -> Node:
    """The index of the subscript ``sub`` (``a[i]`` -> ``i``; tree-sitter wraps it in a
    one-entry argument list, or names it ``index``, by grammar version)."""
    idx = sub.child_by_field_name("indices") or sub.child_by_field_name("index")
    if idx is None:
        idx = sub.named_children[-1]
    if idx.type == "subscript_argument_list" and idx.named_child_count == 1:
        idx = idx.named_children[0]
    return idx


def subscript_array(sub: Node) -> str:
    """The array the subscript ``sub`` reads or writes, as spelled (``(a)[i]`` -> ``a``;
    ``""`` for a node with no array part)."""
    arg = sub.child_by_field_name("argument")
    return text(strip(arg)) if arg is not None else ""


def _args(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    return [] if args is None else list(args.named_children)


# The object-like integer macros of the source being templated (``#define BLOCK 256``):
# a use of BLOCK is read as the literal it stands for, so every transform recognises it.
_CONSTANTS: ContextVar[Mapping[str, int] | None] = ContextVar("templater_constants",
                                                              default=None)


@contextmanager
def integer_macros(values: Mapping[str, int]) -> Iterator[None]:
    """Read identifiers in ``values`` as those integers for the duration of a pass."""
    token = _CONSTANTS.set(dict(values))
    try:
        yield
    finally:
        _CONSTANTS.reset(token)


def int_value(node: Node | None) -> int | None:
    """The value of an integer literal (suffixes allowed) or of an integer macro's name,
    else None."""
    if node is None:
        return None
    node = strip(node)
    if node.type == "identifier":
        return (_CONSTANTS.get() or {}).get(text(node))
    if node.type != "number_literal":
        return None
    raw = text(node).rstrip("uUlL")
    try:
        return int(raw, 0)
    except ValueError:
        return None


#: The operators :func:`int_expr_value` folds, on operands that are not negative (so ``/`` is
#: C's); a shift by a count outside 0..30, or a division by zero, folds to None.
_INT_OPS: dict[str, Callable[[int, int], int | None]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a // b if b else None,
    "<<": lambda a, b: a << b if b < 31 else None,
    ">>": lambda a, b: a >> b if b < 31 else None,
}


def int_expr_value(node: Node | None, names: Mapping[str, int] | None = None) -> int | None:
    """The value of a constant integer expression of literals, integer macros and ``names``
    (``BLOCKSIZE * BLOCKSIZE``, ``TILE - 1``, ``warpSize / 2`` with ``warpSize`` named) over
    + - * / << >>, else None (an operand that is negative, or an operator not listed)."""
    if node is None:
        return None
    node = strip(node)
    if names and text(node) in names:
        return names[text(node)]
    value = int_value(node)
    if value is not None:
        return value
    parts = binary(node)
    if parts is None or parts[1] not in _INT_OPS:
        return None
    left, right = int_expr_value(parts[0], names), int_expr_value(parts[2], names)
    if left is None or right is None or left < 0 or right < 0:
        return None
    return _INT_OPS[parts[1]](left, right)


def builtin(node: Node, name: str) -> str | None:
    """``"x"`` for ``name.x`` (``threadIdx.x``, ``blockIdx.x``, ...), else None."""
    node = strip(node)
    if node.type != "field_expression":
        return None
    arg, field = node.child_by_field_name("argument"), node.child_by_field_name("field")
    if text(arg) == name and text(field) in DIMS:
        return text(field)
    return None


def binary(node: Node) -> tuple[Node, str, Node] | None:
    node = strip(node)
    if node.type != "binary_expression":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    op = node.child_by_field_name("operator")
    if left is None or right is None or op is None:
        return None
    return left, text(op), right


def chain(node: Node, op: str) -> list[Node]:
    """The operands of a chain of ``op``, each stripped (``a && (b) && c`` -> a, b, c)."""
    parts = binary(node)
    if parts is not None and parts[1] == op:
        return [*chain(parts[0], op), *chain(parts[2], op)]
    return [strip(node)]


def terms(node: Node) -> list[tuple[int, Node]]:
    """Additive terms with their sign: ``a + b - c`` -> [(1, a), (1, b), (-1, c)]."""
    parts = binary(node)
    if parts is None or parts[1] not in "+-":
        return [(1, strip(node))]
    left, op, right = parts
    return terms(left) + [(s if op == "+" else -s, t) for s, t in terms(right)]


def added_once(index: Node, var: str) -> Node | None:
    """The term ``var`` of ``index`` when ``index`` is ``rest + var``: ``var`` a term of
    sign + and named nowhere else in ``index``; else None."""
    hits = [t for sign, t in terms(index) if sign == 1 and text(strip(t)) == var]
    uses = [n for n in walk(index) if n.type == "identifier" and text(n) == var]
    return hits[0] if len(hits) == 1 and len(uses) == 1 else None


def factors(node: Node) -> list[Node]:
    """Multiplicative factors: ``a * (long long)b * 4`` -> [a, b, 4]."""
    parts = binary(node)
    if parts is None or parts[1] != "*":
        return [strip(node)]
    return factors(parts[0]) + factors(parts[2])


def identifiers(node: Node) -> Iterator[Node]:
    return (n for n in walk(node) if n.type == "identifier")


def mentions(node: Node, names: set[str] | frozenset[str]) -> bool:
    return any(text(n) in names for n in identifiers(node))


def calls(node: Node) -> set[str]:
    return {text(n.child_by_field_name("function")) for n in walk(node)
            if n.type == "call_expression"}


def declared_name(decl: Node) -> tuple[str, Node | None, Node | None]:
    """(name, declarator node, initial value) of a one-variable declaration."""
    d = decl.child_by_field_name("declarator")
    value = None
    if d is not None and d.type == "init_declarator":
        value = d.child_by_field_name("value")
        d = d.child_by_field_name("declarator")
    while d is not None and d.type in ("pointer_declarator", "array_declarator"):
        d = d.child_by_field_name("declarator")
    return text(d), d, value


@dataclass(frozen=True)
class Definition:
    """A local variable: its declaration and initial value, and whether it is ever assigned."""

    name: str
    decl: Node
    value: Node | None
    is_pointer: bool
    is_shared: bool
    assigned: bool


class KernelFacts:
    """Local definitions, thread-index aliases and uses of one kernel's body."""

    def __init__(self, body: Node) -> None:
        self.body = body
        self.defs: dict[str, Definition] = {}
        assigned: set[str] = set()
        for n in walk(body):
            if n.type == "assignment_expression" or n.type == "update_expression":
                target = n.child_by_field_name("left") or n.child_by_field_name("argument")
                if target is not None and target.type == "identifier":
                    assigned.add(text(target))
        for n in walk(body):
            if n.type != "declaration":
                continue
            name, _d, value = declared_name(n)
            if not name:
                continue
            decl_node = n.child_by_field_name("declarator")
            is_pointer = decl_node is not None and any(
                c.type == "pointer_declarator" for c in walk(decl_node))
            shared = any(text(c) == "__shared__" for c in n.children)
            if name in self.defs:  # declared twice (two loops' ``j``): not a single definition
                self.defs[name] = Definition(name, n, None, is_pointer, shared, True)
            else:
                self.defs[name] = Definition(name, n, value, is_pointer, shared, name in assigned)
        self.thread_alias = {dim: {f"threadIdx.{dim}"} | {
            d.name for d in self.defs.values()
            if not d.assigned and d.value is not None and builtin(d.value, "threadIdx") == dim}
            for dim in DIMS}

    def is_thread(self, node: Node, dim: str) -> bool:
        """``node`` is ``threadIdx.dim`` or a local copy of it."""
        node = strip(node)
        return builtin(node, "threadIdx") == dim or (
            node.type == "identifier" and text(node) in self.thread_alias[dim])

    def mentions_thread(self, node: Node, dim: str) -> bool:
        return any(self.is_thread(n, dim) for n in walk(node))

    def factors(self, node: Node, depth: int = 0) -> list[Node]:
        """Multiplicative factors of ``node`` with single-assignment locals expanded (a
        grid-stride step held in ``size_t stride = (size_t)gridDim.x * blockDim.x``)."""
        out: list[Node] = []
        for f in factors(node):
            d = self.defs.get(text(f)) if f.type == "identifier" else None
            if d is not None and d.value is not None and not d.assigned and depth < 4:
                out += self.factors(d.value, depth + 1)
            else:
                out.append(f)
        return out

    def resolve(self, node: Node, depth: int = 0) -> list[Node]:
        """Additive terms of ``node`` with single-assignment locals expanded."""
        out: list[Node] = []
        for _sign, term in terms(node):
            d = self.defs.get(text(term)) if term.type == "identifier" else None
            if d is not None and d.value is not None and not d.assigned and depth < 4:
                out += self.resolve(d.value, depth + 1)
            else:
                out.append(term)
        return out


def block_offset(node: Node, dim: str) -> int | None:
    """L for ``blockIdx.dim * L`` or ``L * blockIdx.dim``."""
    parts = binary(node)
    if parts is None or parts[1] != "*":
        return None
    left, _op, right = parts
    if builtin(left, "blockIdx") == dim:
        return int_value(right)
    if builtin(right, "blockIdx") == dim:
        return int_value(left)
    return None


@dataclass(frozen=True)
class StrideLoop:
    """``for (T v = start; v < bound; v += step)`` where start holds the thread index once.

    ``step`` is the literal block size (``step_literal``), ``blockDim.x`` or either times
    ``gridDim.x`` (``grid_stride``), as written or through a local never assigned
    (``stride``, the step node then that name)."""

    node: Node
    var: str
    var_type: str
    start: Node
    bound: Node
    step: Node
    step_literal: Node | None
    grid_stride: bool


def stride_loop(loop: Node, facts: KernelFacts, block_x: int | None) -> StrideLoop | None:
    """The thread-stride loop ``loop`` is, or None."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or cond is None or update is None or init.type != "declaration":
        return None
    var, _d, start = declared_name(init)
    typ = text(init.child_by_field_name("type"))
    if start is None or sum(facts.is_thread(t, "x") for _s, t in terms(start)) != 1:
        return None
    parts = binary(cond)
    if parts is None or parts[1] != "<" or text(strip(parts[0])) != var:
        return None
    if update.type != "assignment_expression" or text(update.child_by_field_name("operator")) \
            != "+=" or text(update.child_by_field_name("left")) != var:
        return None
    step = update.child_by_field_name("right")
    assert step is not None
    grid = False
    literal: Node | None = None
    for f in facts.factors(step):
        if builtin(f, "gridDim") == "x":
            grid = True
        elif builtin(f, "blockDim") == "x":
            continue
        elif int_value(f) is not None and int_value(f) == block_x:
            literal = f
        else:
            return None
    if literal is None and not any(builtin(f, "blockDim") == "x" for f in facts.factors(step)):
        return None
    return StrideLoop(loop, var, typ, start, parts[2], step, literal, grid)


#: The statements that repeat their body.
LOOPS = ("for_statement", "while_statement", "do_statement")
#: the statements that leave the flow where they stand
JUMPS = ("return_statement", "break_statement", "continue_statement", "goto_statement")


def in_lambda(node: Node, top: Node) -> bool:
    """Whether a lambda inside ``top`` holds ``node`` (its ``return`` leaves the lambda)."""
    up = node.parent
    while up is not None and up != top.parent:
        if up.type == "lambda_expression":
            return True
        up = up.parent
    return False


def inside_loop(node: Node, body: Node) -> bool:
    """A loop between ``node`` and ``body`` (``body`` itself not counted) holds ``node``."""
    up = node.parent
    while up is not None and up != body:
        if up.type in LOOPS:
            return True
        up = up.parent
    return False


def writer(place: Node, *, address: bool = False) -> Node | None:
    """The expression that writes ``place`` (a name, a subscript ``a[i]``, a member): the
    assignment whose left side it is, or its step (``++``/``--``), through parentheses
    (``(a[i]) += v``); with ``address`` also ``&place`` (a pointer may write it then). None
    where ``place`` is only read."""
    node, up = place, place.parent
    while up is not None and up.type == "parenthesized_expression":
        node, up = up, up.parent
    if up is None:
        return None
    if up.type == "assignment_expression":
        return up if up.child_by_field_name("left") == node else None
    if up.type == "update_expression" or (address and up.type == "pointer_expression" and
                                          text(up.child_by_field_name("operator")) == "&"):
        return up
    return None


def single_values(body: Node) -> dict[str, Node]:
    """The initial value of each local of ``body`` declared once (a name, with a value) and
    never assigned nor stepped: the value the name holds wherever it is read."""
    declared: dict[str, list[Node | None]] = {}
    written: set[str] = set()
    for n in walk(body):
        if n.type == "init_declarator":
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier":
                declared.setdefault(text(d), []).append(n.child_by_field_name("value"))
        elif n.type in ("assignment_expression", "update_expression"):
            t = write_target(n)
            if t is not None and t.type == "identifier":
                written.add(text(t))
    return {k: v[0] for k, v in declared.items()
            if len(v) == 1 and v[0] is not None and k not in written}


def write_target(expr: Node) -> Node | None:
    """The place an assignment or a step ``expr`` writes, under parentheses and casts
    (``(a[i]) += v`` -> ``a[i]``, ``++(n)`` -> ``n``); None for any other expression."""
    if expr.type == "assignment_expression":
        target = expr.child_by_field_name("left")
    elif expr.type == "update_expression":
        target = expr.child_by_field_name("argument")
    else:
        return None
    return None if target is None else strip(target)
