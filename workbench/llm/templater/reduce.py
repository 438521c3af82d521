"""Grid-stride reductions to one result per block: GRID_BLOCKS, VEC, ITEMS_PER_THREAD, FINAL.

Recognised on the parse, whatever the spelling, as the body's top-level statements:

* declarations only (the ``__shared__`` array, the accumulator ``T s = init;``, locals such
  as ``tid`` or ``stride``), then
* a grid-stride loop over every element once: ``for (i = g; i < n; i += S) s OP= E;`` or
  ``i = g; while (i < n) { s OP= E; i += S; }`` where ``g`` is ``blockIdx.x * B +
  threadIdx.x`` and ``S`` is ``B * gridDim.x`` (B the block size: its literal, a macro
  holding it, or ``blockDim.x``; through single-assignment locals), ``OP`` a sum
  (``s += E``, ``s = s + E``) or a max/min (``s = fmaxf(s, E)``, ``max``, ``fminf``, ...),
  E not reading ``s`` and free of side effects, then
* ``buf[tid] = s; __syncthreads();`` and the halving tree ``for (k = B / 2; k > 0;
  k >>= 1 | k /= 2) { if (tid < k) buf[tid] OP= buf[tid + k]; __syncthreads(); }`` with the
  loop's operator, then
* the last statement: thread 0 stores the block's result, ``out[blockIdx.x] = buf[0]`` (one
  partial per block) or ``atomicAdd(out, buf[0])`` (atomicMax / atomicMin for max / min).

Each transform keeps every config correct:

* GRID_BLOCKS: blocks launched where the grid is a literal L or a ``min(X, L)`` cap. For
  partial outputs the buffer holds the as-written grid's slots, so ``GRID_BLOCKS <= L`` and
  block 0 writes the operator's identity into the slots of blocks not launched (the host's
  sum, or max, of all slots stays right). The identity must be known for the type.
* VEC / ITEMS_PER_THREAD: the loop reads ``VEC``-wide vectors of every array it indexes by
  ``i`` alone (kernel pointers the kernel never writes; ``VEC * bytes <= 16``), the
  ``n % VEC`` elements after the last whole vector one per thread; ``ITEMS_PER_THREAD``
  vectors in flight per thread, each into its own accumulator, combined at the end. Where
  an array is read otherwise, only ITEMS_PER_THREAD applies.
* FINAL: 0 keeps the author's shared-memory tree, 1 reduces each warp with
  ``__shfl_down_sync`` and then the warps' results (one shared slot per warp) in warp 0.

Kernels that end with an atomic and whose grid is already capped by ``min(...)`` keep the
flat lifts (GRID_BLOCKS cap, VEC, ITEMS_PER_THREAD: benchmarks/corpus/sum_reduce, whose
template is committed and measured). The sum's order changes with every knob but the
defaults, so float results move by rounding (the gate checks them within tolerance).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.hardware import DEVICES
from workbench.llm.templater.analysis import (
    binary,
    builtin,
    calls,
    declared_name,
    factors,
    int_value,
    line,
    strip,
    text,
    walk,
)
from workbench.llm.templater.block import lift_block
from workbench.llm.templater.plan import Plan
from workbench.llm.templater.rules import literal, min_cap
from workbench.llm.templater.vector import VEC_STRUCT, Illegal

NAME = "REDUCTION"
_MAX_CALLS = frozenset({"fmaxf", "fmax", "max"})
_MIN_CALLS = frozenset({"fminf", "fmin", "min"})
_ATOMICS = {"sum": "atomicAdd", "max": "atomicMax", "min": "atomicMin"}
_INF = {"float": "__int_as_float(0x7f800000)", "double": "__longlong_as_double(0x7ff0000000000000LL)"}
# The operator's identity per accumulator type (None: unknown, the fill is refused).
_IDENTITY: dict[str, dict[str, str]] = {
    "sum": {},  # (T)0 for every arithmetic type
    "max": {"float": f"(-{_INF['float']})", "double": f"(-{_INF['double']})",
            "int": "(-2147483647 - 1)", "unsigned": "0u", "unsigned int": "0u",
            "long long": "(-9223372036854775807LL - 1)", "unsigned long long": "0ull"},
    "min": {"float": _INF["float"], "double": _INF["double"], "int": "2147483647",
            "unsigned": "0xffffffffu", "unsigned int": "0xffffffffu",
            "long long": "9223372036854775807LL", "unsigned long long": "0xffffffffffffffffull"},
}
_ARITHMETIC = {"float", "double", "int", "unsigned", "unsigned int", "long long",
               "unsigned long long", "long", "unsigned long", "short", "char"}
_SHUFFLED = {"float", "double", "int", "unsigned", "unsigned int", "long long",
             "unsigned long long"}
_UNSAFE_CALLS = ("atomic", "__shfl", "__syncthreads", "__syncwarp", "__ballot", "__any",
                 "__all", "__reduce", "__match", "printf")


@dataclass(frozen=True)
class Op:
    """The reduction's operator: its kind and, for max/min, the author's function."""

    kind: str  # "sum" | "max" | "min"
    func: str = ""

    def combine(self, a: str, b: str) -> str:
        return f"{a} + {b}" if self.kind == "sum" else f"{self.func}({a}, {b})"


@dataclass(frozen=True)
class Reduction:
    """The recognised kernel: its loop, accumulation, tree and final store."""

    acc: str
    acc_type: str
    var: str
    var_type: str
    loop: Node  # the for / while statement
    loop_decl: Node | None  # the while form's ``int i = g;``
    bound: Node
    update: Node  # the accumulation expression (``s += E`` / ``s = f(s, E)``)
    value: Node  # E
    op: Op
    buf: str
    store: Node  # ``buf[tid] = s;``
    tree: Node
    final: Node  # the thread-0 if statement
    out: str
    atomic: bool


def lift_reduce(plan: Plan) -> bool:
    """Apply the reduction family where the kernel has the shape above; True when it did.
    A kernel with a grid-stride loop and a shared tree that is not quite that shape is
    refused with the reason and the line (and left to the other transforms)."""
    if len(plan.block) != 1 or len(plan.grid) != 1 or not _candidate(plan):
        return False
    try:
        red = _recognise(plan)
    except Illegal as exc:
        plan.note(NAME, False, exc.reason, exc.node)
        return False
    if red.atomic and min_cap(plan.grid[0], "GRID_BLOCKS") is not None:
        plan.note(NAME, False, "the kernel ends with an atomic and its grid is already "
                  "capped by min(...): the flat lifts (GRID_BLOCKS cap, VEC, ITEMS_PER_THREAD) "
                  "keep its committed template", red.final)
        return False
    written_grid = plan.grid[0]
    lift_block(plan)
    plan.note(NAME, True, f"grid-stride {red.op.kind} over `{red.var}` into `{red.acc}`, a "
              f"shared tree over `{red.buf}`, thread 0 "
              f"{'adds atomically' if red.atomic else 'stores one partial per block'}", red.loop)
    _grid_blocks(plan, red, written_grid)
    _loads(plan, red)
    _final(plan, red)
    return True


# -- recognition -----------------------------------------------------------------------------

def _statements(plan: Plan) -> list[Node]:
    return [c for c in plan.body.named_children if c.type != "comment"]


def _candidate(plan: Plan) -> bool:
    """A grid-stride step somewhere and a shared array: the family, maybe misspelled."""
    return any(d.is_shared for d in plan.facts.defs.values()) and any(
        builtin(n, "gridDim") == "x" for n in walk(plan.body))


def _block_size(plan: Plan) -> int | None:
    return literal(plan.block[0])


def _is_block(node: Node, size: int | None) -> bool:
    return builtin(node, "blockDim") == "x" or (size is not None and int_value(node) == size)


def _expand(plan: Plan, node: Node) -> Node:
    """A single-assignment local's value in place of its name (``stride`` -> its value)."""
    node = strip(node)
    for _ in range(4):
        d = plan.facts.defs.get(text(node)) if node.type == "identifier" else None
        if d is None or d.value is None or d.assigned or d.is_shared:
            return node
        node = strip(d.value)
    return node


def _global_thread(plan: Plan, node: Node, size: int | None) -> bool:
    """``node`` is ``blockIdx.x * B + threadIdx.x`` (B the block size), through locals."""
    parts = plan.facts.resolve(node)
    if len(parts) != 2:
        return False
    thread = [p for p in parts if plan.facts.is_thread(p, "x")]
    offset = [p for p in parts if not plan.facts.is_thread(p, "x")]
    if len(thread) != 1 or len(offset) != 1:
        return False
    off = _expand(plan, offset[0])
    b = binary(off)
    if b is None or b[1] != "*":
        return False
    if builtin(b[0], "blockIdx") == "x":
        return _is_block(b[2], size)
    return builtin(b[2], "blockIdx") == "x" and _is_block(b[0], size)


def _grid_step(plan: Plan, node: Node, size: int | None) -> bool:
    """``node`` is ``B * gridDim.x`` (either order), through a local."""
    fs = factors(_expand(plan, node))
    return len(fs) == 2 and sum(builtin(f, "gridDim") == "x" for f in fs) == 1 and \
        sum(_is_block(f, size) for f in fs) == 1


def _only(node: Node | None) -> Node | None:
    """The single statement of a compound statement (or the statement itself)."""
    if node is not None and node.type == "compound_statement":
        inner = [c for c in node.named_children if c.type != "comment"]
        return inner[0] if len(inner) == 1 else None
    return node


def _expression(stmt: Node | None) -> Node | None:
    stmt = _only(stmt)
    if stmt is None or stmt.type != "expression_statement" or not stmt.named_children:
        return None
    return stmt.named_children[0]


def _accumulation(expr: Node | None, target: str) -> tuple[Op, Node] | None:
    """(operator, E) of ``target += E`` | ``target = target + E`` | ``target = f(target, E)``
    where ``target`` is text (an identifier or ``buf[tid]``)."""
    if expr is None or expr.type != "assignment_expression":
        return None
    left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
    op = text(expr.child_by_field_name("operator"))
    if left is None or right is None or _norm(left) != target:
        return None
    if op == "+=":
        return Op("sum"), right
    if op != "=":
        return None
    parts = binary(right)
    if parts is not None and parts[1] == "+":
        if _norm(parts[0]) == target:
            return Op("sum"), parts[2]
        if _norm(parts[2]) == target:
            return Op("sum"), parts[0]
    r = strip(right)
    if r.type == "call_expression":
        func = text(r.child_by_field_name("function"))
        args = r.child_by_field_name("arguments")
        argv = [] if args is None else list(args.named_children)
        kind = "max" if func in _MAX_CALLS else "min" if func in _MIN_CALLS else None
        if kind is not None and len(argv) == 2:
            if _norm(argv[0]) == target:
                return Op(kind, func), argv[1]
            if _norm(argv[1]) == target:
                return Op(kind, func), argv[0]
    return None


def _norm(node: Node) -> str:
    return "".join(text(strip(node)).split())


def _recognise(plan: Plan) -> Reduction:
    size = _block_size(plan)
    stmts = _statements(plan)
    if len(stmts) < 5:
        raise Illegal("expected a grid-stride loop, the store into shared memory, a barrier, "
                      "the tree and thread 0's store as the last statements")
    loop_at = next((k for k, s in enumerate(stmts) if s.type in ("for_statement",
                                                                  "while_statement")), None)
    if loop_at is None:
        raise Illegal("no top-level grid-stride loop")
    for s in stmts[:loop_at]:
        if s.type != "declaration":
            raise Illegal(f"`{text(s)[:60]}` before the grid-stride loop is not a declaration",
                          s)
    tail = stmts[loop_at:]
    if len(tail) != 5:
        raise Illegal("after the grid-stride loop the kernel must be exactly `buf[tid] = s;`, "
                      "`__syncthreads();`, the halving tree and thread 0's store",
                      tail[min(len(tail) - 1, 4)] if len(tail) > 5 else tail[0])
    loop, store, sync, tree, final = tail
    for n in walk(plan.body):
        if n.type in ("return_statement", "goto_statement"):
            raise Illegal(f"`{text(n)}` leaves the kernel early (threads would miss the "
                          "barriers the block's tree needs)", n)
    decl: Node | None = None
    if loop.type == "for_statement":
        var, var_type, start, bound, step, update = _for_loop(plan, loop)
    else:
        decl = stmts[loop_at - 1] if loop_at > 0 else None
        var, var_type, start, bound, step, update = _while_loop(plan, loop, decl)
    if not _global_thread(plan, start, size):
        raise Illegal(f"the loop starts at `{text(start)}`, not blockIdx.x * blockDim.x + "
                      "threadIdx.x (each thread's first element)", loop)
    if not _grid_step(plan, step, size):
        raise Illegal(f"the loop steps by `{text(step)}`, not blockDim.x * gridDim.x (every "
                      "thread of the grid)", loop)
    acc_expr = update.child_by_field_name("left")
    acc = text(acc_expr)
    found = _accumulation(update, acc)
    d = plan.facts.defs.get(acc)
    if found is None or d is None or d.is_shared or d.is_pointer or d.value is None:
        raise Illegal(f"`{text(update)[:60]}` is not a sum, max or min into a local "
                      "accumulator", update)
    op, value = found
    acc_type = " ".join(text(d.decl.child_by_field_name("type")).split())
    if acc_type not in _ARITHMETIC:
        raise Illegal(f"the accumulator `{acc}` is a {acc_type}", d.decl)
    for n in walk(value):
        if n.type in ("assignment_expression", "update_expression"):
            raise Illegal(f"`{text(value)[:60]}` has side effects", n)
        if n.type == "identifier" and text(n) == acc:
            raise Illegal(f"`{text(value)[:60]}` reads the accumulator", n)
    if any(c.startswith(_UNSAFE_CALLS) for c in calls(value)):
        raise Illegal(f"`{text(value)[:60]}` calls a warp or atomic function", value)
    if any(text(n) in (acc, var) for n in walk(bound) if n.type == "identifier"):
        raise Illegal(f"the bound `{text(bound)}` changes in the loop", bound)
    buf = _store(plan, store, acc)
    if text(_expression(sync)) != "__syncthreads()":
        raise Illegal(f"`{text(sync)[:60]}` is not the barrier after the store", sync)
    _tree(plan, tree, buf, op, size)
    out, atomic = _final_store(plan, final, buf, op)
    return Reduction(acc, acc_type, var, var_type, loop, decl, bound, update, value, op, buf,
                     store, tree, final, out, atomic)


def _for_loop(plan: Plan, loop: Node) -> tuple[str, str, Node, Node, Node, Node]:
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    inc = loop.child_by_field_name("update")
    if init is None or cond is None or inc is None or init.type != "declaration":
        raise Illegal("the loop is not `for (T i = start; i < n; i += stride)`", loop)
    var, _d, start = declared_name(init)
    typ = " ".join(text(init.child_by_field_name("type")).split())
    step = _increment(inc, var)
    parts = binary(cond)
    if start is None or step is None or parts is None or parts[1] != "<" or \
            text(strip(parts[0])) != var:
        raise Illegal("the loop is not `for (T i = start; i < n; i += stride)`", loop)
    update = _expression(loop.child_by_field_name("body"))
    if update is None:
        raise Illegal("the loop body is not one accumulation", loop)
    return var, typ, start, parts[2], step, update


def _while_loop(plan: Plan, loop: Node, decl: Node | None) -> tuple[str, str, Node, Node,
                                                                     Node, Node]:
    cond = loop.child_by_field_name("condition")
    parts = binary(cond.named_children[0] if cond is not None and cond.named_children
                   else loop) if cond is not None else None
    if parts is None or parts[1] != "<" or strip(parts[0]).type != "identifier":
        raise Illegal("the loop is not `while (i < n)`", loop)
    var = text(strip(parts[0]))
    if decl is None or decl.type != "declaration" or declared_name(decl)[0] != var or \
            declared_name(decl)[2] is None:
        raise Illegal(f"`{var}` is not declared with its start right before the loop", loop)
    start = declared_name(decl)[2]
    assert start is not None
    body = loop.child_by_field_name("body")
    inner = [] if body is None else [c for c in body.named_children if c.type != "comment"]
    if len(inner) != 2 or _expression(inner[0]) is None or _expression(inner[1]) is None:
        raise Illegal("the loop body is not an accumulation then `i += stride`", loop)
    step = _increment(_expression(inner[1]), var)  # type: ignore[arg-type]
    if step is None:
        raise Illegal(f"the loop does not end with `{var} += stride`", inner[1])
    if sum(1 for n in walk(plan.body) if n.type in ("assignment_expression",
                                                    "update_expression")
           and text(n.child_by_field_name("left") or n.child_by_field_name("argument"))
           == var) != 1:
        raise Illegal(f"`{var}` is assigned outside the loop's step", loop)
    typ = " ".join(text(decl.child_by_field_name("type")).split())
    return var, typ, start, parts[2], step, _expression(inner[0])  # type: ignore[return-value]


def _increment(node: Node, var: str) -> Node | None:
    if node.type == "assignment_expression" and text(node.child_by_field_name("left")) == var \
            and text(node.child_by_field_name("operator")) == "+=":
        return node.child_by_field_name("right")
    return None


def _store(plan: Plan, store: Node, acc: str) -> str:
    expr = _expression(store)
    left = expr.child_by_field_name("left") if expr is not None else None
    right = expr.child_by_field_name("right") if expr is not None else None
    if expr is None or expr.type != "assignment_expression" or left is None or \
            left.type != "subscript_expression" or right is None or text(strip(right)) != acc or \
            text(expr.child_by_field_name("operator")) != "=":
        raise Illegal(f"`{text(store)[:60]}` is not `buf[tid] = {acc};`", store)
    buf = text(left.child_by_field_name("argument"))
    d = plan.facts.defs.get(buf)
    idx = left.child_by_field_name("indices")
    if d is None or not d.is_shared or idx is None or not idx.named_children or \
            not plan.facts.is_thread(idx.named_children[0], "x"):
        raise Illegal(f"`{text(left)}` is not a __shared__ array at the thread's index", store)
    return buf


def _tree(plan: Plan, tree: Node, buf: str, op: Op, size: int | None) -> None:
    if tree.type != "for_statement":
        raise Illegal("the tree is not a `for` loop halving the stride", tree)
    init, cond = tree.child_by_field_name("initializer"), tree.child_by_field_name("condition")
    inc = tree.child_by_field_name("update")
    if init is None or cond is None or inc is None or init.type != "declaration":
        raise Illegal("the tree is not `for (k = B / 2; k > 0; k >>= 1)`", tree)
    k, _d, start = declared_name(init)
    half = binary(start) if start is not None else None
    starts_half = start is not None and (
        (size is not None and int_value(start) == size // 2) or
        (half is not None and half[1] == "/" and int_value(half[2]) == 2 and
         _is_block(half[0], size)) or
        (half is not None and half[1] == ">>" and int_value(half[2]) == 1 and
         _is_block(half[0], size)))
    c = binary(cond)
    stops = c is not None and text(strip(c[0])) == k and (
        (c[1] == ">" and int_value(c[2]) == 0) or (c[1] == ">=" and int_value(c[2]) == 1))
    op_text = text(inc.child_by_field_name("operator"))
    halves = text(inc.child_by_field_name("left")) == k and (
        (op_text == ">>=" and int_value(inc.child_by_field_name("right")) == 1) or
        (op_text == "/=" and int_value(inc.child_by_field_name("right")) == 2))
    if not (starts_half and stops and halves):
        raise Illegal(f"the tree `{text(tree).splitlines()[0][:70]}` does not start at half "
                      "the block and halve to 1", tree)
    body = tree.child_by_field_name("body")
    inner = [] if body is None else [c for c in body.named_children if c.type != "comment"]
    if len(inner) != 2 or text(_expression(inner[1])) != "__syncthreads()" or \
            inner[0].type != "if_statement":
        raise Illegal("the tree's body is not `if (tid < k) ...; __syncthreads();`", tree)
    guard = inner[0]
    g = binary(guard.child_by_field_name("condition").named_children[0])  # type: ignore[union-attr]
    if g is None or g[1] != "<" or not plan.facts.is_thread(g[0], "x") or \
            text(strip(g[2])) != k or guard.child_by_field_name("alternative") is not None:
        raise Illegal(f"`{text(guard).splitlines()[0][:60]}` is not `if (tid < {k})`", guard)
    step = _expression(guard.child_by_field_name("consequence"))
    left = step.child_by_field_name("left") if step is not None else None
    if left is None or left.type != "subscript_expression" or \
            text(left.child_by_field_name("argument")) != buf:
        raise Illegal(f"the tree does not combine `{buf}[tid]`", guard)
    found = _accumulation(step, _norm(left))
    if found is None or found[0].kind != op.kind:
        raise Illegal(f"the tree's step `{text(step)[:60]}` is not the loop's "
                      f"{op.kind}", step)
    other = strip(found[1])
    idx = other.child_by_field_name("indices") if other.type == "subscript_expression" else None
    parts = [t for _s, t in _terms(idx.named_children[0])] if idx is not None and \
        idx.named_children else []
    if text(other.child_by_field_name("argument")) != buf or len(parts) != 2 or \
            not any(plan.facts.is_thread(t, "x") for t in parts) or \
            not any(text(t) == k for t in parts):
        raise Illegal(f"the tree's step reads `{text(other)}`, not `{buf}[tid + {k}]`", step)


def _terms(node: Node) -> list[tuple[int, Node]]:
    from workbench.llm.templater.analysis import terms

    return terms(node)


def _final_store(plan: Plan, final: Node, buf: str, op: Op) -> tuple[str, bool]:
    cond = final.child_by_field_name("condition")
    c = binary(cond.named_children[0]) if cond is not None and cond.named_children else None
    if final.type != "if_statement" or c is None or c[1] != "==" or \
            not plan.facts.is_thread(c[0], "x") or int_value(c[2]) != 0 or \
            final.child_by_field_name("alternative") is not None:
        raise Illegal(f"the last statement `{text(final)[:60]}` is not thread 0's store",
                      final)
    expr = _expression(final.child_by_field_name("consequence"))
    if expr is None:
        raise Illegal("thread 0 does more than one store", final)
    if expr.type == "call_expression":
        func = text(expr.child_by_field_name("function"))
        args = expr.child_by_field_name("arguments")
        argv = [] if args is None else list(args.named_children)
        if func != _ATOMICS[op.kind] or len(argv) != 2 or _norm(argv[1]) != f"{buf}[0]":
            raise Illegal(f"`{text(expr)}` is not {_ATOMICS[op.kind]}(out, {buf}[0])", expr)
        target = strip(argv[0])
        if target.type == "pointer_expression":
            inner = strip(target.named_children[0]) if target.named_children else target
            if inner.type == "subscript_expression" and int_value(
                    inner.child_by_field_name("indices").named_children[0]) == 0:  # type: ignore[union-attr]
                target = strip(inner.child_by_field_name("argument"))  # type: ignore[arg-type]
        if target.type != "identifier" or not plan.pointer(text(target)):
            raise Illegal(f"`{text(argv[0])}` is not a kernel pointer argument", expr)
        return text(target), True
    left = expr.child_by_field_name("left")
    right = expr.child_by_field_name("right")
    idx = left.child_by_field_name("indices") if left is not None and \
        left.type == "subscript_expression" else None
    if expr.type != "assignment_expression" or text(expr.child_by_field_name("operator")) \
            != "=" or idx is None or not idx.named_children or \
            builtin(idx.named_children[0], "blockIdx") != "x" or right is None or \
            _norm(right) != f"{buf}[0]":
        raise Illegal(f"`{text(expr)}` is not `out[blockIdx.x] = {buf}[0]`", expr)
    out = text(left.child_by_field_name("argument"))  # type: ignore[union-attr]
    if not plan.pointer(out):
        raise Illegal(f"`{out}` is not a kernel pointer argument", expr)
    return out, False


# -- GRID_BLOCKS -----------------------------------------------------------------------------

def identity(op: Op, typ: str) -> str | None:
    """The operator's identity for ``typ`` as CUDA text, or None where it is not known."""
    if op.kind == "sum":
        return f"({typ})0" if typ in _ARITHMETIC else None
    return _IDENTITY[op.kind].get(typ)


def grid_values(cap: int) -> list[int]:
    """Block counts up to ``cap``: eighths of it and 1, 2, 4 waves of each known GPU's SMs."""
    sms = {d.num_sms for d in DEVICES.values()}
    values = {cap * k // 8 for k in range(1, 9)} | {s * k for s in sms for k in (1, 2, 4)}
    return sorted(v for v in values if 1 <= v <= cap)


def _c_rule(rule: str, names: Mapping[str, str]) -> str | None:
    """A launch rule as CUDA integer arithmetic over kernel scalars, or None."""
    try:
        tree = ast.parse(rule, mode="eval").body
    except SyntaxError:
        return None

    def c(n: ast.expr) -> str | None:
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return str(n.value)
        if isinstance(n, ast.Name):
            return names.get(n.id)
        if isinstance(n, ast.BinOp) and type(n.op) in (ast.Add, ast.Sub, ast.Mult,
                                                       ast.FloorDiv):
            a, b = c(n.left), c(n.right)
            sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/"}[type(n.op)]
            return None if a is None or b is None else f"({a} {sym} {b})"
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and len(n.args) == 2:
            a, b = c(n.args[0]), c(n.args[1])
            if a is None or b is None:
                return None
            if n.func.id == "ceil_div":
                return f"(({a} + {b} - 1) / {b})"
            if n.func.id == "min":
                return f"({a} < {b} ? {a} : {b})"
        return None

    return c(tree)


def _grid_blocks(plan: Plan, red: Reduction, written: str) -> None:
    # the grid as written, not scaled by the lifted block size: the grid-stride loop covers
    # any grid, and partial outputs have the written grid's slots only
    plan.grid[0] = written
    cap = literal(written)
    capped = min_cap(written, "GRID_BLOCKS") if cap is None else None
    if cap is None and capped is None:
        plan.note("GRID_BLOCKS", False, f"the grid `{written}` is neither a literal block "
                  "count nor capped by min(...); the block count follows it")
        return
    count = str(cap) if cap is not None else None
    if capped is not None:
        plan.grid[0], cap = capped
        # the scalars by the shape expression they are launched with, for the slot count
        names = {v: k for k, v in plan.scalars.items() if v.isidentifier()}
        count = _c_rule(written, names)
    else:
        plan.grid[0] = "GRID_BLOCKS"
    if not red.atomic:
        fill = identity(red.op, red.acc_type)
        why = None if fill is not None else f"the identity of {red.op.kind} for " \
            f"{red.acc_type} is not known"
        why = why or (None if count is not None else
                      f"the slot count `{written}` is not arithmetic over kernel arguments")
        if why is not None:
            plan.grid[0] = written
            plan.note("GRID_BLOCKS", False, f"{why}: the slots of blocks not launched could not "
                      "be filled, so the block count stays as written", red.final)
            return
        out_at = red.final.end_byte
        plan.rw.insert(out_at, (
            f"\n  if (blockIdx.x == 0) {{  // slots of the written grid's blocks not launched "
            f"(GRID_BLOCKS below it): the {red.op.kind}'s identity\n"
            f"    for (int wb_b = (int)gridDim.x + (int)threadIdx.x; wb_b < {count}; "
            f"wb_b += (int)blockDim.x) {red.out}[wb_b] = {fill};\n  }}"))
    assert cap is not None
    plan.add_param("GRID_BLOCKS", {
        "kind": "choice", "values": grid_values(cap), "default": cap,
        "description": f"blocks launched (as written: {cap}); the grid-stride loop covers "
                       "any count"}, f"{line(red.loop)}: grid {written}")
    plan.constrain(f"GRID_BLOCKS <= {cap}")
    plan.note("GRID_BLOCKS", True, "any block count covers the data (grid-stride loop)" + (
        "" if red.atomic else f"; at most the {cap} partial slots, block 0 fills the slots of "
        "blocks not launched with the operator's identity"), red.loop)


# -- VEC / ITEMS_PER_THREAD ------------------------------------------------------------------

def _vector_arrays(plan: Plan, red: Reduction) -> tuple[list[Node], str | None]:
    """The ``A[i]`` accesses of E (all of them), or the reason VEC does not apply."""
    accesses: list[Node] = []
    written = {text(n.child_by_field_name("left").child_by_field_name("argument"))  # type: ignore[union-attr]
               for n in walk(plan.body) if n.type == "assignment_expression" and
               (left := n.child_by_field_name("left")) is not None and
               left.type == "subscript_expression"}
    for n in walk(red.value):
        if n.type != "identifier" or text(n) != red.var:
            continue
        sub = n.parent
        while sub is not None and sub.type in ("parenthesized_expression",
                                               "subscript_argument_list"):
            sub = sub.parent
        if sub is None or sub.type != "subscript_expression" or \
                text(strip(sub.child_by_field_name("indices").named_children[0])) != red.var:  # type: ignore[union-attr]
            return [], f"`{red.var}` is used in `{text(n.parent)}`, not only as `A[{red.var}]`"
        array = text(sub.child_by_field_name("argument"))
        if not plan.pointer(array) or array in written:
            return [], f"`{array}` is not a kernel pointer the kernel only reads"
        if sub.parent is not None and sub.parent.type == "pointer_expression":
            return [], f"the address of `{text(sub)}` is taken"
        if plan.elem_bytes(array) is None:
            return [], f"`{array}` has no known element size"
        accesses.append(sub)
    if not accesses:
        return [], f"no array is read at `[{red.var}]`"
    return accesses, None


def _loads(plan: Plan, red: Reduction) -> None:
    accesses, why = _vector_arrays(plan, red)
    arrays = sorted({text(a.child_by_field_name("argument")) for a in accesses})
    for n in walk(red.update):
        if n.type == "identifier" and text(n) == red.acc:
            plan.rw.replace(n, "wb_acc[wb_u]")
    if why is None:
        for a in accesses:
            plan.rw.replace(a, f"wb_in_{text(a.child_by_field_name('argument'))}[wb_u].v[wb_v]")
        plan.helper(VEC_STRUCT)
        for w in sorted({plan.elem_bytes(a) for a in arrays}, key=str):
            plan.constrain(f"VEC * {w} <= 16")
        plan.add_param("VEC", {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                               "description": "elements per vector load, the n % VEC tail "
                                              "loaded alone (as written: 1)"},
                       f"{line(red.loop)}: grid-stride loop over {red.var}")
        plan.note("VEC", True, f"{', '.join(arrays)} read as VEC-wide vectors; the elements "
                  "after the last whole vector one per thread (no divisibility needed)",
                  red.loop)
    else:
        plan.note("VEC", False, why, red.value)
    plan.add_param("ITEMS_PER_THREAD", {
        "kind": "choice", "values": [1, 2, 4, 8], "default": 1,
        "description": "loads in flight per thread, each into its own accumulator "
                       "(as written: 1)"}, f"{line(red.loop)}: accumulation into {red.acc}")
    plan.note("ITEMS_PER_THREAD", True, f"independent accumulators for `{red.acc}` "
              f"({red.op.kind}), combined after the loop", red.loop)
    first = red.loop_decl.start_byte if red.loop_decl is not None else red.loop.start_byte
    plan.rw.replace_span(first, red.loop.end_byte, make=lambda rw: _loop_text(
        plan, red, arrays, vector=why is None))


def _loop_text(plan: Plan, red: Reduction, arrays: list[str], *, vector: bool) -> str:
    rw = plan.rw
    it, t, s = red.var_type, red.acc_type, red.acc
    bound = rw.text(red.bound)
    update = rw.text(red.update) + ";"
    ident = identity(red.op, t) if red.op.kind == "sum" else s  # max/min: idempotent
    head = (f"{{  // the grid-stride loop: {'VEC-wide loads, ' if vector else ''}"
            f"ITEMS_PER_THREAD independent accumulators\n"
            f"    const {it} wb_stride = ({it})blockDim.x * ({it})gridDim.x;\n"
            f"    const {it} wb_first = ({it})blockIdx.x * ({it})blockDim.x + "
            f"({it})threadIdx.x;\n"
            f"    {t} wb_acc[ITEMS_PER_THREAD];\n"
            f"#pragma unroll\n"
            f"    for (int wb_u = 0; wb_u < ITEMS_PER_THREAD; ++wb_u) "
            f"wb_acc[wb_u] = wb_u == 0 ? {s} : {ident};\n")
    combine = (f"    {s} = wb_acc[0];\n#pragma unroll\n"
               f"    for (int wb_u = 1; wb_u < ITEMS_PER_THREAD; ++wb_u) "
               f"{s} = {red.op.combine(s, 'wb_acc[wb_u]')};\n  }}")
    if not vector:
        v, typ = red.var, it
        return head + (
            f"    {it} wb_j = wb_first;\n"
            f"    for (; wb_j + (ITEMS_PER_THREAD - 1) * wb_stride < {bound}; "
            f"wb_j += ITEMS_PER_THREAD * wb_stride) {{\n"
            f"#pragma unroll\n"
            f"      for (int wb_u = 0; wb_u < ITEMS_PER_THREAD; ++wb_u) {{\n"
            f"        const {typ} {v} = wb_j + wb_u * wb_stride;\n"
            f"        {update}\n      }}\n    }}\n"
            f"    for (; wb_j < {bound}; wb_j += wb_stride) {{\n"
            f"      const int wb_u = 0;\n      const {typ} {v} = wb_j;\n      {update}\n    }}\n"
        ) + combine

    def vec(arr: str) -> str:
        return f"WbVec<{plan.kernel.param(arr).base_type}, VEC>"

    decls = "".join(f"      {vec(a)} wb_in_{a}[ITEMS_PER_THREAD];\n" for a in arrays)
    loads = "".join(f"        wb_in_{a}[wb_u] = *reinterpret_cast<const {vec(a)}*>"
                    f"(&{a}[(wb_j + wb_u * wb_stride) * VEC]);\n" for a in arrays)
    one = "".join(f"      {vec(a)} wb_in_{a}[1];\n      wb_in_{a}[0] = *reinterpret_cast<const "
                  f"{vec(a)}*>(&{a}[wb_j * VEC]);\n" for a in arrays)
    tail = "".join(f"        {vec(a)} wb_in_{a}[1];\n        wb_in_{a}[0].v[0] = {a}[wb_t];\n"
                   for a in arrays)
    return head + (
        f"    const {it} wb_nv = ({bound}) / VEC;  // whole vectors\n"
        f"    {it} wb_j = wb_first;\n"
        f"    for (; wb_j + (ITEMS_PER_THREAD - 1) * wb_stride < wb_nv; "
        f"wb_j += ITEMS_PER_THREAD * wb_stride) {{\n{decls}"
        f"#pragma unroll\n      for (int wb_u = 0; wb_u < ITEMS_PER_THREAD; ++wb_u) {{\n"
        f"{loads}      }}\n"
        f"#pragma unroll\n      for (int wb_u = 0; wb_u < ITEMS_PER_THREAD; ++wb_u) {{\n"
        f"#pragma unroll\n        for (int wb_v = 0; wb_v < VEC; ++wb_v) {update}\n      }}\n"
        f"    }}\n"
        f"    for (; wb_j < wb_nv; wb_j += wb_stride) {{  // the last whole vectors\n"
        f"      const int wb_u = 0;\n{one}"
        f"#pragma unroll\n      for (int wb_v = 0; wb_v < VEC; ++wb_v) {update}\n    }}\n"
        f"    {{  // the {bound} % VEC elements after the last whole vector, one per thread\n"
        f"      const {it} wb_t = wb_nv * VEC + wb_first;\n"
        f"      if (wb_t < {bound}) {{\n        const int wb_u = 0, wb_v = 0;\n{tail}"
        f"        {update}\n      }}\n    }}\n"
    ) + combine


# -- FINAL -----------------------------------------------------------------------------------

def _final(plan: Plan, red: Reduction) -> None:
    t = red.acc_type
    fill = identity(red.op, t)
    buf_type = " ".join(text(plan.facts.defs[red.buf].decl.child_by_field_name("type")).split())
    why = None
    if t not in _SHUFFLED or buf_type != t:
        why = f"`{red.acc}` is a {t} (shared {buf_type}), which the shuffle stage does not move"
    elif fill is None:
        why = f"the identity of {red.op.kind} for {t} is not known"
    else:
        size = _block_size(plan)
        if plan.block[0] not in plan.params and (size is None or size % 32):
            why = f"the block `{plan.block[0]}` is not known to be whole warps"
    if why is not None:
        plan.note("FINAL", False, why, red.tree)
        return
    buf, comb = red.buf, red.op.combine
    step = (f"for (int wb_o = 16; wb_o > 0; wb_o >>= 1) wb_r = "
            f"{comb('wb_r', '__shfl_down_sync(0xffffffffu, wb_r, wb_o)')};\n")
    shuffle = f"#pragma unroll\n    {step}"
    a, b = red.store.start_byte, red.tree.end_byte
    plan.rw.replace_span(a, b, make=lambda rw: (
        f"#if FINAL == 0\n  {rw.render(a, b)}\n#else\n"
        f"  {{  // warp shuffles, then one shared slot per warp, reduced by warp 0\n"
        f"    {t} wb_r = {red.acc};\n{shuffle}"
        f"    if (threadIdx.x % 32 == 0) {buf}[threadIdx.x / 32] = wb_r;\n"
        f"    __syncthreads();\n"
        f"    if (threadIdx.x < 32) {{\n"
        f"      wb_r = threadIdx.x < blockDim.x / 32 ? {buf}[threadIdx.x] : {fill};\n"
        f"#pragma unroll\n      {step}"
        f"      if (threadIdx.x == 0) {buf}[0] = wb_r;\n    }}\n  }}\n#endif"))
    plan.add_param("FINAL", {"kind": "choice", "values": [0, 1], "default": 0,
                             "description": "the block's last stage: 0 the shared-memory tree "
                                            "(as written), 1 warp shuffles"},
                   f"{line(red.tree)}: {text(red.tree).splitlines()[0][:60]}")
    plan.note("FINAL", True, "the tree or warp shuffles (__shfl_down_sync, one shared slot "
              "per warp); thread 0's store reads the same slot", red.tree)
