"""CHUNKS for a block's sum over a fixed chunk: several consecutive chunks a block.

The shape (moments_partials of benchmarks/corpus_compute_unseen6, in any spelling): the
kernel of :mod:`.reduce_atomic` (each block's total gathered by shared atomics), launched on
``ceil_div(X, K)`` blocks, block ``b`` summing the elements ``b * K`` .. ``min((b + 1) * K,
X)`` and storing its totals at ``[blockIdx.x]`` of outputs compared by their sum. The number
of blocks is the family's first knob (known practice for grid reductions: fewer, longer
blocks spend less on each block's start, barriers and final atomics; more blocks fill the
GPU): CHUNKS (1, 2, 4, 8) gives each block ``K * CHUNKS`` elements and launches
``ceil_div(X, K * CHUNKS)`` blocks.

Legal only where the analysis shows, each refusal naming the line:

* the grid is one rule ``ceil_div(X, K)`` with a literal K, and K is not the block size;
* every use of K in the kernel body (the literal, or a macro / file-scope constant holding
  it) is the block's range: a factor of a product whose other factors are ``blockIdx.x``
  and numbers (``blockIdx.x * K``, ``(blockIdx.x + 1) * K``, casts allowed), or an
  argument, or a term of an argument, of ``min`` or of ``a < b ? a : b`` written out (the
  range's clamp). So the kernel reads
  a chunk the same way at any length (its loops are bounded by the clamp), and scaling every
  use scales the chunk;
* every store to a kernel pointer is at ``[blockIdx.x]``, each of those outputs is compared
  by its total (``compare = "sum"`` or a verify()), and nothing returns early but a
  ``return;`` thread 0 never takes (``if (threadIdx.x != 0) return;``): block ``b``
  stores its totals in slot ``b``, and thread 0 of each block writes 0 (the sum's identity)
  to the slots ``gridDim.x`` .. of the grid as written that no block writes now, so every
  slot is written and the slots still add up to the totals.

CHUNKS 1 is the kernel as written.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    factors,
    int_value,
    line,
    strip,
    terms,
    text,
    walk,
    write_target,
)
from workbench.templater.plan import Plan
from workbench.templater.rules import literal, rule_in_c, scale_divisor
from workbench.templater.vector import Illegal

NAME = "CHUNKS"
_MIN_CALLS = frozenset({"min", "umin", "std::min", "llmin", "ullmin"})


def _chunk(rule: str) -> int | None:
    """K of a grid rule ``ceil_div(X, K)`` with a literal K, else None."""
    try:
        node = ast.parse(rule, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "ceil_div" and len(node.args) == 2 and \
            isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, int):
        return node.args[1].value
    return None


def _block_start(use: Node) -> bool:
    """``use`` is a factor of a product whose other factors are blockIdx.x and numbers."""
    top = use
    while top.parent is not None and (top.parent.type == "parenthesized_expression" or (
            top.parent.type == "binary_expression" and
            text(top.parent.child_by_field_name("operator")) == "*")):
        top = top.parent
    if top is use:
        return False
    others = [f for f in factors(top) if (f.start_byte, f.end_byte) !=
              (strip(use).start_byte, strip(use).end_byte)]
    if not others:
        return False
    for f in others:
        if not any(builtin(n, "blockIdx") == "x" for n in walk(f)):
            return False
        for n in walk(f):
            if not n.is_named or n.named_child_count > 0 or n.type == "comment":
                continue
            owner = n.parent
            if n.type not in ("number_literal", "primitive_type", "type_identifier",
                              "sized_type_specifier") and not (
                    owner is not None and builtin(owner, "blockIdx") == "x"):
                return False
    return True


def _min_clamp(use: Node) -> bool:
    """``use`` is an argument of ``min(...)``, or a + term of one."""
    arg = use
    while arg.parent is not None and arg.parent.type in ("parenthesized_expression",
                                                         "cast_expression",
                                                         "qualified_identifier"):
        arg = arg.parent  # (K), (long)K, ns::K
    up = arg.parent
    if up is not None and up.type == "binary_expression" and \
            text(up.child_by_field_name("operator")) == "+":
        spans = {(strip(n).start_byte, strip(n).end_byte) for n in (use, arg)}
        if not any(sign > 0 and (t.start_byte, t.end_byte) in spans for sign, t in terms(up)):
            return False
        arg = up
        while arg.parent is not None and arg.parent.type == "binary_expression" and \
                text(arg.parent.child_by_field_name("operator")) == "+":
            arg = arg.parent
        up = arg.parent
    while up is not None and up.type in ("parenthesized_expression", "cast_expression"):
        arg, up = up, up.parent
    for choice in (up, up.parent if up is not None else None):
        if choice is not None and _written_min(choice) and \
                any(_same(arg, side) for side in _sides(choice)):
            return True  # a value of `a < b ? a : b`, or a side of its test
    if up is None or up.type != "argument_list" or up.parent is None:
        return False
    return text(up.parent.child_by_field_name("function")) in _MIN_CALLS


def _same(one: Node, other: Node) -> bool:
    return (strip(one).start_byte, strip(one).end_byte) == \
        (strip(other).start_byte, strip(other).end_byte)


def _sides(choice: Node) -> list[Node]:
    """The test's two operands and the two values of the conditional ``choice``."""
    test = choice.child_by_field_name("condition")
    parts = binary(test) if test is not None else None
    values = [choice.child_by_field_name("consequence"),
              choice.child_by_field_name("alternative")]
    return [] if parts is None or None in values else \
        [parts[0], parts[2], *(v for v in values if v is not None)]


def _written_min(choice: Node) -> bool:
    """``choice`` is the smaller of two values written out: ``a < b ? a : b`` (``<=``), or
    ``a > b ? b : a`` (``>=``), the same texts on both sides."""
    if choice.type != "conditional_expression":
        return False
    test = choice.child_by_field_name("condition")
    parts = binary(test) if test is not None else None
    sides = _sides(choice)
    if parts is None or len(sides) != 4:
        return False
    a, b, then, other = ("".join(text(strip(n)).split()) for n in sides)
    if parts[1] in ("<", "<="):
        return (then, other) == (a, b)
    return parts[1] in (">", ">=") and (then, other) == (b, a)


def _uses(plan: Plan, size: int) -> list[Node]:
    """Every literal or named constant of value ``size`` in the kernel body."""
    return [n for n in walk(plan.body) if n.type in ("number_literal", "identifier") and
            int_value(n) == size and not (n.type == "identifier" and
                                          n.parent is not None and
                                          n.parent.type == "field_expression")]


def _stored(plan: Plan) -> set[str]:
    """The kernel pointers the kernel stores to; Illegal unless each store is at
    ``[blockIdx.x]`` and nothing returns early."""
    out: set[str] = set()
    for n in walk(plan.body):
        if n.type in ("return_statement", "goto_statement") and not _past_thread0(plan, n):
            raise Illegal(f"`{text(n)}`: a thread may leave before the slots are filled", n)
        if n.type == "call_expression" and text(n.child_by_field_name("function")).startswith(
                "atomic") and any(m.type == "identifier" and plan.pointer(text(m))
                                  for m in walk(n)):
            raise Illegal(f"`{text(n)[:40]}` updates global memory by an atomic", n)
        target = write_target(n)
        if target is None:
            continue
        if target.type == "pointer_expression":
            raise Illegal(f"`{text(n)[:40]}` stores through a pointer", n)
        if target.type != "subscript_expression":
            continue
        array = text(target.child_by_field_name("argument"))
        if not plan.pointer(array):
            continue
        index = target.child_by_field_name("indices")
        inner = index.named_children[0] if index is not None and index.named_children else None
        if inner is None or builtin(strip(inner), "blockIdx") != "x":
            raise Illegal(f"`{text(n)[:40]}` stores at another index than [blockIdx.x]", n)
        out.add(array)
    return out


def _past_thread0(plan: Plan, leave: Node) -> bool:
    """``leave`` is ``return;``, the whole of an ``if`` (no ``else``) whose test is false
    at ``threadIdx.x == 0``: ``x != 0``, ``x > 0``, ``0 != x``, ``0 < x`` or ``x``, x
    ``threadIdx.x`` or a local copy of it. The threads that write the grid's other slots
    (``threadIdx.x == 0``, at the body's end) never take it."""
    guard = leave.parent
    if leave.type != "return_statement" or leave.named_children or guard is None:
        return False
    if guard.type == "compound_statement" and len(guard.named_children) == 1:
        guard = guard.parent
    if guard is None or guard.type != "if_statement" or \
            guard.child_by_field_name("alternative") is not None:
        return False
    test = guard.child_by_field_name("condition")
    test = strip(test.named_children[0]) if test is not None and test.named_children else None
    if test is None:
        return False
    if plan.facts.is_thread(test, "x"):
        return True
    parts = binary(test)
    if parts is None:
        return False
    left, op, right = parts
    zero_right = int_value(right) == 0 and plan.facts.is_thread(left, "x")
    zero_left = int_value(left) == 0 and plan.facts.is_thread(right, "x")
    return (op in ("!=", ">") and zero_right) or (op in ("!=", "<") and zero_left)


def lift_chunks(plan: Plan, compared_by_total: Collection[str] | None) -> bool:
    """Lift CHUNKS where the module doc's shape holds; a refusal is noted with its line.
    True when applied."""
    if len(plan.grid) != 1 or NAME in plan.params:
        return False
    written = plan.grid[0]
    size = _chunk(written)
    if size is None:
        return False  # not a grid of fixed chunks: nothing to say
    try:
        if _written_block(plan) == size:
            raise Illegal(f"the chunk {size} is the block size as written: the two cannot be "
                          "told apart", plan.body)
        uses = _uses(plan, size)
        if not uses:
            raise Illegal(f"the chunk {size} of the grid `{written}` appears nowhere in the "
                          "kernel", plan.body)
        for use in uses:
            if not (_block_start(use) or _min_clamp(use)):
                raise Illegal(f"`{_context(use)}` uses the chunk {size} other than as the "
                              "block's start or the clamp of its range", use)
        outputs = _stored(plan)
        unreduced = sorted(outputs - set(compared_by_total or ()))
        if compared_by_total is None or unreduced or not outputs:
            raise Illegal(f"the outputs {', '.join(unreduced) or '(none)'} are not compared "
                          "by their total (compare = \"sum\" or a verify()): fewer blocks "
                          "move the partials", plan.body)
        names = {v: k for k, v in plan.scalars.items() if v.isidentifier()}
        slots = rule_in_c(written, names)
        if slots is None:
            raise Illegal(f"the slot count `{written}` is not arithmetic over kernel "
                          "arguments", plan.body)
    except Illegal as exc:
        plan.note(NAME, False, f"chunks a block: {exc.reason}", exc.node)
        return False
    for use in uses:
        plan.rw.replace(use, f"({text(use)} * {NAME})")
    grid = scale_divisor(written, str(size), f"{size} * {NAME}")
    assert grid is not None  # _chunk read the same divisor
    plan.grid[0] = grid
    zeros = " ".join(f"{out}[wb_b] = 0;" for out in sorted(outputs))
    close = plan.body.end_byte - 1  # the body's closing brace
    plan.rw.insert(close, (
        f"  if ({NAME} > 1 && threadIdx.x == 0)  // the written grid's slots no block "
        "stores now: the sum's identity\n"
        f"    for (int wb_b = (int)gridDim.x + (int)blockIdx.x; wb_b < {slots}; "
        f"wb_b += (int)gridDim.x) {{ {zeros} }}\n"))
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                          "description": f"consecutive {size}-element chunks a block (as "
                                         "written: 1); the slots past the grid hold 0"},
                   f"{line(uses[0])}: chunk {size}")
    plan.note(NAME, True, f"each block sums {size} * {NAME} elements (its start and clamp "
              f"scaled at {len(uses)} use(s)), grid `{grid}`; its totals in slot blockIdx.x, "
              f"the written grid's other slots 0: {', '.join(sorted(outputs))} are compared "
              "by their total", uses[0])
    return True


def _written_block(plan: Plan) -> int | None:
    """The block size as written (the lifted parameter's default, or the literal)."""
    if not plan.block:
        return None
    param = plan.params.get(plan.block[0])
    default = param.spec.get("default") if param is not None else None
    return default if isinstance(default, int) else literal(plan.block[0])


def _context(node: Node) -> str:
    parent = node.parent if node.parent is not None else node
    return " ".join(text(parent).split())[:60]
