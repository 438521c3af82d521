"""PRIVATE for :mod:`.block_merge`: a phase's shared-atomic histogram summed in registers.

A phase (one run between barriers) whose every mention of a 1-D ``__shared__`` array ``S``
of ``N <= 32`` elements (``float``, ``double``, ``int``, ``unsigned``, ``long long``) is the
statement ``atomicAdd(&S[i], v);`` (the HOG cell's nine bins, a block's 64-bin count):

* PRIVATE 1: each thread adds its votes over all its rows into ``N`` registers
  (``acc[b] += b == i ? v : 0``), then adds each register to ``S`` with one atomic after
  the rows: ``N`` atomics a thread instead of two a row.
* PRIVATE 2: the registers are summed first over the lanes of a warp that run the same block
  as written (xor shuffles over the thread's x bits inside the block's width and its row bits
  inside the rows of one block, both powers of two), and the lane with those bits clear adds
  them: ``N`` atomics a block as written a warp. Every thread reaches the shuffles (they are
  after the rows, outside the block's live test) and the block is whole warps (a constraint).

Legal because the atomics' results are not read and nothing else in the phase reads or
writes ``S``: the phase ends with the same sums in ``S``, added in another order. Integer
sums are exact in any order (bit for bit); float sums differ by the rounding of the order,
which the kernel as written leaves to the order its atomics land (the gate compares within
the folder's tolerance). An index outside ``0 .. N - 1`` (a write past the array as
written) adds nothing. 0 is the kernel as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import strip, subscript_index, text, walk
from workbench.templater.block_phases import _declarator_name
from workbench.templater.const_lanes import const_eval
from workbench.templater.rewrite import Rewriter

_TYPES = frozenset({"float", "double", "int", "unsigned", "unsigned int", "long long",
                    "unsigned long long", "long long int"})


@dataclass(frozen=True)
class Bins:
    """A run's histogram: the shared array, its element type and size, its atomics."""

    name: str
    ctype: str
    size: int
    atomics: tuple[Node, ...]  # the `atomicAdd(&S[i], v);` statements


def run_bins(run: list[Node], shared: list[Node]) -> Bins | None:
    """The one histogram ``run`` adds into, or None."""
    arrays = {}
    for decl in shared:
        ctype = " ".join(w for w in text(decl.child_by_field_name("type")).split()
                         if w != "const")
        for d in decl.children_by_field_name("declarator"):
            name = _declarator_name(d)
            if d.type == "array_declarator" and name is not None and \
                    d.child_by_field_name("declarator") == name:
                size = const_eval(d.child_by_field_name("size"))
                if size is not None and 1 < size <= 32 and ctype in _TYPES:
                    arrays[text(name)] = (ctype, size)
    found: dict[str, list[Node]] = {}
    mentioned: set[str] = set()
    for stmt in run:
        for n in walk(stmt):
            if n.type == "identifier" and text(n) in arrays:
                mentioned.add(text(n))
                atomic = _atomic_of(n)
                if atomic is None:
                    return None
                found.setdefault(text(n), []).append(atomic)
    if len(found) != 1 or mentioned != set(found):
        return None
    array, atomics = next(iter(found.items()))
    return Bins(array, arrays[array][0], arrays[array][1], tuple(atomics))


def _atomic_of(name: Node) -> Node | None:
    """The statement ``atomicAdd(&S[i], v);`` whose first argument's array is ``name``."""
    sub = name.parent
    if sub is None or sub.type != "subscript_expression" or \
            sub.child_by_field_name("argument") != name:
        return None
    addr = sub.parent
    if addr is None or addr.type != "pointer_expression" or \
            text(addr.child_by_field_name("operator")) != "&":
        return None
    args = addr.parent
    call = args.parent if args is not None else None
    if args is None or call is None or call.type != "call_expression" or \
            text(call.child_by_field_name("function")) != "atomicAdd" or \
            len(args.named_children) != 2 or args.named_children[0] != addr:
        return None
    stmt = call.parent
    return stmt if stmt is not None and stmt.type == "expression_statement" else None


def emit_private(rw: Rewriter, bins: Bins, knob: str) -> None:
    """Each atomic of ``bins`` a register add under ``#if knob``."""
    for stmt in bins.atomics:
        call = stmt.named_children[0]
        args = call.child_by_field_name("arguments")
        assert args is not None
        addr, value = args.named_children
        target = addr.child_by_field_name("argument")
        assert target is not None
        index = subscript_index(strip(target))

        def make(r: Rewriter, stmt: Node = stmt, index: Node = index,
                 value: Node = value) -> str:
            i = r.render(index.start_byte, index.end_byte)
            v = r.render(value.start_byte, value.end_byte)
            return (f"\n#if {knob}\n{{ const int wb_i = {i}; const {bins.ctype} wb_v = {v};\n"
                    f"#pragma unroll\n for (int wb_b = 0; wb_b < {bins.size}; ++wb_b) "
                    f"wb_acc[wb_b] += wb_b == wb_i ? wb_v : ({bins.ctype})0; }}\n#else\n"
                    f"{r.render(stmt.start_byte, stmt.end_byte)}\n#endif\n")
        rw.replace_span(stmt.start_byte, stmt.end_byte, make=make)


def opening(bins: Bins, knob: str) -> str:
    """The registers, zeroed, before the rows (``#if knob``)."""
    return (f"\n#if {knob}\n  {bins.ctype} wb_acc[{bins.size}];\n#pragma unroll\n"
            f"  for (int wb_b = 0; wb_b < {bins.size}; ++wb_b) wb_acc[wb_b] = 0;\n#endif\n")


def flush(bins: Bins, knob: str, width: int, rows_a_block: str, threads_x: str) -> str:
    """After the rows: PRIVATE 1 adds every register to the shared bins; PRIVATE 2 sums them
    over the lanes of one block as written first (``width`` threads across it, a power of
    two; ``rows_a_block`` thread rows of it, ``threads_x`` threads a physical row, both
    powers of two), the lane with those bits clear adding."""
    adds = (f"#pragma unroll\n  for (int wb_b = 0; wb_b < {bins.size}; ++wb_b) "
            f"atomicAdd(&{bins.name}[wb_sub][wb_b], wb_acc[wb_b]);\n")
    lanes = (f"((1 < {width} ? ({width} < 32 ? {width} : 32) - 1 : 0) | "
             f"(({threads_x}) < 32 ? ((({threads_x}) * ({rows_a_block}) < 32 ? "
             f"({threads_x}) * ({rows_a_block}) : 32) - 1) & ~(({threads_x}) - 1) : 0))")
    return (f"\n#if {knob} == 1\n  if (wb_live) {{\n{adds}  }}\n#elif {knob} == 2\n"
            f"#pragma unroll\n  for (int wb_b = 0; wb_b < {bins.size}; ++wb_b) {{\n"
            f"#pragma unroll\n    for (int wb_m = 1; wb_m < 32; wb_m <<= 1)\n"
            f"      if ({lanes} & wb_m) wb_acc[wb_b] += __shfl_xor_sync(0xffffffffu, "
            f"wb_acc[wb_b], wb_m);\n  }}\n"
            f"  if (wb_live && ((threadIdx.y * ({threads_x}) + threadIdx.x) & {lanes}) == 0) "
            f"{{\n{adds}  }}\n#endif\n")
