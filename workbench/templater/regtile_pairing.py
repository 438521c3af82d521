"""Which block index offsets the rows of a tiled GEMM's output (:mod:`.regtile`).

The register tile runs a thread's TM rows along its thread row and its TN columns along its
thread column, and moves a block by BM rows along the block index that offsets the rows.
Most authors offset the rows by ``blockIdx.y``; some (siboehm's SGEMM kernels, a 1-D block
split ``threadIdx.x / 32`` into rows) by ``blockIdx.x``. Which one is read from the output
itself: the address of each store of the epilogue, evaluated with the block and thread
indices as numbers (pointer steps of the prologue, ``C += cRow * 32 * N``, included) on
random values of everything else, must move by one block row when the thread row moves by
T, and by one block column when the thread column does. An output that follows neither
pairing is refused; so is a tile's cooperative load whose address does not move with the
block index of the output dimension the tile's rows (or columns) run along.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import builtin, int_value, strip, text, walk
from workbench.templater.regtile_vec import _Unknown, evaluate

#: blockIdx.y offsets the rows (the thread's y), blockIdx.x the columns; or swapped
ROWS_FROM_Y, ROWS_FROM_X = "yx", "xy"


def output_stores(epilogue: list[Node], tiles: set[str]) -> list[tuple[Node, Node, Node]]:
    """(array, index, assignment) of each store ``X[index] = ...`` of the epilogue to an
    array that is not a shared tile."""
    out = []
    for s in epilogue:
        for n in walk(s):
            if n.type != "assignment_expression":
                continue
            left = strip(n.child_by_field_name("left"))  # type: ignore[arg-type]
            if left.type != "subscript_expression":
                continue
            array = strip(left.child_by_field_name("argument"))  # type: ignore[arg-type]
            index = left.child_by_field_name("indices") or left.child_by_field_name("index")
            if index is not None and index.type == "subscript_argument_list":
                index = index.named_children[0] if index.named_child_count == 1 else None
            if array.type == "identifier" and text(array) not in tiles and index is not None:
                out.append((array, index, n))
    return out


def pointer_steps(name: str, prologue: list[Node], body: Node,
                  varies: Callable[[Node], bool]) -> list[tuple[int, Node]] | None:
    """The steps ``name += e`` / ``name -= e`` of the prologue with their signs; None when
    ``name`` is assigned any other way, or stepped elsewhere by a value that ``varies`` (with
    the block or thread index: steps along k are the same for every block and thread, and
    leave the comparisons of :func:`same_move` unchanged)."""
    steps: list[tuple[int, Node]] = []
    in_prologue = {(n.start_byte, n.end_byte) for s in prologue for n in walk(s)}
    for n in walk(body):
        if n.type not in ("assignment_expression", "update_expression"):
            continue
        target = n.child_by_field_name("left") or n.child_by_field_name("argument")
        if target is None or text(strip(target)) != name:
            continue
        op = text(n.child_by_field_name("operator"))
        value = n.child_by_field_name("right")
        if n.type != "assignment_expression" or op not in ("+=", "-=") or value is None:
            if n.type == "update_expression" and (n.start_byte, n.end_byte) not in in_prologue:
                continue  # ++p along k
            return None
        if (n.start_byte, n.end_byte) in in_prologue:
            steps.append((1 if op == "+=" else -1, value))
        elif varies(value):
            return None
    return steps


@dataclass(frozen=True)
class Indexing:
    """How the kernel's indices read: the thread's row / column of a node ("y" / "x"),
    the initialiser of a local declared once and never reassigned, whether a value varies
    with the block or thread index, the tile size T, the initialiser of a local declared
    once (a pointer its steps then move), and whether a local is reassigned with values that
    vary with the block or thread index (its value at a use is unknown)."""

    thread_dim: Callable[[Node], str | None]
    local_value: Callable[[str], Node | None]
    varies: Callable[[Node], bool]
    tile: int
    initial_value: Callable[[str], Node | None]
    varying_local: Callable[[str], bool]
    #: threads per block along x and y where they differ from T (a rectangular block)
    block: Mapping[str, int] | None = None

    def threads(self, dim: str) -> int:
        """The block's threads along ``dim`` ("x" / "y")."""
        return self.block[dim] if self.block is not None else self.tile


def _parameter_viewed(base: Node, ix: Indexing) -> Node | None:
    """The kernel parameter ``p`` of ``reinterpret_cast<const T*>(p)`` (the pointer viewed as
    other elements: ``const float2* A2 = reinterpret_cast<const float2*>(A)``), else None.
    The probe compares the moves of one access in its own elements; the view of a parameter
    adds no offset, so its base is the parameter's block-uniform value. A view of anything
    else (a pointer already offset in the other elements) is left to the evaluation, which
    does not read it."""
    if base.type != "call_expression" or \
            not text(base.child_by_field_name("function")).startswith("reinterpret_cast<"):
        return None
    args = base.child_by_field_name("arguments")
    arg = strip(args.named_children[0]) if args is not None and \
        args.named_child_count == 1 else None
    if arg is None or arg.type != "identifier" or ix.initial_value(text(arg)) is not None \
            or ix.varying_local(text(arg)):
        return None
    return arg


def same_move(access: tuple[Node, Node | None], prologue: list[Node], body: Node, ix: Indexing,
              thread: str, block: str, step: int | None = None) -> bool | None:
    """Whether the address ``array[index]`` moves as far when the thread index ``thread``
    grows by ``step`` (default: the block's threads along it) as when the block index
    ``block`` grows by one (None: not evaluable)."""
    move = step if step is not None else ix.threads(thread)
    array, index = access
    steps = pointer_steps(text(array), prologue, body, ix.varies) \
        if array.type == "identifier" else []
    if steps is None:
        return None
    rng = random.Random(28)
    for _trial in range(6):
        seen: dict[str, int] = {}
        blocks0 = {d: rng.randrange(1, 40) for d in "xyz"}
        threads0 = {d: rng.randrange(0, ix.threads(d)) for d in "xy"}
        probe = _Probe(array, index, steps, ix, seen, rng)
        try:
            by_thread = probe.address(blocks0, {**threads0, thread: threads0[thread] + move})
            by_block = probe.address({**blocks0, block: blocks0[block] + 1}, threads0)
        except _Unknown:
            return None
        if by_thread != by_block:
            return False
    return True


def pairing(stores: list[tuple[Node, Node, Node]], prologue: list[Node], body: Node,
            ix: Indexing) -> str | None:
    """ROWS_FROM_Y, ROWS_FROM_X, "neither", or None (an output the probe cannot evaluate),
    from the epilogue's ``stores`` (:func:`output_stores`)."""
    if not stores:
        return None
    verdicts: set[str] = set()
    for array, index, _ in stores:
        moves = {(t, b): same_move((array, index), prologue, body, ix, t, b)
                 for t in "xy" for b in "xy"}
        if None in moves.values():
            return None
        rows_y = bool(moves[("y", "y")] and moves[("x", "x")])
        rows_x = bool(moves[("y", "x")] and moves[("x", "y")])
        if not rows_y and not rows_x:
            return "neither"
        verdicts.add(ROWS_FROM_Y if rows_y else ROWS_FROM_X)  # both: as the launch reads
    return verdicts.pop() if len(verdicts) == 1 else "neither"


def loads(stmt: Node, tiles: set[str]) -> list[tuple[Node, Node | None]]:
    """(array, index) of each read ``X[index]`` of a global array in ``stmt``, and
    (address, None) of each read ``*address`` (``*pa``, ``*(pa + 1)``)."""
    out: list[tuple[Node, Node | None]] = []
    for n in walk(stmt):
        if n.type == "pointer_expression" and text(n.child_by_field_name("operator")) == "*":
            address = n.child_by_field_name("argument")
            parent = n.parent
            written = parent is not None and parent.type == "assignment_expression" and \
                parent.child_by_field_name("left") == n
            if address is not None and not written:
                out.append((strip(address), None))
            continue
        if n.type != "subscript_expression":
            continue
        array = strip(n.child_by_field_name("argument"))  # type: ignore[arg-type]
        index = n.child_by_field_name("indices") or n.child_by_field_name("index")
        if index is not None and index.type == "subscript_argument_list":
            index = index.named_children[0] if index.named_child_count == 1 else None
        parent = n.parent
        written = parent is not None and parent.type == "assignment_expression" and \
            parent.child_by_field_name("left") == n
        if array.type == "identifier" and text(array) not in tiles and index is not None \
                and not written:
            out.append((array, index))
    return out


class _Probe:
    """The address one access reads or writes, at given block and thread indices."""

    def __init__(self, array: Node, index: Node | None, steps: list[tuple[int, Node]],
                 ix: Indexing, seen: dict[str, int], rng: random.Random) -> None:
        self.array, self.index, self.steps, self.ix = array, index, steps, ix
        self.seen, self.rng = seen, rng

    def address(self, blocks: dict[str, int], threads: dict[str, int]) -> int:
        ix = self.ix

        def leaf(n: Node) -> int | Node | None:
            d = ix.thread_dim(n)
            if d is not None:
                return threads[d]
            if (b := builtin(n, "blockIdx")) is not None:
                return blocks[b]
            if (bd := builtin(n, "blockDim")) is not None:
                return ix.threads(bd) if bd in "xy" else 1
            if n.type == "identifier":
                value = ix.local_value(text(n))
                if value is None and ix.varying_local(text(n)):
                    raise _Unknown(text(n))
                return value if value is not None else int_value(n)
            return None
        seen, rng = self.seen, self.rng
        base = (ix.initial_value(text(self.array)) if self.array.type == "identifier" else
                None) or self.array
        base = _parameter_viewed(base, ix) or base
        index = evaluate(self.index, leaf, seen, rng) if self.index is not None else 0
        return evaluate(base, leaf, seen, rng) + index + \
            sum(sign * evaluate(v, leaf, seen, rng) for sign, v in self.steps)
