"""The tuning space of a register-tiled GEMM (:mod:`.regtile_emit` renders the kernel).

Searched (every knob changes the speed at every shape, so a search of a few dozen
evaluations is spent on them): the block tile ``BM x BN``, its depth ``BK``, the register
tile ``TM x TN`` and the width ``VEC`` of the tiles' global loads.

Decided by the analysis, not searched (the reasons are GEMM practice for the mapping the
rewrite writes; :data:`RULES` states them where the constraints are made):

- thread mapping: a thread's ``TM x TN`` outputs are strided by the block's threads
  (``ty + i * THREADS_Y``, ``tx + j * THREADS_X``), as the kernel's own threads sit at
  ``TM = TN = 1``. The lanes of a warp then read consecutive words of a tile row per k
  (conflict-free, or one broadcast word) and store consecutive columns of the output
  (coalesced), with no dependence on 16-byte shared loads;
- shared layout: a tile the product reads along k in its inner index (``As[row][k]``, a
  ``Bs[col][k]`` of A . B^T) is stored k-major (``[BK][rows + 1]``, transposed as it is
  loaded), so each k reads one row of consecutive thread positions; its row length is odd
  (a pad of one word), so the transposing stores of a warp land on distinct banks. A tile
  already read along its rows (``Bs[k][col]``) keeps its layout;
- register cap: ``__launch_bounds__`` names the block's threads and no minimum of resident
  blocks. The register tile already sets what a thread needs (``TM * TN`` accumulators and
  ``TM + TN`` operands per k); a minimum of blocks can only lower the cap under it (spills)
  or leave it where it is, so it is no dimension of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import line, text, walk
from workbench.templater.plan import Plan
from workbench.templater.regtile import _MAX_SMEM
from workbench.templater.regtile_vec import VEC_WIDTH

KMAJOR_PAD = 1  # words added to the rows of a tile stored k-major (an odd row length)

#: The rules that narrow the register-tiled space to what GEMM practice says can win; the
#: kernel as written (``TM = TN = 1``, scalar loads) stays in the space.
RULES = """
- Register tiles blocked in both dimensions and near-square, or none (1 x 1): a thread's
  TM x TN tile loads TM + TN shared values per k for TM * TN FMAs; 1 x N does fewer FMAs
  than loads, and for a given number of accumulators the loads are fewest at TM = TN, so
  SIMT SGEMMs (CUTLASS, cuBLAS) use 4 x 4, 4 x 8, 8 x 4, 8 x 8 (2 x 8 / 8 x 2 load a
  quarter more per FMA than 4 x 4 for the same registers).
- Past a 32 x 32 block tile, register tiles of at least two FMAs per shared load (4 x 4 and
  up): there a 4 x 4 tile covers the block with at most 256 threads and twice the FMAs per
  load of 2 x 2 / 2 x 4 tiles; the small tiles stay for small block tiles (small or batched
  matrices, many blocks).
- Register-tiled configs load their tiles with the widest vector (16 bytes: VEC = 4
  floats, or 8 halves where the tiles are loaded from half-precision matrices): every
  register-tiled GEMM loads its tiles 128 bits at a time where aligned, and the
  vector path falls back to the loads as written wherever a run of four is not aligned or
  not in bounds, so it is never wrong and costs only that test; VEC = 1 stays for the
  one-output-per-thread configs (the kernel as written).
- With the vector loads, the accumulators and the vectors a thread holds between its
  global loads and its shared stores (each tile's 16-byte loads are all issued before its
  stores) take at most 128 registers, half of the 255 a thread may have: the rest holds
  the TM + TN operands per k, the addresses and the epilogue. Past that ptxas spills: a
  one-warp block of 8 x 8 tiles over a 128 x 16 x 32 tile holds 64 accumulators and 144
  staged words (set 6's linear_gelu_lda, 8 bytes spilled at 255 registers), where the
  four-warp-and-up blocks SGEMMs use hold a few vectors a tile.
"""

#: registers for the accumulators and the staged vectors of one thread (:data:`RULES`)
STAGED_REGISTERS = 128


@dataclass(frozen=True)
class SpaceNames:
    """The parameter names of one lift (fresh against the kernel's own identifiers)."""

    bm: str
    bn: str
    bk: str
    tm: str
    tn: str
    vec: str


@dataclass(frozen=True)
class WrittenSizes:
    """The kernel as written: output rows and columns per block, depth along k."""

    rows: int
    cols: int
    depth: int


def add_space(plan: Plan, n: SpaceNames, written: WrittenSizes, *, where: str,
              loop: Node, acc: Node, acc_name: str, vectorized: Sequence[str],
              smem: str, vec_width: int = VEC_WIDTH, staged: Sequence[str] = ()) -> None:
    """The parameters and constraints of a register-tiled GEMM. ``vectorized``: the inner
    extents of the tiles loaded with float4 (empty: no VEC knob); ``staged``: their
    elements (``BM * BK``); ``smem``: the shared bytes of the tiles as an expression of the
    parameters."""
    for name, desc, size in ((n.bm, f"rows of the output per block (as written: "
                                     f"{written.rows})", written.rows),
                             (n.bn, f"columns of the output per block (as written: "
                                     f"{written.cols})", written.cols)):
        plan.add_param(name, {"kind": "pow2", "min": min(16, size), "max": max(128, size),
                              "default": size, "description": desc},
                       f"{where}: blockIdx * {size} and the shared tiles")
    plan.add_param(n.bk, {"kind": "choice", "values": sorted({8, 16, 32, written.depth}),
                          "default": written.depth,
                          "description": f"depth of the shared tiles along k (as written: "
                                         f"{written.depth})"},
                   f"{line(loop)}: the loop over tiles")
    for name, dim in ((n.tm, "rows"), (n.tn, "columns")):
        plan.add_param(name, {"kind": "pow2", "min": 1, "max": 8, "default": 1,
                              "description": f"output {dim} per thread, accumulators in "
                                             "registers (as written: 1)"},
                       f"{line(acc)}: accumulator {acc_name}")
    threads = f"({n.bm} // {n.tm}) * ({n.bn} // {n.tn})"
    plan.constrain(f"{n.bm} % {n.tm} == 0 and {n.bn} % {n.tn} == 0")
    plan.constrain(f"{threads} >= 32")
    plan.constrain(f"{threads} <= 1024")
    _narrow_to_gemm_practice(plan, n)
    if vectorized:
        _vector_knob(plan, n, vectorized, loop, vec_width)
        _staged_registers(plan, n, staged, threads, vec_width)
    plan.constrain(f"{smem} <= {_MAX_SMEM}")


def _narrow_to_gemm_practice(plan: Plan, n: SpaceNames) -> None:
    """The first two of :data:`RULES` (the third is made with the VEC knob)."""
    tm, tn = n.tm, n.tn
    plan.constrain(f"{tm} * {tn} == 1 or ({tm} >= 2 and {tn} >= 2 and {tm} <= 2 * {tn} "
                   f"and {tn} <= 2 * {tm})")
    plan.constrain(f"{tm} * {tn} >= 2 * ({tm} + {tn}) or {n.bm} * {n.bn} <= 1024")


def _vector_knob(plan: Plan, n: SpaceNames, vectorized: Sequence[str], loop: Node,
                 width: int = VEC_WIDTH) -> None:
    what = "float4 loads of the tiles where a run of four" if width == VEC_WIDTH else \
        f"16-byte loads of {width} halves of the tiles where a run of {width}"
    plan.add_param(n.vec, {"kind": "choice", "values": [1, width], "default": 1,
                           "description": f"{width}: {what} is aligned and in bounds (as "
                                          "written: 1)"},
                   f"{line(loop)}: the tiles' cooperative loads")
    whole = " and ".join(f"{e} % {width} == 0" for e in sorted(set(vectorized)))
    plan.constrain(f"{n.vec} == 1 or ({whole})")
    # the third rule; a tile extent the vectors cannot split keeps the scalar loads
    plan.constrain(f"{n.tm} * {n.tn} == 1 or {n.vec} == {width} or not ({whole})")


def _staged_registers(plan: Plan, n: SpaceNames, staged: Sequence[str], threads: str,
                      width: int) -> None:
    """The fourth of :data:`RULES`: a thread's accumulators and the 16-byte vectors (four
    registers each, ``width`` elements) it holds for the tiles loaded together."""
    if not staged:
        return
    vectors = " + ".join(f"ceil_div({e}, {width} * {threads})" for e in staged)
    plan.constrain(f"{n.vec} == 1 or {n.tm} * {n.tn} + 4 * ({vectors}) <= "
                   f"{STAGED_REGISTERS}")


def bind_launch_bounds(plan: Plan, threads: str) -> None:
    """``__launch_bounds__(threads)`` on the kernel: the author's first argument replaced
    (a minimum of blocks they wrote is kept), or the attribute added. ``plan.launch_bounds``
    stays unset, so no MIN_BLOCKS_PER_SM knob is added (see the module docstring)."""
    fn = plan.source.function_node(plan.kernel)
    bounds = next((c for c in fn.children if c.type == "launch_bounds"), None)
    kept = ""
    if bounds is not None and bounds.named_children:
        plan.rw.replace(bounds.named_children[0], threads)
        if len(bounds.named_children) > 1:
            kept = f" (the minimum of blocks as written, {text(bounds.named_children[1])}, kept)"
    else:
        decl = next(d for d in walk(fn) if d.type == "function_declarator")
        plan.rw.insert(decl.start_byte, f"__launch_bounds__({threads}) ")
    plan.note("REGISTER_TILE", True, "__launch_bounds__ names the block's threads" + (
        kept or " with no minimum of blocks per SM: the register tile sets the registers a "
                "thread needs, a lower cap would only spill"))
