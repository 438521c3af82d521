"""Which ``__constant__`` arrays a kernel reads at an index that differs between the lanes
of a warp.

Constant memory serves one address per warp per cycle: when the lanes of a warp read the
same element it is broadcast (as fast as a register), when they read different elements
the read is replayed once per distinct address, up to 32 times (CUDA C++ Programming
Guide, "Constant Memory"). So a table that every lane reads at its own place
(``taps[k * CHANNELS + c]`` with ``c = threadIdx.x % CHANNELS``) belongs in shared memory
or the read-only data path, while one read at a warp-uniform index is where it should be.

The analysis classifies every index expression of a read on the parse:

- *uniform*: literals, macros and file constants, kernel scalar parameters, ``blockIdx``,
  ``blockDim``, ``gridDim``, ``threadIdx.x / K`` (or ``>> s``) with K a multiple of 32,
  ``threadIdx.y`` / ``.z`` where the block's x extent (x times y) as written is a
  multiple of 32 (a warp is 32 consecutive linear thread ids; where a transform lifted the
  block, the verdict holds at its default, the launch as written), and locals and loop
  counters whose every value (the initial one and each assignment's) is uniform and whose
  assignments no lane-dependent condition decides (an ``if`` around them, a loop's
  condition, an ``if`` that leaves or skips an iteration of a loop around them; a
  ``continue`` skips the rest of an iteration, not a ``for`` header's step, so a counter
  stepped there stays uniform: ``for (dy..; ++dy) { if (y < 0) continue; .. }``);
- *lane*: any other use of the thread index (``threadIdx.x``, ``% 32``, ``& 31``,
  ``threadIdx.y`` under a block narrower than a warp), through arithmetic;
- *unknown*: what the analysis cannot follow: a pointer, a value read from memory (also in
  a condition that decides an assignment), a call, a field.

A lane read anywhere makes the array a staging candidate; an array with unknown reads and
no lane read is reported as undecided (the line and the value not followed); an array
read only at uniform indices is left in constant memory.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node

from workbench.core.module_constants import SourceGlobal, module_globals
from workbench.templater.analysis import (
    DIMS,
    LOOPS,
    binary,
    builtin,
    int_value,
    strip,
    text,
    walk,
    write_target,
)
from workbench.templater.plan import Plan
from workbench.templater.rules import literal

#: Bytes of the element types a staged array may have.
_BYTES = {"float": 4, "double": 8, "int": 4, "unsigned": 4, "unsigned int": 4,
          "uint32_t": 4, "int32_t": 4, "short": 2, "unsigned short": 2, "char": 1,
          "signed char": 1, "unsigned char": 1, "int8_t": 1, "uint8_t": 1, "long long": 8,
          "unsigned long long": 8, "int64_t": 8, "uint64_t": 8, "half": 2, "__half": 2,
          "__nv_bfloat16": 2, "float2": 8, "float4": 16, "int2": 8, "int4": 16,
          "uint2": 8, "uint4": 16, "double2": 16}


def element_bytes(ctype: str) -> int | None:
    words = [w for w in ctype.split() if w not in ("const", "volatile")]
    return _BYTES.get(" ".join(words))


Kind = Literal["uniform", "lane", "unknown"]
_RANK: dict[Kind, int] = {"uniform": 0, "lane": 1, "unknown": 2}

#: Arithmetic that keeps a uniform value uniform and a lane value varying.
_ARITH = frozenset({"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", ">", "<=",
                    ">=", "==", "!=", "&&", "||"})
#: Pure integer helpers whose result varies only as their arguments do.
_PURE_CALLS = frozenset({"min", "max", "umin", "umax", "abs"})


@dataclass(frozen=True)
class Verdict:
    """One expression's class and, when not uniform, the node that made it so and why."""

    kind: Kind
    node: Node | None = None
    why: str = ""


@dataclass(frozen=True)
class ConstRead:
    """One read ``array[index]`` in the kernel body with its verdict."""

    node: Node  # the (outermost) subscript expression
    array: Node  # the identifier naming the array
    verdict: Verdict
    indices: tuple[Node, ...] = ()


@dataclass(frozen=True)
class ConstArray:
    """A file-scope ``__constant__`` array the kernel reads, and every read of it."""

    source: SourceGlobal
    extents: tuple[int, ...]  # each [..] evaluated (a vector type's lanes not counted)
    reads: tuple[ConstRead, ...]
    problem: str = ""  # why it cannot be staged at all (a use that is not a plain read)
    problem_node: Node | None = None

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def kind(self) -> Kind:
        """lane when any read varies over a warp, else unknown when any read is not
        followed, else uniform."""
        kinds = {r.verdict.kind for r in self.reads}
        return "lane" if "lane" in kinds else "unknown" if "unknown" in kinds else "uniform"

    def first(self, kind: Kind) -> ConstRead | None:
        return next((r for r in self.reads if r.verdict.kind == kind), None)


def written_extent(plan: Plan, rule: str) -> int | None:
    """A block rule's value at the lifted parameters' defaults (the launch as written: a
    transform before this one may have made ``256`` ``BLOCK_THREADS``), else None."""
    value = literal(rule)
    if value is not None:
        return value
    defaults = {n: p.spec.get("default") for n, p in plan.params.items()}
    try:
        tree = ast.parse(rule, mode="eval")
    except SyntaxError:
        return None
    return _eval_rule(tree.body, defaults)


def _eval_rule(node: ast.AST, names: dict[str, object]) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        value = names.get(node.id)
        return value if type(value) is int else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        left, right = _eval_rule(node.left, names), _eval_rule(node.right, names)
        if left is None or right is None:
            return None
        return left + right if isinstance(node.op, ast.Add) else left - right \
            if isinstance(node.op, ast.Sub) else left * right
    return None


def _worst(a: Verdict, b: Verdict) -> Verdict:
    return a if _RANK[a.kind] >= _RANK[b.kind] else b


class LaneAnalysis:
    """The lane verdicts of one kernel's expressions (see the module doc)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.block = [written_extent(plan, b) for b in plan.block]
        self._busy: set[int] = set()

    def verdict(self, node: Node) -> Verdict:
        node = strip(node)
        if int_value(node) is not None:
            return Verdict("uniform")
        t = node.type
        if t == "condition_clause" and node.named_children:  # if (...) / while (...)
            return self.verdict(node.named_children[-1])
        if t == "field_expression":
            return self._builtin(node)
        if t == "identifier":
            return self._name(node)
        if t == "binary_expression":
            return self._binary(node)
        if t == "unary_expression":
            arg = node.child_by_field_name("argument")
            return self.verdict(arg) if arg is not None else Verdict("unknown", node, "")
        if t == "conditional_expression":
            parts = [node.child_by_field_name(f) for f in ("condition", "consequence",
                                                            "alternative")]
            out = Verdict("uniform")
            for p in parts:
                out = _worst(out, self.verdict(p) if p is not None else Verdict("uniform"))
            return out
        if t == "call_expression" and text(node.child_by_field_name("function")) in _PURE_CALLS:
            args = node.child_by_field_name("arguments")
            out = Verdict("uniform")
            for a in (args.named_children if args is not None else []):
                out = _worst(out, self.verdict(a))
            return out
        if t in ("number_literal", "true", "false", "char_literal"):
            return Verdict("uniform")
        what = {"subscript_expression": "a value read from memory",
                "call_expression": "a call's result"}.get(t, f"`{text(node)[:40]}`")
        return Verdict("unknown", node, what)

    def _builtin(self, node: Node) -> Verdict:
        for name in ("blockIdx", "blockDim", "gridDim"):
            if builtin(node, name) is not None:
                return Verdict("uniform")
        dim = builtin(node, "threadIdx")
        if dim is None:
            return Verdict("unknown", node, f"the field `{text(node)[:40]}`")
        if dim == "x":
            return Verdict("lane", node, "threadIdx.x")
        # a warp is 32 consecutive linear thread ids: threadIdx.y is the same over a warp
        # when the block's x extent is a multiple of 32, threadIdx.z when x * y is
        extent = self._extent(DIMS.index(dim))
        if extent is None:
            return Verdict("unknown", node, f"threadIdx.{dim} under a block whose lower "
                           "extents are not literals")
        if extent % 32 == 0:
            return Verdict("uniform")
        return Verdict("lane", node, f"threadIdx.{dim} under a block of {extent} threads "
                       f"below it (a warp spans several values)")

    def _rows_whole(self, div: int) -> bool:
        """threadIdx.x / div is one value over a warp: div is a multiple of 32 and a warp
        never spans two rows of the block (a 1-D block, or an x extent that is a multiple of
        32 or at most div)."""
        if div % 32:
            return False
        x = self.block[0] if self.block else None
        return len(self.block) == 1 or (x is not None and (x % 32 == 0 or x <= div))

    def _extent(self, dim: int) -> int | None:
        product = 1
        for b in self.block[:dim]:
            if b is None:
                return None
            product *= b
        return product

    def _name(self, node: Node) -> Verdict:
        name = text(node)
        decl = declaration_of(node)
        if decl is None:
            try:
                param = self.plan.kernel.param(name)
            except KeyError:
                return Verdict("unknown", node, f"`{name}`, neither a parameter, a local nor "
                               "an integer constant")
            if param.is_pointer:
                return Verdict("unknown", node, f"the pointer `{name}`")
            return Verdict("uniform")
        key = decl.start_byte
        if key in self._busy:  # a value defined from itself: the fixpoint starts uniform
            return Verdict("uniform")
        self._busy.add(key)
        try:
            out = self._local(decl, name)
        finally:
            self._busy.discard(key)
        return out if out.kind == "uniform" or f"`{name}`" in out.why else \
            Verdict(out.kind, out.node, f"`{name}` <- {out.why}")

    def _local(self, decl: Node, name: str) -> Verdict:
        """Worst of the initial value, every assignment's value and every condition that
        decides whether (or how often) an assignment runs."""
        value = declared_value(decl, name)
        out = self.verdict(value) if value is not None else Verdict("uniform")
        scope = decl.parent  # the for loop or the block that declares it
        if scope is None:
            return Verdict("unknown", decl, f"`{name}`'s scope")
        for n in walk(scope):
            if n.start_byte < decl.start_byte:
                continue
            t = write_target(n)
            if t is None or t.type != "identifier" or text(t) != name or \
                    declaration_of(t) != decl:
                continue
            right = n.child_by_field_name("right")
            if right is not None:
                out = _worst(out, self.verdict(right))
            for cond in _deciding(n, scope):
                out = _worst(out, self.verdict(cond))
        return out

    def _binary(self, node: Node) -> Verdict:
        parts = binary(node)
        if parts is None:
            return Verdict("unknown", node, f"`{text(node)[:40]}`")
        left, op, right = parts
        if op not in _ARITH:
            return Verdict("unknown", node, f"the operator {op}")
        # threadIdx.x / K (K a multiple of 32) and threadIdx.x >> s (s >= 5): one value a warp
        k = int_value(right)
        if k is not None and builtin(left, "threadIdx") == "x" and op in ("/", ">>"):
            div = k if op == "/" else 1 << k if 0 <= k < 31 else 0
            if div > 0 and self._rows_whole(div):
                return Verdict("uniform")
        return _worst(self.verdict(left), self.verdict(right))


def constant_arrays(plan: Plan) -> list[ConstArray]:
    """Every file-scope ``__constant__`` array of constant extents the kernel's body names,
    with the verdict of each read (``a[i]``, ``a[i][j]``: the worst of its indices); a use
    that is not a read of one element is recorded as the array's problem."""
    lanes = LaneAnalysis(plan)
    found: list[ConstArray] = []
    declared = _declared_extents(plan)
    for g in module_globals(plan.source).values():
        extents = declared.get(g.name) or _counted(g)
        if g.qualifier != "__constant__" or not extents:
            continue
        uses = plan.uses(g.name)
        if not uses:
            continue
        dims = len(extents)
        reads: list[ConstRead] = []
        problem, where = "", None
        for use in uses:
            read, indices = use, []
            while read.parent is not None and read.parent.type == "subscript_expression" \
                    and read.parent.child_by_field_name("argument") == read:
                read = read.parent
                index = read.child_by_field_name("indices")
                indices += index.named_children if index is not None else []
            if len(indices) != dims or dims == 0:
                problem, where = f"`{text(read)[:50]}` uses {g.name} other than as one " \
                    f"element ({dims} index(es))", use
                continue
            verdict = Verdict("uniform")
            for i in indices:
                verdict = _worst(verdict, lanes.verdict(i))
            reads.append(ConstRead(read, use, verdict, tuple(indices)))
        found.append(ConstArray(g, extents, tuple(reads), problem, where))
    return found


def _counted(g: SourceGlobal) -> tuple[int, ...]:
    """The extents the folder loader evaluated (macro expressions too), a vector element
    type's lanes left out."""
    counts = tuple(g.counts or ())
    return counts[:-1] if counts and _VECTOR.fullmatch(g.ctype) else counts


#: CUDA's built-in vector types (the loader counts their lanes as a last extent).
_VECTOR = re.compile(r"(u?(char|short|int|long|longlong)|float|double)[234]")


def _declared_extents(plan: Plan) -> dict[str, tuple[int, ...]]:
    """File-scope arrays -> their extents, each an integer constant expression of literals,
    macros and file constants (``[9 * CHANNELS]``, ``[kTaps][kC]``)."""
    out: dict[str, tuple[int, ...]] = {}
    for decl in plan.source.tree.root_node.named_children:
        if decl.type != "declaration":
            continue
        for each in decl.children_by_field_name("declarator"):
            d: Node | None = each.child_by_field_name("declarator") \
                if each.type == "init_declarator" else each
            extents: list[int | None] = []
            while d is not None and d.type == "array_declarator":
                extents.insert(0, const_eval(d.child_by_field_name("size")))
                d = d.child_by_field_name("declarator")
            if d is not None and d.type == "identifier" and extents and \
                    all(e is not None and e > 0 for e in extents):
                out[text(d)] = tuple(e for e in extents if e is not None)
    return out


def const_eval(node: Node | None) -> int | None:
    """An integer constant expression of literals, integer macros and file constants
    (+ - * / with C's truncating division), else None."""
    if node is None:
        return None
    value = int_value(node)
    if value is not None:
        return value
    parts = binary(strip(node))
    if parts is None or parts[1] not in ("+", "-", "*", "/"):
        return None
    left, right = const_eval(parts[0]), const_eval(parts[2])
    if left is None or right is None or (parts[1] == "/" and right == 0):
        return None
    if parts[1] == "/":
        return int(left / right)
    return left + right if parts[1] == "+" else left - right if parts[1] == "-" \
        else left * right


def declaration_of(use: Node) -> Node | None:
    """The declaration ``use`` (an identifier) names, by C scope: a ``for`` loop's
    initializer or an earlier declaration of an enclosing block; None: not a local."""
    name = text(use)
    up = use
    while up.parent is not None:
        p = up.parent
        if p.type == "for_statement":
            init = p.child_by_field_name("initializer")
            if init is not None and init.type == "declaration" and init != up and \
                    name in declared_names(init):
                return init
        if p.type == "compound_statement":
            found = None
            for c in p.named_children:
                if c.start_byte >= use.start_byte:
                    break
                if c.type == "declaration" and name in declared_names(c):
                    found = c
            if found is not None:
                return found
        if p.type == "function_definition":
            return None
        up = p
    return None


def declared_names(decl: Node) -> list[str]:
    return [n for n, _v in _declarators(decl)]


def declared_value(decl: Node, name: str) -> Node | None:
    return next((v for n, v in _declarators(decl) if n == name), None)


def _declarators(decl: Node) -> list[tuple[str, Node | None]]:
    out: list[tuple[str, Node | None]] = []
    for each in decl.children_by_field_name("declarator"):
        value = None
        d: Node | None = each
        if each.type == "init_declarator":
            value = each.child_by_field_name("value")
            d = each.child_by_field_name("declarator")
        while d is not None and d.type in ("pointer_declarator", "array_declarator",
                                            "reference_declarator"):
            d = d.child_by_field_name("declarator") or (d.named_children[0]
                                                        if d.named_children else None)
        if d is not None and d.type == "identifier":
            out.append((text(d), value))
    return out


#: Statements whose condition decides whether, or how often, their body runs.
_CONTROL = ("if_statement", "while_statement", "for_statement", "do_statement",
            "switch_statement", "conditional_expression")
_JUMPS = ("break_statement", "continue_statement", "goto_statement")


def _deciding(node: Node, scope: Node) -> list[Node]:
    """The conditions between ``node`` and ``scope`` that decide whether ``node`` runs, and
    in each loop around it the conditions of the ifs that leave or skip one of its
    iterations (a jump of that loop: a ``break`` or ``continue`` of a loop or ``switch``
    inside it leaves that one; a ``continue`` never decides whether a ``for`` header's step
    runs, each iteration ends there)."""
    out: list[Node] = []
    up = node
    while up.parent is not None and up != scope:
        p = up.parent
        if p.type in _CONTROL:
            cond = p.child_by_field_name("condition")
            if cond is not None and cond != up:
                out.append(cond)
        if p.type in LOOPS:
            body = p.child_by_field_name("body")
            for j in walk(body) if body is not None else []:
                if j.type in _JUMPS and _leaves(j, p) and not (
                        j.type == "continue_statement" and up != body):
                    out += _ifs_around(j, body)  # type: ignore[arg-type]
        up = p
    return out


def _leaves(jump: Node, loop: Node) -> bool:
    """Whether ``jump`` (inside ``loop``'s body) leaves or skips an iteration of ``loop``:
    a ``goto`` may; a ``break`` or ``continue`` does when no loop (nor, for a ``break``, a
    ``switch``) between them takes it."""
    if jump.type == "goto_statement":
        return True
    takers = LOOPS + (("switch_statement",) if jump.type == "break_statement" else ())
    up = jump.parent
    while up is not None and up != loop:
        if up.type in takers:
            return False
        up = up.parent
    return True


def _ifs_around(node: Node, top: Node) -> list[Node]:
    out: list[Node] = []
    up = node.parent
    while up is not None and up != top:
        if up.type in ("if_statement", "switch_statement", "conditional_expression"):
            cond = up.child_by_field_name("condition")
            if cond is not None:
                out.append(cond)
        up = up.parent
    return out
