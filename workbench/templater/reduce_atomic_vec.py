"""VEC for the counting loop of :mod:`.reduce_atomic`: float2 / float4 loads of the run a
block counts.

The loop ``for (int i = threadIdx.x; i < L; i += S) BODY`` (S the block size; the start
``threadIdx.x`` or a local copy of it the kernel never assigns, ``int i = tid``, or a first
element B plus it, ``size_t i = begin + threadIdx.x``: the run then starts at ``P + B``
and holds ``L - B`` elements, B's terms aligned as OFF's below; any integer index type)
whose BODY reads ``i`` only as ``P[i]`` or ``P[E + i]`` (one offset E in every read, naming nothing
BODY assigns: the run starts at ``P + E``, each of E's terms aligned as OFF's below), P a
``float`` kernel pointer the kernel never writes or a local ``const float* P = X + OFF`` of
one, becomes, at ``VEC > 1``: each thread loads whole
vectors ``q = threadIdx.x, + S, ...`` below ``L / VEC`` and runs BODY on each of their
``VEC`` values in turn, then the ``L % VEC`` elements after the last whole vector one per
thread as written. Every element is still counted exactly once, by some thread of the block.

Legal only where the analysis shows (each refusal names the line):

* the order changes which thread adds which element, so every name BODY assigns that lives
  outside the loop must be an integer accumulated by ``+=``, ``++`` or ``v = v + E`` (an
  integer sum is exact in any order), or a floating sum the caller names as reassociable
  (its total goes to a floating shared atomic, whose order is unspecified as written:
  :mod:`.reduce_atomic`), accumulated by ``+=`` or ``v = v + E``, and BODY holds no
  ``break``, ``continue``, ``return``, barrier or call other than known pure math;
* alignment: each additive term of ``P``'s offset from the kernel pointer is a product with
  a factor that is a literal or a file-scope constant (:mod:`.reduce_consts`) and a multiple
  of 4 floats, a local the kernel never assigns again read through its value, so every
  vector is 16-byte aligned (kernel pointers come from cudaMalloc, 256-byte aligned);
* ``L``, the step and B are not assigned in BODY, and B reads no thread index (nor a
  local set from one).

The rewrite's own locals (``wb_x``, ``wb_q`` ...) take another name where the kernel has
one (an inlined helper's parameter ``wb_x``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    factors,
    line,
    strip,
    terms,
    text,
    walk,
    write_target,
)
from workbench.templater.inline_bind import fresh
from workbench.templater.plan import Plan
from workbench.templater.reduce_consts import constant
from workbench.templater.vector import Illegal

NAME = "VEC"
#: The rewrite's own locals (each renamed where the kernel already has the name).
_SCRATCH_NAMES = ("wb_len", "wb_whole", "wb_q", "wb_v", "wb_x", "wb_u")
_LEAVES = ("break_statement", "continue_statement", "return_statement", "goto_statement")


@dataclass(frozen=True)
class CountLoop:
    """``for (T i = B + threadIdx.x; i < L; i += S) BODY``: B the run's first element (no
    terms: ``threadIdx.x`` alone), T an integer type."""

    index: str
    index_type: str
    start: tuple[Node, ...]  # B's additive terms
    bound: Node
    step: Node
    body: Node


def _loop_parts(plan: Plan, loop: Node) -> CountLoop:
    """The :class:`CountLoop` ``loop`` is (``threadIdx.x`` or a local never assigned that
    holds it: ``int i = tid``, after a first element ``begin +`` that names no thread)."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update, body = loop.child_by_field_name("update"), loop.child_by_field_name("body")
    if loop.type != "for_statement" or init is None or cond is None or update is None or \
            body is None or init.type != "declaration":
        raise Illegal("the counting loop is not `for (int i = threadIdx.x; i < L; i += S)`",
                      loop)
    decl = init.child_by_field_name("declarator")
    value = decl.child_by_field_name("value") if decl is not None else None
    index = text(decl.child_by_field_name("declarator")) if decl is not None else ""
    kind = " ".join(text(init.child_by_field_name("type")).split())
    parts_of = terms(value) if value is not None else []
    threads = [t for sign, t in parts_of if sign > 0 and plan.facts.is_thread(t, "x")]
    start = tuple(t for sign, t in parts_of if t not in threads)
    if len(threads) != 1 or any(sign < 0 for sign, _t in parts_of) or \
            any(plan.facts.mentions_thread(t, "x") or _named_thread(plan, t) for t in start) \
            or kind not in _INDEX_TYPES:
        raise Illegal("the counting loop's index does not start at threadIdx.x, or a first "
                      "element plus threadIdx.x (an integer)", loop)
    parts = binary(cond)
    if parts is None or parts[1] != "<" or text(strip(parts[0])) != index or \
            text(update.child_by_field_name("left")) != index:
        raise Illegal(f"the counting loop is not `{index} < L; {index} += S`", loop)
    step = update.child_by_field_name("right")
    assert step is not None
    return CountLoop(index, kind, start, parts[2], step, body)


#: The index types a counting loop may declare (the run's length in the same type).
_INDEX_TYPES = frozenset({"int", "unsigned", "unsigned int", "long", "long long",
                          "unsigned long", "unsigned long long", "size_t", "std::size_t",
                          "ptrdiff_t", "int64_t", "uint64_t", "uint32_t", "int32_t"})


def _named_thread(plan: Plan, node: Node, depth: int = 0) -> bool:
    """Whether ``node`` reads a local set from the thread's place (or assigned again)."""
    for n in walk(node):
        d = plan.facts.defs.get(text(n)) if n.type == "identifier" else None
        if d is not None and (d.assigned or d.value is None or depth > 4 or
                              plan.facts.mentions_thread(d.value, "x") or
                              _named_thread(plan, d.value, depth + 1)):
            return True
    return False


def _array(plan: Plan, body: Node, index: str) -> tuple[str, list[Node], list[Node]]:
    """(the one pointer BODY reads at ``[index]``, the terms ``E`` of its reads written
    ``P[E + index]``, those reads); raises Illegal when ``index`` is used otherwise."""
    arrays: set[str] = set()
    offsets: dict[str, list[Node]] = {}
    reads: list[Node] = []
    for n in walk(body):
        if n.type != "identifier" or text(n) != index:
            continue
        up = n.parent
        while up is not None and up.type in ("binary_expression", "parenthesized_expression"):
            up = up.parent  # [E + index]: _shift reads the sum
        if up is not None and up.type == "subscript_argument_list":
            up = up.parent
        idx = up.child_by_field_name("indices") if up is not None else None
        shift = _shift(idx, index) if idx is not None else None
        if up is None or up.type != "subscript_expression" or shift is None:
            raise Illegal(f"`{index}` is used other than as the index of one array read", n)
        arrays.add(text(up.child_by_field_name("argument")))
        offsets[" ".join(text(t) for t in shift)] = shift
        reads.append(up)
    if len(arrays) != 1 or len(offsets) != 1:
        raise Illegal(f"the loop reads {len(arrays)} arrays at `[{index}]` (one is needed, at "
                      "one offset)", body)
    return arrays.pop(), next(iter(offsets.values())), reads


def _shift(indices: Node, index: str) -> list[Node] | None:
    """The terms ``E`` of a subscript ``[E + index]`` (``[index]``: none), each added and
    not naming ``index``; None for any other subscript."""
    inner = [c for c in indices.named_children if c.type != "comment"]
    if len(inner) != 1:
        return None
    parts = terms(inner[0])
    mine = [t for sign, t in parts if t.type == "identifier" and text(t) == index and sign > 0]
    rest = [t for sign, t in parts if t not in mine]
    if len(mine) != 1 or any(sign < 0 for sign, t in parts if t in rest) or any(
            m.type == "identifier" and text(m) == index for t in rest for m in walk(t)):
        return None
    return rest


def _root_and_offset(plan: Plan, array: str, loop: Node) -> tuple[str, list[Node]]:
    if plan.pointer(array):
        return array, []
    d = plan.facts.defs.get(array)
    if d is None or d.assigned or not d.is_pointer or d.value is None:
        raise Illegal(f"`{array}` is not a kernel pointer or a fixed offset of one", loop)
    parts = [t for _s, t in terms(d.value)]
    roots = [t for t in parts if t.type == "identifier" and plan.pointer(text(t))]
    if len(roots) != 1:
        raise Illegal(f"`{array}` is not a fixed offset of one kernel pointer", d.decl)
    return text(roots[0]), [t for t in parts if t != roots[0]]


def _aligned(plan: Plan, offsets: list[Node], array: str, loop: Node) -> None:
    for piece in [t for o in offsets for t in plan.facts.resolve(o)]:
        known = [constant(plan, f) for f in factors(piece)]
        if not any(v is not None and v > 0 and v % 4 == 0 for v in known):
            raise Illegal(f"offset `{text(piece)}` of `{array}` is not shown to be a multiple "
                          "of 4 floats (16-byte vectors)", loop)


def _written(plan: Plan, names: set[str]) -> bool:
    for n in walk(plan.body):
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            for t in walk(target) if target is not None else []:
                if t.type == "identifier" and text(t) in names and target is not None and \
                        target.type != "identifier":
                    return True
    return False


def _accumulates(plan: Plan, body: Node, loop: Node, integers: set[str],
                 floating: frozenset[str] = frozenset()) -> None:
    """Every outside name BODY assigns is an integer summed into (or a floating sum named
    in ``floating``); nothing leaves BODY."""
    inside = {text(d.child_by_field_name("declarator")) for d in walk(body)
              if d.type == "init_declarator"}
    for n in walk(body):
        if n.type in _LEAVES:
            raise Illegal(f"`{text(n)}` in the counting loop", n)
        if n.type == "call_expression":
            raise Illegal(f"`{text(n)[:40]}` is called in the counting loop", n)
        if n.type == "update_expression":
            arg = text(n.child_by_field_name("argument"))
            if arg not in inside and (arg not in integers or "--" in text(n)):
                raise Illegal(f"`{text(n)}`: only integer counts may be summed outside the "
                              "loop (another order of the elements)", n)
        if n.type == "assignment_expression":
            left, op = text(n.child_by_field_name("left")), \
                text(n.child_by_field_name("operator"))
            if left in inside:
                continue
            right = n.child_by_field_name("right")
            summed = op == "+=" or (op == "=" and right is not None and any(
                text(t) == left for _s, t in terms(right) if _s > 0))
            if (left not in integers and left not in floating) or not summed:
                raise Illegal(f"`{text(n)[:50]}`: only integer counts may be summed outside "
                              "the loop (another order of the elements), or floating sums "
                              "whose total goes whole to a shared atomic", n)


def _integer_locals(plan: Plan) -> set[str]:
    ints = {"int", "unsigned", "unsigned int", "long long", "unsigned long long"}
    return {d.name for d in plan.facts.defs.values() if not d.is_pointer and
            " ".join(text(d.decl.child_by_field_name("type")).split()) in ints}


def vec_count_loop(plan: Plan, loop: Node, pragma: str,
                   floating: frozenset[str] = frozenset()) -> bool:
    """Lift VEC on ``loop`` where legal (the module doc); ``pragma`` goes before the loops
    it keeps (the UNROLL pragma, or ""); ``floating``: the floating sums whose order may
    change. True when applied; a refusal is noted."""
    if NAME in plan.params:
        return False
    try:
        parts = _loop_parts(plan, loop)
        index, bound, step, body = parts.index, parts.bound, parts.step, parts.body
        array, shift, reads = _array(plan, body, index)
        root, offsets = _root_and_offset(plan, array, loop)
        offsets += shift  # P[E + i]: the run starts at P + E
        offsets += parts.start  # i from B + threadIdx.x: at P + B
        if plan.kernel.param(root).base_type != "float":
            raise Illegal(f"`{root}` is not a float array", loop)
        if _written(plan, {root, array}):
            raise Illegal(f"`{root}` is written by the kernel", loop)
        _aligned(plan, offsets, array, loop)
        _accumulates(plan, body, loop, _integer_locals(plan), floating)
        changed = {text(t) for n in walk(body) if (t := write_target(n)) is not None}
        if any(n.type == "identifier" and text(n) in changed
               for n in [*walk(bound), *walk(step),
                         *(m for t in (*shift, *parts.start) for m in walk(t))]):
            raise Illegal("the loop's bound, step, first element or offset changes in its "
                          "body", loop)
    except Illegal as exc:
        plan.note(NAME, False, f"vector loads of the count: {exc.reason}", exc.node or loop)
        return False
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4], "default": 1,
                          "description": "floats per load of the counting loop (1: as "
                                         "written; 2 float2, 4 float4)"},
                   f"{line(loop)}: {text(reads[0])}")
    indent = " " * loop.start_point[1]
    # the reads as the body renders them: each becomes the vector's lane
    spelled = sorted({plan.rw.text(r) for r in reads}, key=len, reverse=True)
    pattern = re.compile("|".join(rf"(?<![\w.]){re.escape(r)}" for r in spelled))
    run = f"({array} + {' + '.join(plan.rw.text(t) for t in shift)})" if shift else array
    kind = parts.index_type
    taken = {text(n) for n in walk(plan.body) if n.type == "identifier"}
    scratch = {name: fresh(name, taken) for name in _SCRATCH_NAMES}

    def make(rw: object) -> str:
        as_written = plan.rw.render(loop.start_byte, loop.end_byte)
        # (rw.text: a node another pass replaced whole, the block size in the step, renders
        # as its replacement)
        body_text = plan.rw.text(body)
        lanes = pattern.sub(f"{scratch['wb_x']}[{scratch['wb_u']}]", body_text)
        s, n = plan.rw.text(step), plan.rw.text(bound)
        # from a first element B: the run is P + B (its reads P[B + ..]), of L - B elements
        # (none where L <= B: the loop as written runs no element then)
        first = " + ".join(f"({kind})({plan.rw.text(t)})" for t in parts.start)
        at = f"({run} + {first})" if first else run
        length = f"({n}) > ({first}) ? ({n}) - ({first}) : 0" if first else n
        # the rewrite's own names, renamed where the kernel has one (an inlined helper's wb_x)
        ln, wh, q, v, x, u = (scratch[name] for name in _SCRATCH_NAMES)
        return (f"\n#if {NAME} > 1\n{indent}{{  // whole vectors, then the tail one by one\n"
                f"{indent}const {kind} {ln} = {length};\n"
                f"{indent}const {kind} {wh} = {ln} / {NAME};\n{pragma}"
                f"{indent}for ({kind} {q} = threadIdx.x; {q} < {wh}; {q} += {s}) {{\n"
                f"#if {NAME} == 4\n"
                f"{indent}  const float4 {v} = reinterpret_cast<const float4*>({at})[{q}];\n"
                f"{indent}  const float {x}[4] = {{{v}.x, {v}.y, {v}.z, {v}.w}};\n"
                "#else\n"
                f"{indent}  const float2 {v} = reinterpret_cast<const float2*>({at})[{q}];\n"
                f"{indent}  const float {x}[2] = {{{v}.x, {v}.y}};\n"
                "#endif\n"
                "#pragma unroll\n"
                f"{indent}  for (int {u} = 0; {u} < {NAME}; ++{u}) {lanes}\n"
                f"{indent}}}\n"
                f"{indent}for ({kind} {index} = {first + ' + ' if first else ''}{wh} * "
                f"{NAME} + threadIdx.x; {index} < {n if first else ln}; "
                f"{index} += {s}) {body_text}\n"
                f"{indent}}}\n#else\n{pragma}{indent}{as_written}\n#endif\n")

    plan.rw.replace_span(loop.start_byte, loop.end_byte, make=make)
    summed = sorted(floating & {text(n.child_by_field_name("left")) for n in walk(body)
                                if n.type == "assignment_expression"})
    why = ("an integer count is exact in any order" if not summed else
           f"the floating sums {', '.join(summed)} go whole to shared atomics, whose order is "
           "unspecified as written: another order within rounding")
    plan.note(NAME, True, f"the counting loop reads `{text(reads[0])}` as float2 / float4 "
              f"vectors ({why}; the offset a multiple of 4 floats)", loop)
    return True
