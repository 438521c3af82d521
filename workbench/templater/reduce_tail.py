"""The block's last stage of a grid-stride reduction written with warp shuffles, kept as
written: each warp reduced by a shuffle loop, then the warps' results added atomically, or
put in one shared slot per warp and reduced by warp 0 (a shuffle loop again) or by thread 0
(a loop over the slots).

The reduction's knobs (GRID_BLOCKS, VEC, ITEMS_PER_THREAD: :mod:`.reduce_rewrite`) change
only which elements each thread's accumulator holds and how many blocks run; they keep the
kernel's result only where the stage combines every accumulator of the block exactly once
with the loop's operator. Read on the parse, whatever the names and spellings of the lane
(``threadIdx.x & 31``, ``% 32``, a local), the warp (``>> 5``, ``/ 32``) and the loops, the
stage is accepted only as (each part shown by its meaning, so the coverage holds):

* a warp loop over the accumulator: the offset from 16 (``warpSize / 2``) halved to 1, the
  body ``v = v OP __shfl_down_sync(full mask, v, o)`` or ``__shfl_xor_sync`` (lane 0 then
  holds the warp's result), with the loop's operator; then either
* lane 0's ``atomicAdd(out, v)`` (the operator's atomic), or
* lane 0's ``slot[warp] = v;``, ``__syncthreads();`` and one last statement: warp 0 reading
  ``v = lane < W ? slot[lane] : identity`` (W the block's warps), the warp loop, lane 0's
  store ``out[blockIdx.x] = v`` or atomic; or thread 0 folding ``t = identity`` (or
  ``slot[0]``) with ``t = t OP slot[w]`` for every w from 0 (or 1) below W, then its store.

Anything else is refused with the reason and the line. The block size stays as written (the
stage counts the warps), and FINAL does not apply (the stage is the author's).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tree_sitter import Node

from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import (
    binary,
    builtin,
    declared_name,
    int_expr_value,
    line,
    strip,
    text,
    walk,
)
from workbench.templater.ilp_calls import callee_name
from workbench.templater.plan import Plan
from workbench.templater.reduce_records import Head
from workbench.templater.rules import literal

#: The calls a max or min reduction is written with, and each reduction's atomic.
MAX_CALLS = frozenset({"fmaxf", "fmax", "max"})
MIN_CALLS = frozenset({"fminf", "fmin", "min"})
ATOMICS = {"sum": "atomicAdd", "max": "atomicMax", "min": "atomicMin"}
_SHUFFLES = ("__shfl_down_sync", "__shfl_xor_sync")
_FULL = 0xFFFFFFFF


class _No(WorkbenchError):
    """Why the stage is not one of the accepted forms, with the node (internal: it becomes a
    refusal's finding)."""

    def __init__(self, why: str, node: Node) -> None:
        super().__init__(why, reason=why)
        self.why, self.node = why, node


@dataclass
class _Names:
    """Locals holding the lane (threadIdx.x % 32) and the warp (threadIdx.x / 32)."""

    plan: Plan
    lane: set[str] = field(default_factory=set)
    warp: set[str] = field(default_factory=set)
    # inside warp 0 (threads 0 .. 31) the thread index is the lane: ``slot[threadIdx.x]``
    warp0: bool = False

    def read(self, decl: Node) -> bool:
        """Record the declaration's lane / warp locals; True when it declares only those."""
        found = []
        for d in decl.children_by_field_name("declarator"):
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            name = text(d.child_by_field_name("declarator")) if value is not None else ""
            kind = self.kind(value) if value is not None else None
            if kind is None:
                return False
            found.append((kind, name))
        for kind, name in found:
            (self.lane if kind == "lane" else self.warp).add(name)
        return bool(found)

    def kind(self, node: Node) -> str | None:
        node = strip(node)
        if self.warp0 and self.plan.facts.is_thread(node, "x"):
            return "lane"
        if node.type == "identifier":
            return "lane" if text(node) in self.lane else "warp" if text(node) in self.warp \
                else None
        parts = binary(node)
        if parts is None or not self.plan.facts.is_thread(parts[0], "x"):
            return None
        k = _value(parts[2])
        return {("%", 32): "lane", ("&", 31): "lane", ("/", 32): "warp",
                (">>", 5): "warp"}.get((parts[1], k if k is not None else -1))

    def is_zero(self, cond: Node | None, kind: str) -> bool:
        """``cond`` is ``X == 0`` (X the lane or the warp; ``threadIdx.x < 32`` for warp 0;
        ``threadIdx.x == 0`` for thread 0: kind "thread")."""
        if cond is None:
            return False
        node = strip(cond.named_children[0] if cond.type == "condition_clause" and
                     cond.named_children else cond)
        parts = binary(node)
        if parts is None:
            return False
        left, op, right = parts
        if op == "==" and _value(right) == 0:
            if kind == "thread":
                return self.plan.facts.is_thread(left, "x")
            return self.kind(left) == kind
        return kind == "warp" and op == "<" and self.plan.facts.is_thread(left, "x") and \
            _value(right) == 32


#: Names the tail's integer constants may use beside literals and integer macros.
_WARP_SIZE = {"warpSize": 32}


def _value(node: Node | None, block: int | None = None) -> int | None:
    """An integer constant expression of literals and integer macros (``THREADS / 32``,
    ``warpSize / 2``; ``blockDim.x / 32`` where the ``block`` size is given), else None."""
    return int_expr_value(node, _WARP_SIZE if block is None else
                          {**_WARP_SIZE, "blockDim.x": block})


def kept_tail(plan: Plan, stmts: list[Node], head: Head) -> tuple[str, bool] | str:
    """(output, atomic) where ``stmts`` (after the loop) are one of the accepted stages,
    else why not (with the line)."""
    block = literal(plan.block[0]) if plan.block else None
    if block is None or block % 32:
        return f"the block `{plan.block[0] if plan.block else '?'}` is not known to be " \
            "whole warps"
    names = _Names(plan)
    seq = [s for s in stmts if s.type not in ("comment", "preproc_call") and
           not (s.type == "declaration" and names.read(s))]
    try:
        for n in (n for s in stmts for n in walk(s) if n.type == "call_expression"):
            if callee_name(n).split("::")[-1] in ("reduce", "reduce_store_async"):
                raise _No(f"`{text(n)[:50]}` is cooperative groups' reduce, whose order and "
                          "coverage are the library's: the analysis does not read it", n)
        return _stage(plan, seq, head, names, block // 32)
    except _No as no:
        return f"{no.why} (line {line(no.node)})"


def _stage(plan: Plan, seq: list[Node], head: Head, names: _Names,
           warps: int) -> tuple[str, bool]:
    if not seq:
        raise _No("nothing follows the loop", head.loop)
    seq = seq[_warp_steps(seq, 0, head.acc, head) - 1:]  # one statement for the steps
    if len(seq) == 2:  # lane 0 of each warp adds its result atomically
        return _lane0_out(plan, seq[1], head.acc, head, names, atomic_only=True)
    if len(seq) != 4:
        raise _No("the stage is not the warp loop, then lane 0's atomic or its slot, a "
                  "barrier and the warps' last step", seq[min(len(seq) - 1, 1)])
    slot = _lane0_slot(plan, seq[1], head.acc, names)
    if text(_expression(seq[2])) != "__syncthreads()":
        raise _No(f"`{text(seq[2])[:50]}` is not the barrier after the warps' slots", seq[2])
    last = seq[3]
    cond = last.child_by_field_name("condition")
    body = _body(last)
    if last.type != "if_statement" or last.child_by_field_name("alternative") is not None \
            or not body:
        raise _No(f"`{text(last)[:50]}` is not warp 0's or thread 0's last step", last)
    if names.is_zero(cond, "warp"):
        return _warp0(plan, body, slot, head, replace(names, warp0=True), warps)
    if names.is_zero(cond, "thread"):
        return _thread0(plan, body, slot, head, warps)
    raise _No(f"`{text(cond)}` is not warp 0 or thread 0", last)


def _body(stmt: Node) -> list[Node]:
    body = stmt.child_by_field_name("consequence")
    if body is None:
        return []
    if body.type != "compound_statement":
        return [body]
    return [c for c in body.named_children if c.type not in ("comment", "preproc_call")]


def _expression(stmt: Node) -> Node | None:
    if stmt.type != "expression_statement" or not stmt.named_children:
        return None
    return strip(stmt.named_children[0])


def _combined(expr: Node | None, target: str, head: Head) -> Node | None:
    """The operand ``E`` of ``target += E`` / ``target = target + E`` / ``target =
    f(target, E)`` with the loop's operator, else None."""
    if expr is None or expr.type != "assignment_expression" or \
            text(strip(expr.child_by_field_name("left"))) != target:  # type: ignore[arg-type]
        return None
    op = text(expr.child_by_field_name("operator"))
    right = expr.child_by_field_name("right")
    if right is None:
        return None
    right = strip(right)
    if head.op.kind == "sum":
        if op == "+=":
            return right
        parts = binary(right)
        if op == "=" and parts is not None and parts[1] == "+":
            if text(strip(parts[0])) == target:
                return strip(parts[2])
            if text(strip(parts[2])) == target:
                return strip(parts[0])
        return None
    funcs = MAX_CALLS if head.op.kind == "max" else MIN_CALLS
    args = right.child_by_field_name("arguments") if right.type == "call_expression" else None
    argv = [] if args is None else list(args.named_children)
    if op != "=" or callee_name(right) not in funcs or len(argv) != 2:
        return None
    if text(strip(argv[0])) == target:
        return strip(argv[1])
    if text(strip(argv[1])) == target:
        return strip(argv[0])
    return None


def _warp_steps(seq: list[Node], at: int, value: str, head: Head) -> int:
    """How many statements from ``seq[at]`` reduce each warp's ``value`` (checked): a warp
    loop, a warp loop over a copy assigned back (:func:`_warp_copy`: a helper's, inlined), or
    the five shuffles unrolled, ``value = value OP __shfl_*_sync(full, value, o)``
    with the offsets 16, 8, 4, 2, 1 each once (in any order lane 0 then holds the sum over
    the lanes 0 + any sum of distinct offsets: every lane once)."""
    if seq[at].type == "for_statement":
        _warp_loop(seq[at], value, head)
        return 1
    if _warp_copy(seq, at, value, head):
        return 3
    offsets: list[int | None] = []
    for stmt in seq[at:at + 5]:
        argv = _shuffle_args(_combined(_expression(stmt), value, head), value)
        if argv is None:
            break
        offsets.append(_value(argv[2]))
    if sorted(o or 0 for o in offsets) != [1, 2, 4, 8, 16]:
        raise _No(f"`{text(seq[at])[:50]}` is not a warp loop over `{value}` (nor the five "
                  "shuffles 16, 8, 4, 2, 1 unrolled)", seq[at])
    return 5


def _warp_copy(seq: list[Node], at: int, value: str, head: Head) -> bool:
    """Whether ``seq[at:at + 3]`` are ``T t = value;``, a warp loop over ``t`` and ``value =
    t;`` with ``t`` named nowhere after (a warp helper inlined at each of its calls: its
    parameter a copy of the argument, its result assigned back)."""
    if at + 3 > len(seq) or seq[at].type != "declaration" or \
            len(seq[at].children_by_field_name("declarator")) != 1:
        return False
    copy, _d, start = declared_name(seq[at])
    back = _expression(seq[at + 2])
    left = back.child_by_field_name("left") if back is not None else None
    right = back.child_by_field_name("right") if back is not None else None
    if start is None or text(strip(start)) != value or \
            seq[at + 1].type != "for_statement" or back is None or left is None or \
            right is None or back.type != "assignment_expression" or \
            text(back.child_by_field_name("operator")) != "=" or \
            text(strip(left)) != value or text(strip(right)) != copy or \
            any(n.type == "identifier" and text(n) == copy for s in seq[at + 3:] for n in walk(s)):
        return False
    _warp_loop(seq[at + 1], copy, head)
    return True


def _shuffle_args(operand: Node | None, value: str) -> list[Node] | None:
    """The arguments of ``__shfl_down_sync(full, value, o)`` / ``__shfl_xor_sync`` (an
    optional width 32), else None."""
    args = operand.child_by_field_name("arguments") if operand is not None and \
        operand.type == "call_expression" else None
    argv = [] if args is None else list(args.named_children)
    if operand is None or callee_name(operand) not in _SHUFFLES or len(argv) not in (3, 4) \
            or _value(argv[0]) != _FULL or text(strip(argv[1])) != value or \
            (len(argv) == 4 and _value(argv[3]) != 32):
        return None
    return argv


def _warp_loop(loop: Node, value: str, head: Head) -> None:
    """``for (o = 16; o > 0; o >>= 1) value = value OP __shfl_*_sync(full, value, o);``"""
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    body = loop.child_by_field_name("body")
    if loop.type != "for_statement" or init is None or init.type != "declaration" or \
            cond is None or update is None or body is None:
        raise _No(f"`{text(loop).splitlines()[0][:50]}` is not a warp loop over `{value}`",
                  loop)
    o, _d, start = declared_name(init)
    c = binary(cond)
    stops = (c is not None and text(strip(c[0])) == o and (
        (c[1] in (">", "!=") and _value(c[2]) == 0) or (c[1] == ">=" and _value(c[2]) == 1))) \
        or text(strip(cond)) == o
    step = text(update.child_by_field_name("operator")) if update.type == \
        "assignment_expression" else ""
    halves = text(update.child_by_field_name("left")) == o and (
        (step == ">>=" and _value(update.child_by_field_name("right")) == 1) or
        (step == "/=" and _value(update.child_by_field_name("right")) == 2))
    if _value(start) != 16 or not stops or not halves:
        raise _No(f"the warp loop `{text(loop).splitlines()[0][:50]}` does not run the "
                  "offsets 16, 8, 4, 2, 1", loop)
    inner = [c for c in (body.named_children if body.type == "compound_statement" else [body])
             if c.type not in ("comment", "preproc_call")]
    operand = _combined(_expression(inner[0]), value, head) if len(inner) == 1 else None
    argv = _shuffle_args(operand, value)
    if argv is None or text(strip(argv[2])) != o:
        raise _No(f"the warp loop's body is not `{value} = {value} {head.op.kind} "
                  f"__shfl_down_sync(0xffffffff, {value}, {o})` (or __shfl_xor_sync)", loop)


def _lane0_out(plan: Plan, stmt: Node, value: str, head: Head, names: _Names, *,
               atomic_only: bool) -> tuple[str, bool]:
    body = _body(stmt) if stmt.type == "if_statement" else []
    if not names.is_zero(stmt.child_by_field_name("condition"), "lane") or len(body) != 1 \
            or stmt.child_by_field_name("alternative") is not None:
        raise _No(f"`{text(stmt)[:50]}` is not lane 0's store of `{value}`", stmt)
    return _output(plan, body[0], value, head, atomic_only=atomic_only)


def _output(plan: Plan, stmt: Node, value: str, head: Head, *,
            atomic_only: bool = False) -> tuple[str, bool]:
    """``out[blockIdx.x] = value`` or the operator's atomic of ``value`` on ``out``."""
    expr = _expression(stmt)
    if expr is not None and expr.type == "call_expression":
        args = expr.child_by_field_name("arguments")
        argv = [] if args is None else list(args.named_children)
        if callee_name(expr) == ATOMICS[head.op.kind] and len(argv) == 2 and \
                text(strip(argv[1])) == value:
            target = strip(argv[0])
            if target.type == "pointer_expression" and target.named_children:
                inner = strip(target.named_children[-1])
                index = inner.child_by_field_name("indices")
                if inner.type == "subscript_expression" and index is not None and \
                        index.named_children and _value(index.named_children[0]) == 0:
                    target = strip(inner.child_by_field_name("argument"))  # type: ignore[arg-type]
            if target.type == "identifier" and plan.pointer(text(target)):
                return text(target), True
    elif expr is not None and expr.type == "assignment_expression" and not atomic_only:
        left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
        index = left.child_by_field_name("indices") if left is not None and \
            left.type == "subscript_expression" else None
        if text(expr.child_by_field_name("operator")) == "=" and index is not None and \
                index.named_children and builtin(index.named_children[0], "blockIdx") == "x" \
                and right is not None and text(strip(right)) == value:
            out = text(left.child_by_field_name("argument"))  # type: ignore[union-attr]
            if plan.pointer(out):
                return out, False
    raise _No(f"`{text(stmt)[:50]}` is not `out[blockIdx.x] = {value}` or "
              f"{ATOMICS[head.op.kind]}(out, {value})", stmt)


def _lane0_slot(plan: Plan, stmt: Node, value: str, names: _Names) -> str:
    """``if (lane == 0) slot[warp] = value;`` -> slot (a __shared__ array)."""
    body = _body(stmt) if stmt.type == "if_statement" else []
    expr = _expression(body[0]) if len(body) == 1 else None
    left = expr.child_by_field_name("left") if expr is not None and \
        expr.type == "assignment_expression" else None
    index = left.child_by_field_name("indices") if left is not None and \
        left.type == "subscript_expression" else None
    right = expr.child_by_field_name("right") if expr is not None else None
    slot = text(left.child_by_field_name("argument")) if index is not None else ""  # type: ignore[union-attr]
    d = plan.facts.defs.get(slot)
    if not names.is_zero(stmt.child_by_field_name("condition"), "lane") or d is None or \
            not d.is_shared or index is None or not index.named_children or \
            names.kind(index.named_children[0]) != "warp" or right is None or \
            text(strip(right)) != value or \
            text(expr.child_by_field_name("operator")) != "=":  # type: ignore[union-attr]
        raise _No(f"`{text(stmt)[:50]}` is not lane 0's `slot[warp] = {value};`", stmt)
    return slot


def _identity(node: Node, head: Head) -> bool:
    """Zero for a sum; any constant for a max / min (every config adds the same)."""
    node = strip(node)
    if head.op.kind == "sum":
        return node.type == "number_literal" and float(text(node).rstrip("fFuUlL")) == 0.0
    return all(n.type == "number_literal" or (n.type == "identifier" and text(n).isupper())
               for n in walk(node) if n.named_child_count == 0)


def _warp0(plan: Plan, body: list[Node], slot: str, head: Head, names: _Names,
           warps: int) -> tuple[str, bool]:
    """``v = lane < W ? slot[lane] : identity;``, the warp loop, lane 0's output."""
    if len(body) < 3:
        raise _No("warp 0 does not read the slots, run the warp loop and store",
                  body[0] if body else head.loop)
    first = body[0]
    if first.type == "declaration":
        value, _d, read = declared_name(first)
    else:
        expr = _expression(first)
        ok = expr is not None and expr.type == "assignment_expression" and \
            text(expr.child_by_field_name("operator")) == "="
        value = text(expr.child_by_field_name("left")) if ok else ""  # type: ignore[union-attr]
        read = expr.child_by_field_name("right") if ok else None  # type: ignore[union-attr]
    read = strip(read) if read is not None else None
    cond = read.child_by_field_name("condition") if read is not None and \
        read.type == "conditional_expression" else None
    parts = binary(cond) if cond is not None else None
    taken = read.child_by_field_name("consequence") if cond is not None else None  # type: ignore[union-attr]
    other = read.child_by_field_name("alternative") if cond is not None else None  # type: ignore[union-attr]
    taken = strip(taken) if taken is not None else None
    index = taken.child_by_field_name("indices") if taken is not None and \
        taken.type == "subscript_expression" else None
    array = taken.child_by_field_name("argument") if index is not None else None  # type: ignore[union-attr]
    if parts is None or parts[1] != "<" or names.kind(parts[0]) != "lane" or \
            _value(parts[2], 32 * warps) != warps or index is None or array is None or \
            text(array) != slot or not index.named_children or \
            names.kind(index.named_children[0]) != "lane" or other is None or \
            not _identity(other, head):
        raise _No(f"`{text(first)[:60]}` is not `v = lane < {warps} ? {slot}[lane] : "
                  "identity` (every warp's slot, the block's warps)", first)
    if len(body) != 2 + _warp_steps(body, 1, value, head):
        raise _No("warp 0 does more than read the slots, run the warp loop and store",
                  body[-1])
    return _lane0_out(plan, body[-1], value, head, names, atomic_only=False)


def _thread0(plan: Plan, body: list[Node], slot: str, head: Head,
             warps: int) -> tuple[str, bool]:
    """``t = identity`` (or ``slot[0]``), ``for (w = 0 | 1; w < W; ++w) t = t OP slot[w]``,
    the output."""
    if len(body) != 3 or body[0].type != "declaration":
        raise _No("thread 0 does not fold the slots into a local and store it",
                  body[0] if body else head.loop)
    total, _d, start = declared_name(body[0])
    first = None
    if start is not None and _identity(start, head):
        first = 0
    elif start is not None and strip(start).type == "subscript_expression" and \
            text(strip(start).child_by_field_name("argument")) == slot:
        idx = strip(start).child_by_field_name("indices")
        first = 1 if idx is not None and idx.named_children and \
            _value(idx.named_children[0]) == 0 else None
    loop = body[1]
    init = loop.child_by_field_name("initializer") if loop.type == "for_statement" else None
    cond = loop.child_by_field_name("condition") if init is not None else None
    update = loop.child_by_field_name("update") if init is not None else None
    w, _d2, w0 = declared_name(init) if init is not None and init.type == "declaration" \
        else ("", None, None)
    c = binary(cond) if cond is not None else None
    inner = loop.child_by_field_name("body") if init is not None else None
    stmts = [] if inner is None else [x for x in (inner.named_children if inner.type ==
                                                  "compound_statement" else [inner])
                                      if x.type not in ("comment", "preproc_call")]
    operand = _combined(_expression(stmts[0]), total, head) if len(stmts) == 1 else None
    idx = operand.child_by_field_name("indices") if operand is not None and \
        operand.type == "subscript_expression" else None
    steps = update is not None and text(update) in (f"++{w}", f"{w}++", f"{w} += 1")
    array = operand.child_by_field_name("argument") if operand is not None else None
    if first is None or c is None or c[1] != "<" or text(strip(c[0])) != w or \
            _value(c[2], 32 * warps) != warps or _value(w0) != first or not steps or \
            idx is None or \
            array is None or text(array) != slot or not idx.named_children or \
            text(strip(idx.named_children[0])) != w:
        raise _No(f"thread 0's fold does not add each of the {warps} slots of `{slot}` once "
                  f"into `{total}`", loop)
    return _output(plan, body[2], total, head)
