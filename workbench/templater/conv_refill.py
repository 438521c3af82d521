"""USE_SMEM = 2 for convolutions with a channel loop outside the window: one shared tile,
refilled for each channel inside the loop (:mod:`.conv`).

USE_SMEM = 1 stages a tile per channel before the bounds check, so it needs a compile-time
channel count and ``channels x tile`` bytes. The usual alternative for many channels is
one tile that the block refills at the top of each channel's iteration: barrier, cooperative
fill, barrier, then the thread's taps from the tile. Every thread of the block must reach
those barriers, so the kernel's early ``return`` becomes a flag for this value of the knob
(``wb_live``): threads past the edge help fill the tile and skip the taps; the stores are
guarded per output already. Legal where the channel loop is the outermost loop around the
taps, the bounds check is an early ``if (...) return;`` (or wraps the work) and the statements between it and
the channel loop are declarations that read no memory (a thread past the edge runs them
too). A bounds check that wraps the work (``if (x < w && y < h) { .. }``, the last statement)
is read the same way: every thread enters it under this value, the flag its test. Each
output still sums its taps in the written order, from the same values.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.templater.analysis import text, walk
from workbench.templater.conv_reads import unmovable_call


@dataclass(frozen=True)
class Refill:
    """Where USE_SMEM = 2 rewrites: the early return that becomes a flag."""

    guard: Node
    live: str = "wb_live"
    wraps: bool = False  # `if (inside) { work }`: every thread enters under USE_SMEM = 2


def refill_refusal(source: CudaSource, between: list[Node],
                   channel_outermost: bool, own: list[str]) -> str | None:
    """Why one tile refilled per channel is not offered (None: it is). ``own``: locals the
    value reads that the thread derived from its own point outside the loops."""
    if own:
        return (f"the value reads {', '.join(own)}, derived from the thread's own point "
                "before the loops (the tile is filled for the block's first point)")
    if not channel_outermost:
        return "the channel loop is not the outermost loop around the taps"
    for s in between:
        if s.type == "preproc_call":  # `#pragma unroll` before the channel loop
            continue
        if s.type != "declaration":
            return f"`{text(s)[:60]}` runs between the bounds check and the channel loop"
        for n in walk(s):
            if n.type == "subscript_expression" or (
                    n.type == "pointer_expression" and
                    text(n.child_by_field_name("operator")) == "*"):
                return (f"`{text(s)[:60]}` reads memory between the bounds check and the "
                        "channel loop (a thread past the edge would run it)")
        if unmovable_call(source, s) is not None:
            return f"`{text(s)[:60]}` calls a function a thread past the edge would run"
    return None


def wrapped_live(smem: str, cond_text: str, live: str) -> tuple[str, str]:
    """The bounds check that wraps the work, under USE_SMEM == 2: (the flag of the threads
    it lets in, declared before it; its test, which every thread passes)."""
    return (f"#if {smem} == 2  // every thread reaches the tile's barriers\n"
            f"  const bool {live} = ({cond_text});\n#endif\n  ",
            f"{smem} == 2 || ({cond_text})")


def live_flag(smem: str, guard_text: str, cond_text: str, live: str) -> str:
    """The early return, or (USE_SMEM == 2) the flag of the threads it would keep."""
    return (f"#if {smem} == 2  // every thread reaches the tile's barriers\n"
            f"  const bool {live} = !({cond_text});\n#else\n  {guard_text}\n#endif\n  ")


def refill_block(smem: str, elem: str, tile: tuple[str, str], block: tuple[str, str],
                 fill_body: str, live: str) -> str:
    """The head of the channel's iteration under USE_SMEM == 2: the block refills the one
    tile (``fill_body`` stores ``wb_ctile[wb_pr][wb_pc]``), then live threads do the taps."""
    (tile_h, tile_w), (bx, by) = tile, block
    return (
        f"#if {smem} == 2  // this channel's inputs with the window's halo, refilled\n"
        f"    __shared__ {elem} wb_ctile[{tile_h}][{tile_w}];\n"
        f"    __syncthreads();  // every thread is done with the previous channel's tile\n"
        f"    for (int wb_e = (int)threadIdx.y * {bx} + (int)threadIdx.x; "
        f"wb_e < {tile_h} * {tile_w}; wb_e += {bx} * {by}) {{\n"
        f"      const int wb_pr = wb_e / {tile_w}, wb_pc = wb_e % {tile_w};\n"
        f"{fill_body}"
        f"    }}\n    __syncthreads();\n    if ({live}) {{\n#endif\n")


def refill_close(smem: str) -> str:
    return f"#if {smem} == 2\n    }}\n#endif\n"
