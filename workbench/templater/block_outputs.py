"""What a block covers where the grid would not follow its size (:mod:`.block`'s lift
refuses on them).

A reduction to partials stores one element a block (``partial[blockIdx.x] = s[0];``): the
number of partials is the number of blocks, which a grid rule ``ceil_div(n, 256)`` ties to
the block size. Another block size then writes another count of partials, each a sum over
another range of the input: the array as the kernel folder sizes it (one a 256 elements) is
overrun or left short, and its values differ from the kernel as written at every shape. The
lift of that block dimension is refused where such a store exists (a store into a kernel
pointer whose index reads the block's index along the dimension, and no thread index, also
through the locals it is built from).

A block offset by the block's size (``(blockIdx.x * blockDim.x + threadIdx.x) * 4``, or the
literal ``blockIdx.x * 256``) under a grid rule that does not divide by it (``ceil_div(n,
512)`` for 128 threads of four elements each, ``n // 256``, a fixed count) is the other
case: the grid would stay while each block's share follows the block, so a smaller block
leaves elements unwritten and a larger one runs past the arrays.
Refused too, unless the kernel reads ``gridDim`` along that dimension or the offset starts
a ``for`` loop (a grid-stride loop covers its work at any grid, ``i += 264 * 256`` too).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, builtin, factors, int_value, text, walk
from workbench.templater.plan import Plan
from workbench.templater.rules import scale_divisor


def unfollowed(plan: Plan, dim: str, rule: str, size: int) -> tuple[Node, str] | None:
    """Why a block of another size than ``size`` along ``dim`` would be wrong under the
    grid's ``rule`` there (the node, and the reason to follow its quoted text), or None: a
    per-block store where the rule divides by ``size``, a block offset read from blockDim
    where it does not."""
    if scale_divisor(rule, str(size), "B") is not None:
        once = per_block_store(plan, dim)
        return None if once is None else (
            once, f"stores one element a block along {dim} and the grid's {dim} rule divides by "
                  f"{size}: the number of those elements would follow the block size")
    fixed = unfollowed_offset(plan, dim, size)
    return None if fixed is None else (
        fixed, f"offsets blocks by the block's {dim} size and the grid's {dim} rule `{rule}` "
               f"does not divide by {size}: the grid would stay while each block's share "
               "follows the block size")


def per_block_store(plan: Plan, dim: str) -> Node | None:
    """The first store into a kernel pointer at an index that reads ``blockIdx.dim`` and no
    thread index (through locals too), or None."""
    pointers = {p.name for p in plan.kernel.pointer_params}
    for n in walk(plan.body):
        target = n.child_by_field_name("left") if n.type == "assignment_expression" else None
        if target is None or target.type != "subscript_expression" or \
                text(target.child_by_field_name("argument")) not in pointers:
            continue
        read = _builtins(plan, target.child_by_field_name("indices") or target, 0)
        if f"blockIdx.{dim}" in read and not any(r.startswith("threadIdx.") for r in read):
            return n
    return None


@dataclass(frozen=True)
class BlockStore:
    """A store into kernel pointer ``array`` whose index grows with ``blockIdx.dim``
    (``partial[blockIdx.x] = s``, ``out[blockIdx.x * 2 + threadIdx.x] = v``, an atomic on
    ``&hist[blockIdx.x * 256 + b]``): ``node`` is the assignment or the atomic call."""

    node: Node
    array: str
    reads: frozenset[str]  # the built-ins its index reads (:func:`_builtins`)


def block_indexed_store(plan: Plan, dim: str) -> BlockStore | None:
    """The first store into a kernel pointer at an index that reads ``blockIdx.dim``
    (through locals that keep their first value; thread indices may be read too), or None.
    A grid-stride loop's counter is assigned again, so a store at it (``y[i] = ..``, bounded
    by the loop's test) is not one: its index stays inside the data at any grid. Such a
    store writes past what the kernel as written wrote once more blocks run than it
    launched: the elements the folder sized the array for end at its grid."""
    pointers = {p.name for p in plan.kernel.pointer_params}
    for n in walk(plan.body):
        target = n.child_by_field_name("left") if n.type == "assignment_expression" else None
        if n.type == "call_expression" and text(n.child_by_field_name("function") or n) \
                .startswith("atomic"):
            args = n.child_by_field_name("arguments")
            first = args.named_children[0] if args is not None and args.named_children \
                else None
            target = first.child_by_field_name("argument") if first is not None and \
                first.type == "pointer_expression" and text(first).startswith("&") else None
        if target is None or target.type != "subscript_expression":
            continue
        array = text(target.child_by_field_name("argument"))
        if array not in pointers:
            continue
        read = _builtins(plan, target.child_by_field_name("indices") or target, 0)
        if f"blockIdx.{dim}" in read:
            return BlockStore(n, array, frozenset(read))
    return None


def _builtins(plan: Plan, node: Node, depth: int) -> set[str]:
    """``blockIdx.d`` / ``threadIdx.d`` that ``node`` reads, following locals' first values
    (a local assigned again counts as reading the thread: its value is not followed)."""
    out: set[str] = set()
    for m in walk(node):
        for name in ("blockIdx", "threadIdx"):
            d = builtin(m, name)
            if d is not None:
                out.add(f"{name}.{d}")
        found = plan.facts.defs.get(text(m)) if m.type == "identifier" else None
        if found is None:
            continue
        if found.assigned or found.value is None or depth > 8:
            out.add("threadIdx.?")
        else:
            out |= _builtins(plan, found.value, depth + 1)
    return out


def unfollowed_offset(plan: Plan, dim: str, size: int) -> Node | None:
    """The first block offset by the block's size (``blockIdx.dim * blockDim.dim``, or
    ``blockIdx.dim * size`` as written) where ``gridDim.dim`` is never read; None otherwise.
    The caller has found that the grid's rule along ``dim`` does not divide by ``size``.
    A kernel that reads ``gridDim`` (a grid-stride walk covers its data at any grid) is
    still refused at a store one element a thread of the launch outside the walk
    (``partial[g] = s`` with ``g = blockIdx.x * blockDim.x + threadIdx.x``, a ``for`` loop
    stepping by ``gridDim``): under that fixed grid the launch's thread count, and so the
    elements written, follow the block size."""
    if any(builtin(n, "gridDim") == dim for n in walk(plan.body)):
        if not any(builtin(g, "gridDim") == dim for n in walk(plan.body)
                   if n.type == "for_statement" and (step := n.child_by_field_name("update"))
                   for g in walk(step)):
            return None  # gridDim flattens the grid into an index: no walk (a rule follows)
        store = block_indexed_store(plan, dim)
        return store.node if store is not None and f"threadIdx.{dim}" in store.reads \
            else None
    for n in walk(plan.body):
        parts = binary(n)
        if parts is None or parts[1] != "*":
            continue
        fs = factors(n)
        if any(builtin(f, "blockIdx") == dim for f in fs) and \
                any(builtin(f, "blockDim") == dim or int_value(f) == size for f in fs) and \
                not _starts_loop(n):
            return n
    return None


def _starts_loop(node: Node) -> bool:
    """``node`` is in a ``for`` loop's first value (``for (i = blockIdx.x * 256 + t; i < n;
    i += 264 * 256)``: a strided loop covers its range at any block, its step followed by
    the lift)."""
    while node.parent is not None:
        parent = node.parent
        if parent.type == "for_statement":
            init = parent.child_by_field_name("initializer")
            return init is not None and init.start_byte <= node.start_byte < init.end_byte
        node = parent
    return False
