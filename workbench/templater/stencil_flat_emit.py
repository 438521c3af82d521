"""The rewrite of :mod:`.stencil_flat`: a 3-D stencil on a flat launch made to march
``Z_ITEMS`` planes of ``OUT_X`` adjacent x points a thread, the launch kept flat.

Thread ``t`` of ``ceil(nx / OUT_X) * ny * ceil(nz / Z_ITEMS)`` takes the x group ``t %
ceil(nx / OUT_X)``, the row ``t / ceil(nx / OUT_X) % ny`` and the z run above; each marched
input keeps the planes ``z - R .. z + R`` of each of its columns in a register queue (filled
before the walk, moved down one a plane, plane ``z + R`` loaded once), a register holding the
input at its flat address where that lies in the box and 0 elsewhere. :mod:`.stencil_flat`
says why every output is the kernel's as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import line, text, walk
from workbench.templater.flat_split import FlatSplit
from workbench.templater.plan import Plan
from workbench.templater.read_only_loads import LDG_TYPES
from workbench.templater.regtile import fresh_names, render
from workbench.templater.rules import literal
from workbench.templater.warp_regs import _min_blocks_follows

#: adjacent x points a thread: its neighbours along x read once for the group
OUT_X_VALUES = [1, 2, 4]
#: planes a thread marches (:mod:`.stencil`'s depths)
Z_ITEMS_VALUES = [1, 2, 4, 8, 16, 32]
#: threads a block (the written size kept reachable)
BLOCK_THREADS_VALUES = [64, 128, 256, 512, 1024]
#: registers a thread holds besides its plane queues (indices, bounds, sums)
WORKING_REGS = 24


@dataclass(frozen=True)
class FlatRead:
    """A read a register replaces: of ``src`` at plane ``d``, column ``e`` of the point."""

    node: Node  # the subtree a register replaces (``u[i]`` or ``__ldg(&u[i])``)
    src: str
    d: int  # plane offset
    e: int  # column offset


@dataclass(frozen=True)
class FlatFacts:
    """What :func:`emit_flat` rewrites (read by :mod:`.stencil_flat`)."""

    decl: Node  # the flat index's declaration
    typ: str  # its declared type, qualifiers kept
    value: Node  # its value
    region: list[Node]  # the statements after it (a point's work)
    split: FlatSplit
    reads: tuple[FlatRead, ...]
    radius: dict[str, int]  # marched input -> R
    elem: dict[str, str]  # marched input -> element type


def emit_flat(plan: Plan, f: FlatFacts) -> None:
    """Rewrites the kernel of ``f`` as :mod:`.stencil_flat` tells; lifts BLOCK_THREADS, OUT_X,
    Z_ITEMS and sets the flat launch."""
    rw = plan.rw
    names = fresh_names(plan, ["BLOCK_THREADS", "OUT_X", "Z_ITEMS"])
    bt, ox, zi = names["BLOCK_THREADS"], names["OUT_X"], names["Z_ITEMS"]
    nx, ny, nz = f.split.extents
    at = f"((long long)wb_z * {ny} + wb_y) * {nx} + wb_x0 + wb_q"
    regs = {s: f"wb_{s}" for s in f.radius}

    def load(src: str, address: str) -> str:
        zero = f"({f.elem[src]})0"
        read = f"__ldg(&{src}[{address}])" if f.elem[src] in LDG_TYPES else \
            f"{src}[{address}]"
        return f"({address} >= 0 && {address} < wb_total) ? {read} : {zero}"
    declare = "".join(f"  {f.elem[s]} {regs[s]}[{2 * r + 1}][{ox}];\n"
                      for s, r in f.radius.items())
    fill = "".join(
        f"#pragma unroll\n    for (int wb_d = 0; wb_d < {2 * r}; ++wb_d) {{\n"
        f"      const long long wb_a = wb_at + (wb_d - {r}) * wb_plane;\n"
        f"      {regs[s]}[wb_d][wb_q] = {load(s, 'wb_a')};\n    }}\n"
        for s, r in f.radius.items())
    top = "".join(f"    const long long wb_a{k} = {at} + {r} * wb_plane;\n"
                  f"    {regs[s]}[{2 * r}][wb_q] = {load(s, f'wb_a{k}')};\n"
                  for k, (s, r) in enumerate(f.radius.items()))
    shift = "".join(f"#pragma unroll\n    for (int wb_d = 0; wb_d < {2 * r}; ++wb_d)\n"
                    f"      {regs[s]}[wb_d][wb_q] = {regs[s]}[wb_d + 1][wb_q];\n"
                    for s, r in f.radius.items())
    index = render(plan.source.data, f.decl, lambda n: at if n == f.value else None)
    head = (f"// this thread: {ox} adjacent x points of one row over {zi} consecutive z planes "
            f"(its number split x groups fastest)\n"
            f"  const long long wb_t = (long long)blockIdx.x * {bt} + threadIdx.x;\n"
            f"  const int wb_nxg = ({nx} + {ox} - 1) / {ox};\n"
            f"  const int wb_x0 = (int)(wb_t % wb_nxg) * {ox};\n"
            f"  const int wb_y = (int)(wb_t / wb_nxg % {ny});\n"
            f"  const int wb_z0 = (int)(wb_t / ((long long)wb_nxg * {ny})) * {zi};\n"
            f"  const long long wb_plane = (long long){nx} * {ny}, wb_total = wb_plane * {nz};\n"
            f"  // the planes z - R .. z + R of each column in registers\n{declare}"
            f"#pragma unroll\n  for (int wb_q = 0; wb_q < {ox}; ++wb_q) {{\n"
            f"    const long long wb_at = ((long long)wb_z0 * {ny} + wb_y) * {nx} + wb_x0 + "
            f"wb_q;\n{fill}  }}\n"
            f"  for (int wb_k = 0; wb_k < {zi}; ++wb_k) {{\n"
            f"  const int wb_z = wb_z0 + wb_k;\n  if (wb_z >= {nz}) break;\n"
            f"#pragma unroll\n  for (int wb_q = 0; wb_q < {ox}; ++wb_q) {{\n{top}  }}\n"
            f"#pragma unroll\n  for (int wb_q = 0; wb_q < {ox}; ++wb_q) {{\n"
            f"  if (wb_x0 + wb_q >= {nx}) continue;\n  {index}")
    rw.replace(f.decl, head)
    coords = {"x": "wb_x0 + wb_q", "y": "wb_y", "z": "wb_z"}
    for s in f.region:
        for n in walk(s):
            if n.type == "return_statement":
                rw.replace(n, "continue;")
            elif n.type == "init_declarator":
                name = n.child_by_field_name("declarator")
                v = n.child_by_field_name("value")
                axis = f.split.coordinate(text(name)) if name is not None else None
                if axis is not None and v is not None:
                    rw.replace(v, f"({coords[axis]})")
    for r in f.reads:
        slot = f"{regs[r.src]}[{f.radius[r.src] + r.d}]"
        rw.replace(r.node, f"{slot}[wb_q]" if not r.e else
                   f"((unsigned)(wb_q + ({r.e})) < (unsigned){ox} ? {slot}[wb_q + ({r.e})] : "
                   f"{text(r.node)})")
    rw.insert(f.region[-1].end_byte, f"\n  }}\n#pragma unroll\n  for (int wb_q = 0; wb_q < {ox}; "
              f"++wb_q) {{\n{shift}  }}\n  }}")
    written = literal(plan.block[0]) or 256
    origin = f"{line(f.decl)}: {text(f.decl)}"
    plan.add_param(bt, {"kind": "choice", "values": sorted({written, *BLOCK_THREADS_VALUES}),
                        "default": written,
                        "description": f"threads per block (as written: {written})"}, origin)
    plan.add_param(ox, {"kind": "choice", "values": OUT_X_VALUES, "default": 1,
                        "description": "adjacent x points a thread, their shared x neighbours "
                                       "read once (as written: 1)"}, origin)
    plan.add_param(zi, {"kind": "choice", "values": Z_ITEMS_VALUES, "default": 1,
                        "description": "consecutive z planes a thread marches, the planes "
                                       "below / at / above in registers (as written: 1)"}, origin)
    sx, sy, sz = (plan.scalars[e] for e in f.split.extents)
    plan.grid = [f"ceil_div(ceil_div({sx}, {ox}) * ({sy}) * ceil_div({sz}, {zi}), {bt})"]
    plan.block = [bt]
    plan.launch_bounds = bt
    if _min_blocks_follows(plan):
        # the queues are live across the planes: a register cap from a minimum of resident
        # blocks below them spills (sm_90 ptxas: 3 planes of 4 columns at 32 registers)
        slots = sum(2 * r + 1 for r in f.radius.values())
        plan.constrain(f"MIN_BLOCKS_PER_SM == 0 or {slots} * {ox} + {WORKING_REGS} <= 65536 // "
                       f"({bt} * MIN_BLOCKS_PER_SM)")
    marched = ", ".join(f"{s} (planes z - {r} .. z + {r})" for s, r in f.radius.items())
    plan.note("BLOCK_THREADS", True, f"the flat launch's block size ({written} as written)",
              f.decl)
    plan.note("Z_ITEMS", True, f"the flat index {f.split.index} is the point (x, y, z) of a "
              f"[{nz}][{ny}][{nx}] box; each thread walks {zi} consecutive z planes of one row, "
              f"{marched} in registers loaded once a plane; the grid covers ceil({nx} / {ox}) "
              f"* {ny} * ceil({nz} / {zi}) threads", f.decl)
    plan.note("OUT_X", True, f"each thread computes {ox} adjacent x points at each plane; "
              "an x neighbour the thread holds is read from its register", f.decl)
