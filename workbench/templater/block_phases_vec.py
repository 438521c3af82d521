"""VEC for :mod:`.block_phases`: a phase that only moves a row between global and shared
memory, one vector access a step.

A run is a *row copy* when each of its statements is ``S[a] = G[b]`` (the load) or
``G[b] = f(S[a])`` (the store: ``f`` the same in every statement, reading nothing else that
varies by thread), ``S`` one shared array and ``G`` one pointer, and over the run's items
(the threads as written) ``a == b`` and the ``a`` cover ``0 .. L-1`` exactly once: evaluated
for every item, not read off the spelling. The phase is then the element loop
``for e in 0 .. L-1: S[e] = G[e]`` in some order, which the block runs VEC consecutive
elements a thread a step (``WbVec<T, VEC>``, the aligned vector type of :mod:`.vector`).
Alignment: ``G`` is a kernel pointer or a local set once to one plus terms each with a
constant factor (a row offset ``blockIdx.x * ROW``); VEC divides every factor and ``L``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.cuda_source import parse_cuda
from workbench.templater.analysis import binary, builtin, factors, strip, terms, text, walk
from workbench.templater.const_lanes import const_eval, element_bytes
from workbench.templater.inline_bind import written
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector import VEC_STRUCT

_OPS: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: int(a / b), "%": lambda a, b: a - int(a / b) * b,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "&": lambda a, b: a & b,
    "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
}


@dataclass(frozen=True)
class RowCopy:
    """One run that moves ``length`` elements between ``shared`` and ``pointer``."""

    run: tuple[Node, ...]
    load: bool
    shared: Node  # the shared array's identifier in the first statement
    pointer: str
    ctype: str
    length: int
    step: int  # the largest power of two (<= 4) dividing the length and the offsets
    rhs: Node | None  # the store's value (its shared index replaced at emission)
    index: Node  # the first statement's shared index


class Evaluator:
    """Integer expressions of item-dependent names (an env), constants and + - * / % << >>
    & | ^ ~ in the file ``root``; a file-scope constant's or an object-like macro's own
    expression is read too (``HALF = ROW / 2``), once."""

    def __init__(self, root: Node) -> None:
        self.root = root
        self.known: dict[str, int | None] = {}

    def value(self, node: Node, env: Mapping[str, int]) -> int | None:
        node = strip(node)
        if node.type == "identifier" and text(node) in env:
            return env[text(node)]
        if node.type == "identifier" and const_eval(node) is None:
            return self._constant(text(node))
        if builtin(node, "threadIdx") == "x":
            return env.get("threadIdx.x")
        value = const_eval(node)
        if value is not None:
            return value
        if node.type == "unary_expression" and \
                text(node.child_by_field_name("operator")) == "~":
            inner = node.child_by_field_name("argument")
            arg = self.value(inner, env) if inner is not None else None
            return None if arg is None else ~arg
        parts = binary(node)
        if parts is None or parts[1] not in _OPS:
            return None
        left, right = self.value(parts[0], env), self.value(parts[2], env)
        if left is None or right is None or (parts[1] in "/%" and right == 0) or \
                (parts[1] in ("<<", ">>") and not 0 <= right < 63):
            return None
        return _OPS[parts[1]](left, right)

    def _constant(self, name: str) -> int | None:
        if name not in self.known:
            self.known[name] = None  # a definition naming itself stays unknown
            value = _file_constant(name, self.root)
            self.known[name] = None if value is None else self.value(value, {})
        return self.known[name]


def _file_constant(name: str, root: Node) -> Node | None:
    """The value of the one file-scope ``const``/``constexpr`` integer or object-like macro
    named ``name`` (a macro's text parsed as the expression it stands for)."""
    values = [d.child_by_field_name("value") for decl in root.named_children
              if decl.type == "declaration" and
              any(text(c) in ("const", "constexpr") for c in decl.children)
              for d in decl.children_by_field_name("declarator")
              if d.type == "init_declarator" and
              text(d.child_by_field_name("declarator")) == name]
    macros = [m.child_by_field_name("value") for m in walk(root)
              if m.type == "preproc_def" and text(m.child_by_field_name("name")) == name]
    for macro in macros:
        parsed = parse_cuda(f"int wb_value = {text(macro)};", "macro.cu").tree.root_node
        values += [d.child_by_field_name("value") for d in walk(parsed)
                   if d.type == "init_declarator"]
    return values[0] if len(values) == 1 else None


def row_copy(plan: Plan, run: list[Node], derived: list[Node], shared: set[str],
             items: int, uniform: set[str], varies: Callable[[str], bool]) -> RowCopy | str:
    """The run as a :class:`RowCopy`, or why it is not one (``varies``: whether a name
    may differ between threads)."""
    moves = [_move(s, shared) for s in run]
    if any(m is None for m in moves):
        return "a statement is not one element moved between a shared array and a pointer"
    loads = {m[0] for m in moves if m is not None}
    arrays = {text(m[1]) for m in moves if m is not None}
    pointers = {text(m[3]) for m in moves if m is not None}
    if len(loads) != 1 or len(arrays) != 1 or len(pointers) != 1:
        return "its statements move between several arrays or both ways"
    load = loads.pop()
    first = moves[0]
    assert first is not None
    rhs = None if load else first[4]
    if not load and not _same_values([m[4] for m in moves if m is not None],
                                     [m[2] for m in moves if m is not None], varies):
        return "its stores do not compute the same value of the shared element"
    seen: list[int] = []
    evaluator = Evaluator(plan.source.tree.root_node)
    for t in range(items):
        env = _item_env(evaluator, derived, t)
        if env is None:
            return "a thread-derived local does not evaluate"
        for m in moves:
            assert m is not None
            a, b = evaluator.value(m[2], env), evaluator.value(m[5], env)
            if a is None or a != b:
                return f"`{text(m[2])}` and `{text(m[5])}` are not the same element"
            seen.append(a)
    if sorted(seen) != list(range(len(seen))):
        return "the items do not move each element of one row once"
    pointer = pointers.pop()
    ctype = _element_type(plan, pointer)
    offsets = _offset_factors(plan, pointer, uniform)
    if ctype is None or element_bytes(ctype) is None or offsets is None:
        return f"the alignment of {pointer} is not known"
    gcd = math.gcd(len(seen), *offsets)
    step = max(v for v in (1, 2, 4) if gcd % v == 0)
    return RowCopy(tuple(run), load, first[1], pointer, ctype, len(seen), step, rhs, first[2])


def _move(stmt: Node, shared: set[str]) -> tuple[bool, Node, Node, Node, Node, Node] | None:
    """(is a load, shared array, its index, pointer, the value stored, the pointer's index)
    of ``S[a] = G[b]`` or ``G[b] = f(S[a])``."""
    expr = stmt.named_children[0] if stmt.type == "expression_statement" and \
        stmt.named_children else None
    if expr is None or expr.type != "assignment_expression" or \
            text(expr.child_by_field_name("operator")) != "=":
        return None
    left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
    target = _subscript(left)
    if target is None or right is None:
        return None
    if text(target[0]) in shared:
        source = _subscript(right)
        if source is None or text(source[0]) in shared:
            return None
        return True, target[0], target[1], source[0], right, source[1]
    reads = [s for n in walk(right) if (s := _subscript(n)) is not None]
    if len(reads) != 1 or text(reads[0][0]) not in shared:
        return None
    return False, reads[0][0], reads[0][1], target[0], right, target[1]


def _subscript(node: Node | None) -> tuple[Node, Node] | None:
    if node is None or strip(node).type != "subscript_expression":
        return None
    node = strip(node)
    array = node.child_by_field_name("argument")
    index = node.child_by_field_name("indices") or node.child_by_field_name("index")
    if index is not None and index.type == "subscript_argument_list":
        index = index.named_children[0] if len(index.named_children) == 1 else None
    if array is None or array.type != "identifier" or index is None:
        return None
    return array, index


def _same_values(values: list[Node], indices: list[Node],
                 varies: Callable[[str], bool]) -> bool:
    """The stored values are one function of the shared element: the same text outside
    the shared index, calling nothing and naming nothing else that ``varies``."""
    def outside(value: Node, index: Node) -> str:
        whole = text(value)
        start, end = index.start_byte - value.start_byte, index.end_byte - value.start_byte
        return (whole[:start] + "@" + whole[end:]).replace(" ", "")
    value, index = values[0], indices[0]
    names = [n for n in walk(value) if n.type == "identifier" and
             not index.start_byte <= n.start_byte < index.end_byte]
    return len({outside(v, i) for v, i in zip(values, indices, strict=True)}) == 1 and \
        not any(n.type in ("call_expression", "pointer_expression") for n in walk(value)) \
        and not any(varies(text(n)) for n in names)


def _item_env(evaluator: Evaluator, derived: list[Node], item: int) -> dict[str, int] | None:
    env = {"threadIdx.x": item}
    for decl in derived:
        d = decl.child_by_field_name("declarator")
        if d is None or d.type != "init_declarator":
            return None
        name, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
        result = evaluator.value(value, env) if value is not None else None
        if name is None or result is None:
            return None
        env[text(name)] = result
    return env


def _declaration_of(plan: Plan, name: str) -> Node | None:
    fn = plan.source.function_node(plan.kernel)
    for n in walk(fn):
        if n.type in ("declaration", "parameter_declaration"):
            d = n.child_by_field_name("declarator")
            inner = [x for x in walk(d) if x.type == "identifier"] if d is not None else []
            if inner and text(inner[0]) == name:
                return n
    return None


def _element_type(plan: Plan, pointer: str) -> str | None:
    decl = _declaration_of(plan, pointer)
    if decl is None or not any(n.type == "pointer_declarator" for n in walk(decl)):
        return None
    words = [text(c) for c in decl.children if c.type in ("primitive_type", "type_identifier",
                                                         "sized_type_specifier")]
    return words[0] if len(words) == 1 else None


def _offset_factors(plan: Plan, pointer: str, uniform: set[str]) -> list[int] | None:
    """The constant factor of each term a pointer local adds to a kernel pointer ([] for the
    kernel pointer itself); None where a term has none or the pointer is set otherwise."""
    decl = _declaration_of(plan, pointer)
    if decl is None:
        return None
    if decl.type == "parameter_declaration":
        return []
    init = next((n for n in walk(decl) if n.type == "init_declarator"), None)
    value = init.child_by_field_name("value") if init is not None else None
    if value is None or pointer not in uniform or \
            written(plan.body, pointer, address=False):
        return None
    parts = terms(value)
    base = [t for s, t in parts if t.type == "identifier" and plan.pointer(text(t)) and s == 1]
    if len(base) != 1:
        return None
    out: list[int] = []
    for _sign, term in parts:
        if term is base[0]:
            continue
        consts = [c for f in factors(term) if (c := const_eval(f)) is not None]
        if not consts:
            return None
        out.append(math.prod(consts))
    return out


def emit_copy(plan: Plan, copy: RowCopy, threads: str, vec: str, flag: str) -> None:
    """Replace the run with its element loop, VEC elements a thread a step."""
    plan.helper(VEC_STRUCT)
    if copy.rhs is not None:
        plan.rw.replace(copy.index, "wb_at")
    first, last = copy.run[0], copy.run[-1]
    t, n, g = copy.ctype, copy.length, copy.pointer
    vector = f"WbVec<{t}, {vec}>"

    def text_of(rw: Rewriter) -> str:
        shared = rw.text(copy.shared)
        head = (f"for (int wb_e = threadIdx.x * {vec}; {flag}wb_e < {n}; "
                f"wb_e += {threads} * {vec}) {{\n")
        if copy.load:
            return (head + f"    const {vector} wb_v = *reinterpret_cast<const {vector}*>"
                    f"({g} + wb_e);\n#pragma unroll\n    for (int wb_j = 0; wb_j < {vec}; "
                    f"++wb_j) {shared}[wb_e + wb_j] = wb_v.v[wb_j];\n  }}")
        assert copy.rhs is not None
        value = rw.render(copy.rhs.start_byte, copy.rhs.end_byte)
        return (head + f"    {vector} wb_v;\n#pragma unroll\n    for (int wb_j = 0; wb_j < "
                f"{vec}; ++wb_j) {{ const int wb_at = wb_e + wb_j; wb_v.v[wb_j] = {value}; }}"
                f"\n    *reinterpret_cast<{vector}*>({g} + wb_e) = wb_v;\n  }}")
    plan.rw.replace_span(first.start_byte, last.end_byte, make=text_of)
