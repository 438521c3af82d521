"""Grid-stride reductions to one result per block: GRID_BLOCKS, VEC, ITEMS_PER_THREAD, FINAL.

Recognised on the parse, whatever the spelling, as the body's top-level statements:

* declarations only (the ``__shared__`` array, the accumulator ``T s = init;``, locals such
  as ``tid`` or ``stride``), then
* a grid-stride loop over every element once: ``for (i = g; i < n; i += S) s OP= E;`` or
  ``i = g; while (i < n) { s OP= E; i += S; }`` (``i`` declared anywhere among the
  declarations before the loop that do not read it) where ``g`` is ``blockIdx.x * B +
  threadIdx.x`` and ``S`` is ``B * gridDim.x`` (B the block size: its literal, a macro
  holding it, or ``blockDim.x``; through single-assignment locals) or, where the launch's
  grid is a literal G, ``B * G`` (G a literal, a macro even with a comment after its
  value, a file-scope ``constexpr``: :mod:`.reduce_consts`) or the product as one number;
  a pointer walk ``for (T* p = A + g; p < A + n; p += S)`` (or its ``while`` form) whose E
  reads only ``*p`` / ``p[0]`` (read as ``A[i]``); or the walk over block-sized chunks
  ``for (b = blockIdx.x; b < ceil(n / B); b += gridDim.x) { i = b * B + threadIdx.x; if
  (i < n) s OP= E; }`` (the same elements in the same order per thread), ``OP`` a sum
  (``s += E``, ``s = s + E``) or a max/min (``s = fmaxf(s, E)``, ``max``, ``fminf``, ...),
  E not reading ``s`` and free of side effects, of any arithmetic type (int8 / int16
  elements widened by E, as written), then
* ``buf[tid] = s; __syncthreads();`` and the halving tree ``for (k = B / 2; k > 0;
  k >>= 1 | k /= 2) { if (tid < k) buf[tid] OP= buf[tid + k]; __syncthreads(); }`` with the
  loop's operator, then
* the last statement: thread 0 stores the block's result, ``out[blockIdx.x] = buf[0]`` (one
  partial per block) or ``atomicAdd(out, buf[0])`` (atomicMax / atomicMin for max / min).

A block stage written as a helper (``float total = block_sum<256>(sum);``, its shared array
sized by the template argument) is read once inlined (:func:`.semantic.lift_kernel` tries
that reading where it lifts more): its ``__shared__`` declaration then stands after the loop
(skipped: where a declaration with no value stands changes nothing) and ``buf[0]`` comes
back through a local that thread 0's store alone reads (``T total = buf[0]; if (tid == 0)
out[blockIdx.x] = total;``).

Each transform keeps every config correct:

* GRID_BLOCKS: blocks launched where the grid is a literal L or a ``min(X, L)`` cap. For
  partial outputs the buffer holds the as-written grid's slots, so ``GRID_BLOCKS <= L`` and
  block 0 writes the operator's identity into the slots of blocks not launched (the host's
  sum, or max, of all slots stays right). The identity must be known for the type. The
  grid is the one written (not scaled by the block size), so BLOCK_THREADS leaves the
  number of partials as it is (``lift_block(keeps_grid=True)``).
* VEC / ITEMS_PER_THREAD: the loop reads ``VEC``-wide vectors of every array it indexes by
  ``i`` alone (kernel pointers the kernel never writes; ``VEC * bytes <= 16``), the
  ``n % VEC`` elements after the last whole vector one per thread; ``ITEMS_PER_THREAD``
  vectors in flight per thread, each into its own accumulator, combined at the end. Where
  an array is read otherwise, only ITEMS_PER_THREAD applies.
* FINAL: 0 keeps the author's shared-memory tree, 1 reduces each warp with
  ``__shfl_down_sync`` and then the warps' results (one shared slot per warp) in warp 0.

Kernels that end with an atomic and whose grid is already capped by ``min(...)`` keep the
flat lifts (GRID_BLOCKS cap, VEC, ITEMS_PER_THREAD: benchmarks/corpus/sum_reduce, whose
template is committed and measured).

Order: every knob but the defaults changes the order in which elements meet. Integer sums
(wrapping) and every max / min are exact in any order; a float sum moves by rounding, which
this family allows as it always has (the gate checks it within the folder's tolerance); the
REDUCTION note says which applies. Partials change layout with every knob (which elements a
block adds), so a folder that compares them element by element (no ``compare = "sum"``, no
``verify()``) gets the family refused with the line.
"""

from __future__ import annotations

from collections.abc import Collection

from workbench.templater.analysis import line
from workbench.templater.block import lift_block
from workbench.templater.plan import Plan
from workbench.templater.reduce_match import is_candidate, recognise
from workbench.templater.reduce_records import exactness
from workbench.templater.reduce_rewrite import (
    final_refusal,
    lift_final,
    lift_grid_blocks,
    lift_loads,
)
from workbench.templater.rules import min_cap
from workbench.templater.vector import Illegal

NAME = "REDUCTION"


def lift_reduce(plan: Plan, compared_by_total: Collection[str] | None = None) -> bool:
    """Apply the reduction family where the kernel has the shape above; True when it did.
    A kernel with a grid-stride loop and a shared tree that is not quite that shape is
    refused with the reason and the line (and left to the other transforms).
    ``compared_by_total`` names the outputs the kernel folder compares by a reduced quantity
    (None where no folder says): partials compared element by element are refused, since
    which elements a block adds changes with every knob."""
    if len(plan.block) != 1 or len(plan.grid) != 1 or not is_candidate(plan):
        return False
    try:
        red = recognise(plan)
        if not red.atomic and compared_by_total is not None and \
                red.out not in compared_by_total:
            raise Illegal(f"the partials `{red.out}` are compared element by element "
                          "(kernel.toml has no compare = \"sum\" for it and reference.py no "
                          "verify()), and which elements a block adds changes with the block "
                          "count, vector width and items per thread: compare them by their "
                          "sum or verify() to lift the family", red.final)
    except Illegal as exc:
        plan.note(NAME, False, exc.reason, exc.node)
        return False
    if red.atomic and min_cap(plan.grid[0], "GRID_BLOCKS") is not None:
        plan.note(NAME, False, "the kernel ends with an atomic and its grid is already "
                  "capped by min(...): the flat lifts (GRID_BLOCKS cap, VEC, ITEMS_PER_THREAD) "
                  "keep its committed template", red.final)
        return False
    written_grid = plan.grid[0]
    # the author's own block stage (reduce_tail): written anew under FINAL where the
    # family's stages can move the accumulator, else kept as written with the block size
    kept = final_refusal(plan, red, red.acc_type) if red.kept_tail else None
    if red.kept_tail:
        if kept is None:
            lift_block(plan, keeps_grid=True)
        plan.note(NAME, True, f"grid-stride {red.op.kind} over `{red.var}` into `{red.acc}`; "
                  f"the block's stage after the loop (line {line(red.store)} to line "
                  f"{line(red.final)}) reduces each warp by shuffles, then the warps: "
                  f"every accumulator once, by the loop's {red.op.kind}; " + (
                      "written anew (FINAL), the block size lifted" if kept is None else
                      f"kept as written, the block size with it ({kept})") + "; it "
                  f"{'adds atomically to' if red.atomic else 'stores one partial per block in'}"
                  f" `{red.out}`; {exactness(red)}", red.loop)
    else:
        lift_block(plan, keeps_grid=True)
        plan.note(NAME, True, f"grid-stride {red.op.kind} over `{red.var}` into `{red.acc}`, a "
                  f"shared tree over `{red.buf}`, thread 0 "
                  f"{'adds atomically' if red.atomic else 'stores one partial per block'}; "
                  f"{exactness(red)}", red.loop)
    lift_grid_blocks(plan, red, written_grid)
    lift_loads(plan, red)
    if kept is not None:
        plan.note("FINAL", False, f"the block's last stage is the author's own, kept as "
                  f"written: {kept}", red.store)
    else:
        lift_final(plan, red)
    return True

