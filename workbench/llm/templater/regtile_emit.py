"""Rendering of a register-tiled GEMM (:mod:`.regtile` analyses; this module writes).

Every thread of the kernel as written becomes one virtual thread of a ``(BN, BM)`` tile: a
real thread runs ``TM x TN`` of them with their accumulators in registers; the shared tiles
become ``[BM][BK]`` / ``[BK][BN]`` by the role of each index; each cooperative store becomes
a loop of all threads over the tile's positions (with a float4 path at ``VEC == 4`` where
:mod:`.regtile_vec` proves the store's form); the grid's x / y follow BN / BM, any other
grid dimension is kept as written.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.llm.templater.analysis import int_value, line, strip, text, walk
from workbench.llm.templater.plan import Plan
from workbench.llm.templater.regtile import (
    _MAX_SMEM,
    Gemm,
    Tile,
    fresh_names,
    render,
)
from workbench.llm.templater.regtile_analysis import Parts, decl_name, loop_header, store_target
from workbench.llm.templater.regtile_pairing import ROWS_FROM_Y
from workbench.llm.templater.regtile_vec import (
    VEC_WIDTH,
    NotVector,
    VectorStore,
    analyse_store,
    float_pointers,
    unit_stride,
    vector_loop,
)
from workbench.llm.templater.rules import scale_divisor

# the knob that stores a tile read along k in its inner index k-major, by the output role
# of its other index (A's rows: "y"; a B read as B^T: "x")
KMAJOR_KNOBS = {"y": "A_KMAJOR", "x": "B_KMAJOR"}


def emit_register_tile(g: Gemm, loop: Node) -> None:
    """Rewrite the kernel body of ``g`` (analysed in :mod:`.regtile`) as its
    register-tiled template: parameters, constraints, launch rules and findings."""
    plan, data = g.plan, g.data
    parts: Parts = g.parts  # type: ignore[attr-defined]
    n = fresh_names(plan, ["BM", "BN", "BK", "TM", "TN", "PAD", "THREADS_X", "THREADS_Y",
                           "VEC", "CONTIG_TILE", *KMAJOR_KNOBS.values()])
    g.names = n
    bm, bn, bk, tm, tn, pad = (n[k] for k in ("BM", "BN", "BK", "TM", "TN", "PAD"))
    tx_, ty_ = n["THREADS_X"], n["THREADS_Y"]
    role_ext = {"y": bm, "x": bn, "k": bk}
    padded = [tl for tl in g.tiles.values() if tl.roles[-1] == "k"]
    # a tile read along k in its inner index may be stored transposed (k-major): the knob
    # of its output role; every access to it swaps its two indices under the knob
    g.transposed = {tl.name: n[KMAJOR_KNOBS[tl.roles[0]]] for tl in padded}
    ind = "  "
    out: list[str] = ["{"]
    for tl in g.tiles.values():
        def decl(order: tuple[int, int], tl: Tile = tl) -> str:
            # order[i]: the index position (as written) whose role the extent i takes
            sizes = [role_ext[tl.roles[order[i]]] + (f" + {pad}" if tl in padded and i == 1
                                                     else "") for i in range(2)]
            ext = {(tl.extents[0].start_byte, tl.extents[0].end_byte): "][".join(sizes)} \
                if tl.flat else {(tl.extents[i].start_byte, tl.extents[i].end_byte): sizes[i]
                                 for i in range(2)}  # a flat tile is declared 2-D
            # 16-byte aligned, so a thread's adjacent operands (CONTIG_TILE) load as vectors
            # (alignas first: a standard attribute that nvcc and a host compiler both take)
            aligned = "__align__" in text(tl.decl) or "alignas" in text(tl.decl)
            return ("" if aligned else "alignas(16) ") + render(
                data, tl.decl, lambda m: ext.get((m.start_byte, m.end_byte)))
        if tl.name in g.transposed:
            out += [f"#if {g.transposed[tl.name]}", ind + decl((1, 0)), "#else",
                    ind + decl((0, 1)), "#endif"]
        else:
            out.append(ind + decl((0, 1)))
    acc_decls = {a.decl for a in g.accumulators}
    for s in parts.prologue:
        if s.type == "declaration" and (any(text(c) == "__shared__" for c in s.children) or
                                        s in acc_decls):
            continue
        names = [decl_name(d) for d in s.children_by_field_name("declarator")] \
            if s.type == "declaration" else []
        if names and all(x in g.inlinable for x in names):
            continue  # thread-dependent: inlined where used
        if names and all(x in g.constants for x in names):
            continue  # ``const int TILE = 16;``: every use is rewritten by its role
        out.append(ind + render(data, s, g.role_sub))
    for a in g.accumulators:
        typ = data[a.decl.start_byte:a.decl.children_by_field_name("declarator")[0]
                   .start_byte].decode().strip()
        init = render(data, a.value, g.role_sub) if a.value is not None else "0"
        out += [f"{ind}{typ} {a.name}[{tm}][{tn}];",
                f"{ind}for (int wb_i = 0; wb_i < {tm}; ++wb_i)",
                f"{ind}  for (int wb_j = 0; wb_j < {tn}; ++wb_j) {a.name}[wb_i][wb_j] = {init};"]
    one_d = g.split is not None  # a 1-D block of THREADS_X * THREADS_Y threads
    out.append(f"{ind}const int wb_tid = " +
               ("threadIdx.x;" if one_d else f"threadIdx.y * {tx_} + threadIdx.x;"))
    body = loop.child_by_field_name("body")
    assert body is not None
    out.append(ind + render(data, loop, lambda m: "" if m == body else g.role_sub(m)).rstrip()
               + " {")
    ind2 = ind * 2
    vectorized: list[str] = []  # the inner extents of the tiles loaded with float4
    for s in parts.stores:
        if s.type == "declaration":
            names = [decl_name(d) for d in s.children_by_field_name("declarator")]
            if all(x in g.inlinable for x in names):
                continue
            out.append(ind2 + render(data, s, g.role_sub))
            continue
        loop_store = g.loop_stores.get((s.start_byte, s.end_byte))
        if loop_store is not None:
            s = loop_store.store  # its loop becomes the loop over the tile's positions
        target = g.access(store_target(s)[0])
        assert target is not None
        tile = g.tiles[target[0]]
        dims = g.position_dims(target[1])
        threads = {dims[0] or "y": "wb_r", dims[1] or "x": "wb_c"}
        e0, e1 = role_ext[tile.roles[0]], role_ext[tile.roles[1]]
        scalar = render(data, s, g.region(threads, acc=False))
        loop_as_written = [
            f"{ind2}for (int wb_e = wb_tid; wb_e < {e0} * {e1}; wb_e += {tx_} * {ty_}) {{",
            f"{ind2}  const int wb_r = wb_e / {e1}, wb_c = wb_e % {e1};",
            f"{ind2}  {scalar}",
            f"{ind2}}}"]
        vec = _vector_store(g, s, dims)
        if vec is None:
            out += loop_as_written
            continue
        vectorized.append(e1)

        def at(m: Node, c: str, dims: list[str | None] = dims) -> str:
            return render(data, m, g.region({dims[0] or "y": "wb_r", dims[1] or "x": c},
                                            acc=False))
        out += [f"#if {n['VEC']} == {VEC_WIDTH}",
                *vector_loop(vec, at, scalar, rows=e0, cols=e1, threads=f"{tx_} * {ty_}",
                             ind=ind2),
                "#else", *loop_as_written, "#endif"]
    out.append(f"{ind2}__syncthreads();")
    # the real thread (tx, ty) runs the virtual threads of its TM x TN register tile: strided
    # by the thread counts (as the kernel's own threads sit at TM = TN = 1), or contiguous
    # (its TM rows / TN columns adjacent: the k loop reads them as one vector of shared
    # values). The virtual threads are independent, so every mapping computes the same.
    contig = n["CONTIG_TILE"]
    tx, ty = (f"(threadIdx.x % {tx_})", f"(threadIdx.x / {tx_})") if one_d else \
        ("threadIdx.x", "threadIdx.y")
    virtual = {"x": f"({contig} ? {tx} * {tn} + wb_j : {tx} + wb_j * {tx_})",
               "y": f"({contig} ? {ty} * {tm} + wb_i : {ty} + wb_i * {ty_})"}
    per_item = g.region(virtual, acc=True)
    loops_ij = ["#pragma unroll", f"for (int wb_i = 0; wb_i < {tm}; ++wb_i)",
                "#pragma unroll", f"for (int wb_j = 0; wb_j < {tn}; ++wb_j) {{"]
    compute = [c for c in parts.compute if c.type != "preproc_call"]
    inner = compute[0] if len(compute) == 1 and compute[0].type == "for_statement" else None
    inner_body = inner.child_by_field_name("body") if inner is not None else None
    if inner is not None and inner_body is not None and not any(
            g.mentions_thread(h) for h in loop_header(inner)) and \
            not _writes_shared_or_global(inner_body):
        head = render(data, inner, lambda m: "" if m == inner_body else g.role_sub(m))
        out += [f"{ind2}#pragma unroll", ind2 + head.rstrip() + " {"]
        out += [ind2 + "  " + x for x in loops_ij]
        out.append(ind2 + "    " + render(data, inner_body, per_item))
        out += [f"{ind2}  }}", f"{ind2}}}"]
        plan.note("REGISTER_TILE", True, "the inner product loop runs over k outside the "
                  "TM x TN register tile (each shared value read once per k)", inner)
    else:
        out += [ind2 + x for x in loops_ij]
        out += [ind2 + "  " + render(data, c, per_item) for c in parts.compute]
        out.append(f"{ind2}}}")
    out.append(f"{ind2}__syncthreads();")
    out += [ind2 + render(data, s, g.role_sub) for s in parts.after]
    out.append(f"{ind}}}")
    out += [ind + x for x in loops_ij]
    out += [ind + "  " + render(data, s, per_item) for s in parts.epilogue]
    out += [f"{ind}}}", "}"]
    text_out = "\n".join(out)
    plan.rw.replace(plan.body, text_out)
    plan.helper(f"#define {tx_} ({bn} / {tn})  // threads per block along x")
    plan.helper(f"#define {ty_} ({bm} / {tm})  // threads per block along y")
    # the grid's x / y follow the block extent of the output dimension their index offsets
    along_x, along_y = (bn, bm) if g.rows_from == ROWS_FROM_Y else (bm, bn)
    plan.grid[0] = scale_divisor(plan.grid[0], str(g.grid_divisor(0)), along_x) or \
        plan.grid[0]
    plan.grid[1] = scale_divisor(plan.grid[1], str(g.grid_divisor(1)), along_y) or \
        plan.grid[1]
    plan.block = [f"({bn} // {tn}) * ({bm} // {tm})", *plan.block[1:]] if one_d else \
        [f"{bn} // {tn}", f"{bm} // {tm}", *plan.block[2:]]
    plan.launch_bounds = f"({bn} / {tn}) * ({bm} / {tm})"
    where = f"{line(plan.body)}"
    tile_names = ", ".join(f"{tl.name}[{']['.join(role_ext[r] for r in tl.roles)}]"
                           for tl in g.tiles.values())
    rows, cols, depth = g.block_size["y"], g.block_size["x"], g.k_size
    for name, desc, size in ((bm, f"rows of the output per block (as written: {rows})", rows),
                             (bn, f"columns of the output per block (as written: {cols})",
                              cols)):
        plan.add_param(name, {"kind": "pow2", "min": min(16, size), "max": max(128, size),
                              "default": size, "description": desc},
                       f"{where}: blockIdx * {size} and the shared tiles")
    plan.add_param(bk, {"kind": "choice", "values": sorted({8, 16, 32, depth}),
                        "default": depth,
                        "description": f"depth of the shared tiles along k (as written: "
                                       f"{depth})"},
                   f"{line(loop)}: the loop over tiles")
    for name, dim in ((tm, "rows"), (tn, "columns")):
        plan.add_param(name, {"kind": "pow2", "min": 1, "max": 8, "default": 1,
                              "description": f"output {dim} per thread, accumulators in "
                                             "registers (as written: 1)"},
                       f"{line(g.accumulators[0].decl)}: accumulator "
                       f"{g.accumulators[0].name}")
    pad_default = max((tl.padded for tl in g.tiles.values()), default=0)
    if padded:
        plan.add_param(pad, {"kind": "choice", "values": sorted({0, 1, pad_default}),
                             "default": pad_default,
                             "description": "extra column of the tiles read along k "
                                            "(bank conflicts across rows of threads)"},
                       f"{line(padded[0].decl)}: __shared__ {padded[0].name}")
    else:
        pad = "0"
    if vectorized:
        vec_name = n["VEC"]
        plan.add_param(vec_name, {"kind": "choice", "values": [1, VEC_WIDTH], "default": 1,
                                  "description": f"{VEC_WIDTH}: float4 loads of the tiles "
                                                 "where a run of four is aligned and in "
                                                 "bounds (as written: 1)"},
                       f"{line(loop)}: the tiles' cooperative loads")
        plan.constrain(f"{vec_name} == 1 or (" + " and ".join(
            f"{e} % {VEC_WIDTH} == 0" for e in sorted(set(vectorized))) + ")")
    plan.constrain(f"{bm} % {tm} == 0 and {bn} % {tn} == 0")
    plan.constrain(f"({bm} // {tm}) * ({bn} // {tn}) >= 32")
    plan.constrain(f"({bm} // {tm}) * ({bn} // {tn}) <= 1024")
    plan.constrain(f"{tm} * {tn} <= 64")
    _narrow_to_gemm_practice(g, tm, tn, bm, bn, pad, padded)
    def tile_bytes(tl: Tile, order: tuple[int, int]) -> str:
        return f"{tl.elem_bytes} * " + " * ".join(
            f"({role_ext[tl.roles[o]]} + {pad})" if tl in padded and i == 1 and pad != "0"
            else role_ext[tl.roles[o]] for i, o in enumerate(order))
    smem = " + ".join(
        f"(1 - {g.transposed[tl.name]}) * {tile_bytes(tl, (0, 1))} + "
        f"{g.transposed[tl.name]} * {tile_bytes(tl, (1, 0))}" if tl.name in g.transposed
        else tile_bytes(tl, (0, 1)) for tl in g.tiles.values())
    plan.add_param(contig, {"kind": "choice", "values": [0, 1], "default": 0,
                            "description": f"1: a thread's {tm} x {tn} outputs are adjacent "
                                           "rows / columns (its operands one vector of "
                                           "shared values per k); 0: strided by the "
                                           "threads of the block (as written at TM = TN = "
                                           "1 both are the kernel's own threads)"},
                   f"{line(g.accumulators[0].decl)}: accumulator {g.accumulators[0].name}")
    for tl in padded:
        knob = g.transposed[tl.name]
        what = role_ext[tl.roles[0]]
        plan.add_param(knob, {"kind": "choice", "values": [0, 1], "default": 0,
                              "description": f"1: store {tl.name} k-major ([{bk}][{what} + "
                                             f"{pad}], transposed as it is loaded) so the "
                                             f"product reads it along its rows (as written: "
                                             "0)"},
                       f"{line(tl.decl)}: __shared__ {tl.name}")
    plan.constrain(f"{smem} <= {_MAX_SMEM}")
    plan.note("REGISTER_TILE", True, ("1-D block of THREADS_X * THREADS_Y threads (as written: a flat index split by / and %); " if one_d else "") + f"tiled product over shared tiles {tile_names}: each "
              f"thread computes {tm} x {tn} outputs in registers "
              f"({', '.join(a.name for a in g.accumulators)}); the tiles' extents, their "
              f"cooperative loads, the loop over k and the grid follow {bm}, {bn}, {bk}; "
              f"block = ({bn} / {tn}, {bm} / {tm})", loop)


# Registers one SM holds (64 K 32-bit registers on every NVIDIA SM since sm_50), and the
# fewest a register-tiled thread needs besides its accumulators and one k step's operands
# (addresses, indices, loop counters): ptxas -v on the lifted corpus GEMMs at sm_90 used
# 17..48 more than TM * TN + TM + TN (1 x 1: 29 registers, 4 x 4: 55, 8 x 8: 97..128).
_REGS_PER_SM = 65536
_REGS_BESIDES_TILE = 16


def _narrow_to_gemm_practice(g: Gemm, tm: str, tn: str, bm: str, bn: str, pad: str,
                             padded: list[Tile]) -> None:
    """Constraints that leave out register-tiled configs known to be slow, so a search of a
    few dozen evaluations spends them on configs that can be good; the kernel as written
    (TM = TN = 1) stays in the space with every layout knob as written.

    - Register blocking in both dimensions or none: a thread's TM x TN tile loads TM + TN
      shared values per k for TM * TN FMAs; a 1 x N (or N x 1) tile does fewer FMAs than
      loads (as many at 2 x 2), every SIMT SGEMM (CUTLASS, cuBLAS) blocks both.
    - Past a 32 x 32 block tile, register tiles of at least two FMAs per shared load
      (4 x 4 and up): there a 4 x 4 tile covers the block with at most 256 threads and twice
      the FMAs per load of 2 x 2 / 2 x 4 tiles, which need 512 - 1024 threads for it; the
      small tiles stay for small block tiles (small or batched matrices, many blocks).
    - A tile read along k in its inner index (``S[col][k]``, B of A . B^T) by the lanes of a
      warp, consecutive in the thread's column, is an 8- to 32-way bank conflict at BK = 8 ..
      32 unless padded (odd row stride) or stored k-major; a register tile multiplies those
      reads, so one of the two is required once TM * TN > 1.
    - A register cap (MIN_BLOCKS_PER_SM blocks of the block's threads on one SM's 64 K
      registers) below the accumulators and operands a thread holds forces spills.
    """
    plan = g.plan
    plan.constrain(f"{tm} * {tn} == 1 or ({tm} >= 2 and {tn} >= 2)")
    plan.constrain(f"{tm} * {tn} >= 2 * ({tm} + {tn}) or {bm} * {bn} <= 1024")
    for tl in padded:
        if tl.roles[0] == "x" and pad != "0":
            plan.constrain(f"{tm} * {tn} == 1 or {g.transposed[tl.name]} == 1 or {pad} >= 1")
    if _min_blocks_knob(plan):
        plan.constrain(f"MIN_BLOCKS_PER_SM * ({bm} // {tm}) * ({bn} // {tn}) * "
                       f"({tm} * {tn} + {tm} + {tn} + {_REGS_BESIDES_TILE}) <= {_REGS_PER_SM}")


def _min_blocks_knob(plan: Plan) -> bool:
    """Whether the semantic pass will add MIN_BLOCKS_PER_SM (it does unless the author's
    ``__launch_bounds__`` already names a minimum of blocks; see semantic._launch_bounds)."""
    fn = plan.source.function_node(plan.kernel)
    bounds = next((c for c in fn.children if c.type == "launch_bounds"), None)
    return bounds is None or len(bounds.named_children) <= 1


def _vector_store(g: Gemm, stmt: Node, dims: list[str | None]) -> VectorStore | None:
    """The vector form of one cooperative store, or None (the reason noted under VEC)."""
    def at(r: int, c: int) -> Callable[[Node], int | Node | None]:
        pos = {dims[0] or "y": r, dims[1] or "x": c}

        def leaf(n: Node) -> int | Node | None:
            d = g.thread_dim(n)
            if d is not None:
                return pos.get(d, 0)
            if n.type == "identifier":
                lo = g.locals.get(text(n))
                if text(n) in g.inlinable and lo is not None and lo.value is not None:
                    return lo.value
                if lo is None:
                    return int_value(n)  # a macro's value; None: a parameter
            return None
        return leaf

    def runs_along_row(index: Node) -> bool | None:
        return unit_stride(index, at)
    try:
        return analyse_store(stmt, float_pointers(g.plan, g.body), set(g.tiles),
                             runs_along_row)
    except NotVector as exc:
        g.plan.note("VEC", False, f"{exc}: the tile's loads stay scalar", stmt)
        return None


def _writes_shared_or_global(node: Node) -> bool:
    for n in walk(node):
        if n.type == "assignment_expression":
            left = n.child_by_field_name("left")
            if left is not None and strip(left).type != "identifier":
                return True
    return False
