"""Two more spellings of a counted ``for`` loop read as the ``for`` they are, before the
analysis (issue 28: first contact, segment_sums of held-back set 10).

* A ``for`` whose initializer is empty and whose variable is declared before it: ``const
  float* p = values + offsets[seg] + lane; const float* end = ...; for (; p < end; p += 32)
  s += *p;`` is the lane loop ``for (const float* p = values + offsets[seg] + lane; p < end;
  p += 32)`` (a pointer walk as well as an index walk).
* A counted ``do``/``while`` whose first test holds: ``int step = 16; do { ...; step /= 2; }
  while (step > 0);`` runs its body for 16, 8, 4, 2, 1, as ``for (int step = 16; step > 0;
  step /= 2) { ... }`` does (an offset loop of warp shuffles). Where the first test is not
  known (``int t0 = 0; do { ...; t0 += TILE; } while (t0 < k);``, a bound that is a kernel
  argument), the ``for`` keeps the first pass in its test: ``for (int t0 = 0; t0 == 0 || (t0
  < k); t0 += TILE)``, the loop over K tiles of held-back set 15's gemm_atb_tiled.

The families read a loop through a ``for``'s initializer, condition and update, so a kernel
lifted or was refused by the spelling of its loop alone. Rewritten only where the two are
the same program: the variable is declared alone, with a value, in the same block before the
loop, and the declaration may move to it (:func:`.loop_forms._movable`, as a counted
``while``'s: the statements between neither mention it nor assign a name its value reads,
and where there are some they are declarations that call nothing and assign nothing, so a
read of memory in the value may move past them, or the value reads no memory); nothing
after the loop reads the value it leaves (the ``for`` scopes it to the loop; a later loop
restarting the variable reads its own: :func:`.loop_forms_reuse.dead_after`). The ``for``'s condition
compares the variable with a bound, and its update steps the variable. A ``do`` loop
further needs: its body a block whose last statement only updates the variable (an
assignment to it, ``v /= 2`` or ``v >>= 1`` as well as a step) and no ``continue`` of its
own (in the ``for`` it would run the update, in the ``do`` it runs the test without it); a
condition comparing the variable with a bound that reads nothing the body assigns; and the
value and the bound constant integers for which the first test holds (the ``do`` runs its
body once before testing, the ``for`` tests first), or else a constant value and a last
statement that moves the variable by a nonzero constant (``v += 16``, ``++v``, ``v = v -
S``), which nothing else in the body assigns, and a test comparing a count of it (``t``, ``t *
T``: the variable and constants) with a bound as above: the variable holds its start on the
first pass only, so ``v == start ||`` before the test runs that pass whatever the bound (a
test of a value the loop computes, ``err > tol && k <= 40``, stays a ``do``). Moved text leaves blanks on their own lines, so
every line keeps its number.
"""

from __future__ import annotations

import operator

from tree_sitter import Node

from workbench.core.cuda_source import CudaSourceError, parse_cuda
from workbench.templater.analysis import _CONSTANTS, int_expr_value, strip, text, walk
from workbench.templater.analysis import integer_macros as reading_constants
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import (
    _WRITES,
    Edit,
    _bounded,
    _counted,
    _loop_var,
    _movable,
    _reads,
    declared_value,
    own_continue,
    rewrite_loops,
    written_names,
)
from workbench.templater.loop_forms_reuse import dead_after
from workbench.templater.macros import integer_macros

_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "!=": operator.ne}


def open_loops(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each open ``for`` and counted ``do`` loop of ``entry`` written as
    its ``for`` loop (unchanged when there is none or the kernel cannot be found). A start
    or bound spelled through the file's integer macros (``int fy = -KR; do {..} while (fy
    <= KR)``) is read as the value the macro stands for, as the analysis reads it."""
    try:
        defined = integer_macros(parse_cuda(current.text, current.file))
    except CudaSourceError:
        return current
    with reading_constants({m.name: m.value for m in defined.values()}):
        return rewrite_loops(current, entry, lambda data, loop: _open_for(data, loop)
                             if loop.type == "for_statement" else _counted_do(data, loop)
                             if loop.type == "do_statement" else None)


def _place(loop: Node) -> tuple[list[Node], int] | None:
    """(the statements of ``loop``'s block, its index there), or None outside a block."""
    block = loop.parent
    if block is None or block.type != "compound_statement":
        return None
    siblings = [c for c in block.named_children if c.type != "comment"]
    return siblings, siblings.index(loop)


def _updates(node: Node | None, var: str) -> bool:
    """``node`` assigns or updates ``var`` and nothing else."""
    if node is None:
        return False
    e = strip(node)
    target = e.child_by_field_name("left") if e.type == "assignment_expression" else \
        e.child_by_field_name("argument") if e.type == "update_expression" else None
    return target is not None and text(strip(target)) == var and \
        not any(n.type in _WRITES for n in walk(e) if n != e)


def _open_for(data: bytes, loop: Node) -> list[Edit] | None:
    """The edits declaring an open ``for``'s variable in its initializer, or None."""
    cond, update = loop.child_by_field_name("condition"), loop.child_by_field_name("update")
    place = _place(loop)
    if loop.child_by_field_name("initializer") is not None or cond is None or place is None:
        return None
    siblings, at = place
    names = [v for v in _loop_var(cond) if _updates(update, v)]
    decl = _movable(siblings, at, names[0]) if len(names) == 1 else None
    if decl is None or not dead_after(data, loop, names[0], _counted):
        return None
    semi = next(c for c in loop.children if c.type == ";")
    return [(decl.start_byte, decl.end_byte, ""),
            (semi.start_byte, semi.end_byte, data[decl.start_byte:decl.end_byte].decode())]


def _counted_do(data: bytes, loop: Node) -> list[Edit] | None:
    """The edits writing a counted ``do`` loop as its ``for`` loop, or None."""
    cond, body = loop.child_by_field_name("condition"), loop.child_by_field_name("body")
    place = _place(loop)
    if cond is None or body is None or body.type != "compound_statement" or place is None:
        return None
    siblings, at = place
    inner = strip(cond)
    stmts = [c for c in body.named_children if c.type != "comment"]
    constants = _CONSTANTS.get() or {}
    last = stmts[-1] if stmts else None  # the name its last statement updates: t of t < k
    read = sorted({text(n) for n in walk(inner) if n.type == "identifier"})
    names = [v for v in read if v not in constants and last is not None and
             last.type == "expression_statement" and last.named_child_count == 1 and
             _updates(last.named_children[0], v)]  # ``fy <= KR``: fy; ``t * T < K``: t
    decl = _movable(siblings, at, names[0]) if len(names) == 1 else None
    if decl is None or last is None:
        return None
    var, value = declared_value(decl) or ("", None)
    if own_continue(body) or any(_reads(s, var) for s in siblings[at + 1:]):
        return None
    test = text(inner)
    if not (_bounded(inner, var, body) and _first_test_holds(inner, var, value)):
        start = signed_value(value)
        if start is None or not _strict_step(last.named_children[0], var) or \
                any(var in written_names(s) for s in stmts[:-1]) or \
                not _counts(inner, var, body, set(constants)):
            return None
        test = f"{var} == {start} || ({test})"  # the first pass, whatever the bound
    head = (f"for ({data[decl.start_byte:decl.end_byte].decode()} {test}; "
            f"{text(strip(last.named_children[0]))}) ")
    return [(decl.start_byte, decl.end_byte, ""),
            (loop.start_byte, body.start_byte, head),
            (last.start_byte, last.end_byte, ""),
            (body.end_byte, loop.end_byte, "")]


def _counts(cond: Node, var: str, body: Node, constants: set[str]) -> bool:
    """``cond`` compares a count of ``var`` (``t``, ``t * T``: ``var`` and constants) with a
    bound that does not read it, calls and writes nothing and reads nothing ``body`` assigns
    (a test of a value the loop computes, ``err > tol && k < 40``, is not a count)."""
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if cond.type != "binary_expression" or left is None or right is None or \
            text(cond.child_by_field_name("operator")) not in _COMPARE:
        return False
    count, bound = (left, right) if _reads(left, var) else (right, left)
    names = {text(n) for n in walk(count) if n.type == "identifier"}
    return names - constants == {var} and not _reads(bound, var) and \
        not any(n.type in (*_WRITES, "subscript_expression", "pointer_expression")
                for n in walk(cond)) and \
        not {text(n) for n in walk(bound) if n.type == "identifier"} & written_names(body)


def _strict_step(node: Node, var: str) -> bool:
    """``node`` moves ``var`` by a nonzero constant (``v += 16``, ``v -= S``, ``++v``, ``v =
    v + 4``): after its first pass the variable never holds its start again."""
    e = strip(node)
    if e.type == "update_expression":
        return True  # _updates read its argument as var
    op = text(e.child_by_field_name("operator"))
    right = e.child_by_field_name("right")
    if op == "=" and right is not None and strip(right).type == "binary_expression":
        r = strip(right)
        op = text(r.child_by_field_name("operator")) + "="
        left = r.child_by_field_name("left")
        if left is None or text(strip(left)) != var:
            return False
        right = r.child_by_field_name("right")
    return op in ("+=", "-=") and right is not None and int_expr_value(right) not in (None, 0)


def _first_test_holds(cond: Node, var: str, value: Node | None) -> bool:
    """``cond`` (``var OP bound`` either way round) holds for the constant ``value``."""
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    compare = _COMPARE.get(text(cond.child_by_field_name("operator")))
    if left is None or right is None or compare is None:
        return False
    names = {var: v} if (v := signed_value(value)) is not None else {}
    a, b = int_expr_value(left, names), int_expr_value(right, names)
    return a is not None and b is not None and bool(compare(a, b))


def signed_value(node: Node | None) -> int | None:
    """The constant integer ``node`` spells, a negated one (``-KR``, ``-(R + 1)``) too."""
    node = None if node is None else strip(node)
    if node is not None and node.type == "unary_expression" and \
            text(node.child_by_field_name("operator")) == "-":
        value = int_expr_value(node.child_by_field_name("argument"))
        return None if value is None else -value
    return int_expr_value(node)
