"""Rendering of a register-tiled GEMM (:mod:`.regtile` analyses; this module writes).

Every thread of the kernel as written becomes one virtual thread of a ``(BN, BM)`` tile: a
real thread runs ``TM x TN`` of them, strided by the block's threads, with their accumulators
in registers; the shared tiles take their extents from the role of each index (``[BK][BN]``),
a tile read along k in its inner index stored k-major with an odd row length
(``[BK][BM + 1]``, transposed as it is loaded); each cooperative store becomes a loop of all
threads over the tile's positions, a fixed number per thread (with a float4 path at
``VEC == 4`` where :mod:`.regtile_vec` proves the store's form, its loads of the tiles
stored together issued before their shared stores); the grid's x / y follow BN / BM, any other
grid dimension is kept as written; ``__launch_bounds__`` names the block's threads. The
parameters and constraints, and why the mapping, the layout and the register cap are not
among them: :mod:`.regtile_space`.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import line, strip, text, walk
from workbench.templater.regtile import Gemm, Tile, fresh_names, render
from workbench.templater.regtile_analysis import (
    Parts,
    decl_name,
    loop_header,
    render_exit,
    store_target,
)
from workbench.templater.regtile_exit import BlockExit, constrain_exits
from workbench.templater.regtile_order import thread_leaves, walks_rows
from workbench.templater.regtile_pairing import ROWS_FROM_Y
from workbench.templater.regtile_space import (
    KMAJOR_PAD,
    SpaceNames,
    WrittenSizes,
    add_space,
    bind_launch_bounds,
)
from workbench.templater.regtile_vec import (
    HALF_TYPES,
    VEC_WIDTH,
    NotVector,
    VectorLoop,
    VectorStore,
    analyse_store,
    float_pointers,
    per_thread_loop,
    unit_stride,
    vector_loop,
    vector_section,
)
from workbench.templater.rules import scale_divisor


def emit_register_tile(g: Gemm, loop: Node) -> None:
    """Rewrite the kernel body of ``g`` (analysed in :mod:`.regtile`) as its
    register-tiled template: parameters, constraints, launch rules and findings (the space
    and what it decides rather than searches: :mod:`.regtile_space`)."""
    plan = g.plan
    n = fresh_names(plan, ["BM", "BN", "BK", "TM", "TN", "THREADS_X", "THREADS_Y", "VEC"])
    g.names = n
    # a tile read along k in its inner index is stored k-major with an odd row length;
    # every access to it swaps its two indices (Gemm.region)
    g.transposed = {tl.name for tl in g.tiles.values() if tl.roles[-1] == "k"}
    w = _Writer(g, n)
    out = ["{", *w.tile_decls(), *w.prologue()]
    body = loop.child_by_field_name("body")
    assert body is not None
    out.append(w.ind + render(g.data, loop, lambda m: "" if m == body else g.uniform_sub(m))
               .rstrip() + " {")
    out += w.stores()
    out.append(f"{w.ind2}__syncthreads();")
    out += w.compute()
    out.append(f"{w.ind2}__syncthreads();")
    out += [w.ind2 + render(g.data, s, g.uniform_sub) for s in w.parts.after]
    out.append(f"{w.ind}}}")
    out += w.epilogue()
    out.append("}")
    plan.rw.replace(plan.body, "\n".join(out))
    _launch(g, n)
    space = SpaceNames(n["BM"], n["BN"], n["BK"], n["TM"], n["TN"], n["VEC"])
    add_space(plan, space, WrittenSizes(g.block_size["y"], g.block_size["x"], g.k_size),
              where=f"{line(plan.body)}", loop=loop, acc=g.accumulators[0].decl,
              acc_name=g.accumulators[0].name, vectorized=w.vectorized, staged=w.staged,
              smem=w.smem_bytes(),
              vec_width=w.vec_width or VEC_WIDTH)
    constrain_exits(plan, w.parts.exits, n["BM"], n["BN"])
    if g.k_step > 1:  # a hand-unrolled loop over k reads k .. k + step - 1 of each tile
        plan.constrain(f"{n['BK']} % {g.k_step} == 0")
    _findings(g, n, loop)


class _Writer:
    """The pieces of the rewritten body, rendered from the analysed ``Gemm``."""

    ind, ind2 = "  ", "    "

    def __init__(self, g: Gemm, n: dict[str, str]) -> None:
        self.g, self.n, self.data = g, n, g.data
        self.parts: Parts = g.parts  # type: ignore[attr-defined]
        self.role_ext = {"y": n["BM"], "x": n["BN"], "k": n["BK"]}
        self.threads = f"{n['THREADS_X']} * {n['THREADS_Y']}"
        self.vectorized: list[str] = []  # the inner extents of the tiles loaded with float4
        self.staged: list[str] = []  # their elements (rows * columns), held before stored
        # elements per 16-byte load of the vectorized tiles (4 floats, 8 halves): one VEC
        # knob has one meaning, so a store of another width keeps its scalar loads
        self.vec_width: int | None = None
        self.one_d = g.split is not None  # a 1-D block of THREADS_X * THREADS_Y threads
        # the tiles whose store walks their rows first, padded a word a row unless stored
        # k-major (:mod:`.regtile_order`)
        self.row_walks = {t[0] for s in self.parts.stores if s.type != "declaration"
                          and (t := g.access(store_target(g.store_of(s))[0])) is not None
                          and not g.tiles[t[0]].flat
                          and walks_rows(g, g.store_of(s), g.position_dims(t[1]))}

    def extents(self, tl: Tile) -> list[str]:
        """The tile's extents as declared: ``[BK][rows + 1]`` stored k-major, else by the
        role of each index as written."""
        if tl.name in self.g.transposed:
            return [self.role_ext["k"], f"{self.role_ext[tl.roles[0]]} + {KMAJOR_PAD}"]
        if tl.name in self.row_walks:
            return [self.role_ext[tl.roles[0]], f"{self.role_ext[tl.roles[1]]} + {KMAJOR_PAD}"]
        return [self.role_ext[r] for r in tl.roles]

    def tile_decls(self) -> list[str]:
        out = []
        for tl in self.g.tiles.values():
            sizes = self.extents(tl)
            ext = {(tl.extents[0].start_byte, tl.extents[0].end_byte): "][".join(sizes)} \
                if tl.flat else {(tl.extents[i].start_byte, tl.extents[i].end_byte): sizes[i]
                                 for i in range(2)}  # a flat tile is declared 2-D
            # 16-byte aligned rows where unpadded, so the four stores of a float4 load can
            # merge (alignas first: a standard attribute nvcc and a host compiler both take)
            aligned = "__align__" in text(tl.decl) or "alignas" in text(tl.decl)
            out.append(self.ind + ("" if aligned else "alignas(16) ") +
                       render(self.data, tl.decl, _spans(ext)))
        return out

    def smem_bytes(self) -> str:
        return " + ".join(f"{tl.elem_bytes} * " + " * ".join(
            f"({e})" if "+" in e else e for e in self.extents(tl))
            for tl in self.g.tiles.values())

    def prologue(self) -> list[str]:
        g, ind, tm, tn = self.g, self.ind, self.n["TM"], self.n["TN"]
        out = []
        acc_decls = {a.decl for a in g.accumulators}
        for s in self.parts.prologue:
            leave = next((ex for ex in self.parts.exits if ex.statement == s), None)
            if leave is not None:
                out += self.block_exit(leave)
                continue
            if s.type == "declaration" and (
                    any(text(c) == "__shared__" for c in s.children) or s in acc_decls):
                continue
            names = [decl_name(d) for d in s.children_by_field_name("declarator")] \
                if s.type == "declaration" else []
            if names and all(x in g.inlinable for x in names):
                continue  # thread-dependent: inlined where used
            if names and all(x in g.constants for x in names):
                continue  # ``const int TILE = 16;``: every use is rewritten by its role
            out.append(ind + render(self.data, s, g.role_sub))
        for a in g.accumulators:
            typ = self.data[a.decl.start_byte:a.decl.children_by_field_name("declarator")[0]
                            .start_byte].decode().strip()
            init = render(self.data, a.value, g.role_sub) if a.value is not None else "0"
            out += [f"{ind}{typ} {a.name}[{tm}][{tn}];",
                    f"{ind}for (int wb_i = 0; wb_i < {tm}; ++wb_i)",
                    f"{ind}  for (int wb_j = 0; wb_j < {tn}; ++wb_j) "
                    f"{a.name}[wb_i][wb_j] = {init};"]
        for wk in g.walks.values():
            # the steps the walking local has taken (:mod:`.regtile_walk`)
            out.append(f"{ind}{wk.offset_type} {wk.offset} = 0;")
        out.append(f"{ind}const int wb_tid = " + (
            "threadIdx.x;" if self.one_d else f"threadIdx.y * {self.n['THREADS_X']} + "
                                              "threadIdx.x;"))
        return out

    def block_exit(self, leave: BlockExit) -> list[str]:
        """A whole block's exit: each virtual thread's statements, then the return."""
        ind, ind2 = self.ind, self.ind2
        per_item = self.per_item()
        body = [*(ind2 + x for x in self.loops_ij()),
                *(ind2 + "  " + render(self.data, s, per_item) for s in leave.body),
                f"{ind2}}}"] if leave.body else []
        return [f"{ind}if ({render(self.data, leave.test, self.g.role_sub)}) {{", *body,
                f"{ind2}return;", f"{ind}}}"]

    def stores(self) -> list[str]:
        """The cooperative stores in order; consecutive ones that take the float4 path share
        one ``#if VEC == 4`` section whose global loads all come before their shared stores."""
        g, ind2 = self.g, self.ind2
        out: list[str] = []
        run: list[tuple[list[str], VectorLoop]] = []  # (scalar loop, vector loop) per store
        for s in self.parts.stores:
            if s.type == "declaration":
                names = [decl_name(d) for d in s.children_by_field_name("declarator")]
                if not all(x in g.inlinable for x in names):
                    out += self._vector_section(run)
                    run = []
                    out.append(ind2 + render(self.data, s, g.role_sub))
                continue
            scalar, vec = self.store(g.store_of(s), tag=str(len(self.vectorized)))
            if vec is None:
                out += self._vector_section(run) + scalar
                run = []
            else:
                run.append((scalar, vec))
        return out + self._vector_section(run)

    def _vector_section(self, run: list[tuple[list[str], VectorLoop]]) -> list[str]:
        if not run:
            return []
        ind2 = self.ind2
        return [f"#if {self.n['VEC']} == {self.vec_width or VEC_WIDTH}",
                *(ind2 + x for x in vector_section([v for _, v in run], self.n["VEC"])),
                "#else", *(x for scalar, _ in run for x in scalar), "#endif"]

    def store(self, s: Node, tag: str) -> tuple[list[str], VectorLoop | None]:
        """One cooperative store as a loop of all threads over the tile's positions (its
        loop as written, if any, is that loop), and its float4 path where it has one."""
        g, ind2 = self.g, self.ind2
        target = g.access(store_target(s)[0])
        assert target is not None
        tile = g.tiles[target[0]]
        dims = g.position_dims(target[1])
        e0, e1 = self.role_ext[tile.roles[0]], self.role_ext[tile.roles[1]]
        scalar = render(self.data, s, g.region({dims[0] or "y": "wb_r", dims[1] or "x": "wb_c"},
                                               acc=False))
        threads = f"({self.threads})"
        rows_first = tile.name in self.row_walks
        position = f"const int wb_r = wb_e % ({e0}), wb_c = wb_e / ({e0});" if rows_first \
            else f"const int wb_r = wb_e / ({e1}), wb_c = wb_e % ({e1});"
        loop_as_written = [ind2 + x for x in per_thread_loop(e0, e1, threads, [position, scalar])]
        vec = _vector_store(g, s, dims)  # None (noted) where the reads run down the columns
        if rows_first:
            return loop_as_written, None
        if vec is not None and self.vec_width not in (None, vec.width):
            g.plan.note("VEC", False, f"the store loads {vec.width} elements a 16-byte load "
                        f"where another tile's loads take {self.vec_width}: one VEC knob, one "
                        "width; this tile's loads stay scalar", s)
            vec = None
        if vec is None:
            return loop_as_written, None
        self.vec_width = vec.width
        self.vectorized.append(e1)
        self.staged.append(f"{e0} * {e1}")

        def at(m: Node, c: str) -> str:
            return render(self.data, m, g.region({dims[0] or "y": "wb_r", dims[1] or "x": c},
                                                 acc=False))
        return loop_as_written, vector_loop(vec, at, scalar, rows=e0, cols=e1, threads=threads,
                                            tag=tag)

    def per_item(self) -> Callable[[Node], str | None]:
        """The real thread (tx, ty) runs the virtual threads of its TM x TN register tile,
        strided by the block's threads (as the kernel's own threads sit at TM = TN = 1): a
        warp's lanes read consecutive words of a tile row per k and store consecutive
        columns. The virtual threads are independent, so the mapping computes the same."""
        tx_, ty_ = self.n["THREADS_X"], self.n["THREADS_Y"]
        tx, ty = (f"(threadIdx.x % {tx_})", f"(threadIdx.x / {tx_})") if self.one_d else \
            ("threadIdx.x", "threadIdx.y")
        return self.g.region({"x": f"({tx} + wb_j * {tx_})", "y": f"({ty} + wb_i * {ty_})"},
                             acc=True)

    def loops_ij(self) -> list[str]:
        tm, tn = self.n["TM"], self.n["TN"]
        return ["#pragma unroll", f"for (int wb_i = 0; wb_i < {tm}; ++wb_i)",
                "#pragma unroll", f"for (int wb_j = 0; wb_j < {tn}; ++wb_j) {{"]

    def compute(self) -> list[str]:
        g, ind2, per_item = self.g, self.ind2, self.per_item()
        compute = [c for c in self.parts.compute if c.type != "preproc_call"]
        inner = compute[0] if len(compute) == 1 and compute[0].type == "for_statement" else None
        inner_body = inner.child_by_field_name("body") if inner is not None else None
        if inner is None or inner_body is None or any(
                g.mentions_thread(h) for h in loop_header(inner)) or \
                _writes_shared_or_global(inner_body):
            return [*(ind2 + x for x in self.loops_ij()),
                    *(ind2 + "  " + render(self.data, c, per_item) for c in self.parts.compute),
                    f"{ind2}}}"]
        head = render(self.data, inner, lambda m: "" if m == inner_body else g.role_sub(m))
        g.plan.note("REGISTER_TILE", True, "the inner product loop runs over k outside the "
                    "TM x TN register tile (each shared value read once per k)", inner)
        return [f"{ind2}#pragma unroll", ind2 + head.rstrip() + " {",
                *(ind2 + "  " + x for x in self.loops_ij()),
                ind2 + "    " + render(self.data, inner_body, per_item),
                f"{ind2}  }}", f"{ind2}}}"]

    def epilogue(self) -> list[str]:
        per_item = self.per_item()

        def sub(m: Node) -> str | None:
            return render_exit(m) or per_item(m)
        return [*(self.ind + x for x in self.loops_ij()),
                *(self.ind + "  " + render(self.data, s, sub) for s in self.parts.epilogue),
                f"{self.ind}}}"]


def _spans(texts: dict[tuple[int, int], str]) -> Callable[[Node], str | None]:
    """Substitution of the nodes at the given byte spans."""
    return lambda m: texts.get((m.start_byte, m.end_byte))


def _launch(g: Gemm, n: dict[str, str]) -> None:
    """Block, grid and ``__launch_bounds__`` of the register-tiled kernel."""
    plan = g.plan
    bm, bn, tm, tn = n["BM"], n["BN"], n["TM"], n["TN"]
    plan.helper(f"#define {n['THREADS_X']} ({bn} / {tn})  // threads per block along x")
    plan.helper(f"#define {n['THREADS_Y']} ({bm} / {tm})  // threads per block along y")
    # the grid's x / y follow the block extent of the output dimension their index offsets
    along_x, along_y = (bn, bm) if g.rows_from == ROWS_FROM_Y else (bm, bn)
    plan.grid[0] = scale_divisor(plan.grid[0], str(g.grid_divisor(0)), along_x) or \
        plan.grid[0]
    plan.grid[1] = scale_divisor(plan.grid[1], str(g.grid_divisor(1)), along_y) or \
        plan.grid[1]
    plan.block = [f"({bn} // {tn}) * ({bm} // {tm})", *plan.block[1:]] \
        if g.split is not None else [f"{bn} // {tn}", f"{bm} // {tm}", *plan.block[2:]]
    bind_launch_bounds(plan, f"({bn} / {tn}) * ({bm} / {tm})")


def _findings(g: Gemm, n: dict[str, str], loop: Node) -> None:
    plan = g.plan
    bm, bn, bk, tm, tn = (n[k] for k in ("BM", "BN", "BK", "TM", "TN"))
    role_ext = {"y": bm, "x": bn, "k": bk}
    tile_names = ", ".join(f"{tl.name}[{']['.join(role_ext[r] for r in tl.roles)}]"
                           for tl in g.tiles.values())
    plan.note("REGISTER_TILE", True, (
        "1-D block of THREADS_X * THREADS_Y threads (as written: a flat index split by / and "
        "%); " if g.split is not None else "") + f"tiled product over shared tiles "
        f"{tile_names}: each thread computes {tm} x {tn} outputs in registers "
        f"({', '.join(a.name for a in g.accumulators)}), strided by the block's threads; the "
        f"tiles' extents, their cooperative loads, the loop over k and the grid follow {bm}, "
        f"{bn}, {bk}; block = ({bn} / {tn}, {bm} / {tm})", loop)
    for wk in g.walks.values():
        plan.note("REGISTER_TILE", True, f"`{wk.name}` is set per thread before the loop and "
                  "stepped along k by the same amount for every thread: each read is its "
                  "value at the output the register tile computes plus one uniform offset "
                  f"({wk.offset}) stepped where the kernel as written steps it", wk.decl)
    for tl in g.tiles.values():
        if tl.name in g.transposed:
            plan.note("REGISTER_TILE", True, f"{tl.name} is read along k in its inner index: "
                      f"stored k-major [{bk}][{role_ext[tl.roles[0]]} + {KMAJOR_PAD}] "
                      "(transposed as it is loaded), so each k reads consecutive words "
                      "across a warp and the transposing stores land on distinct banks",
                      tl.decl)


def _vector_store(g: Gemm, stmt: Node, dims: list[str | None]) -> VectorStore | None:
    """The vector form of one cooperative store, or None (the reason noted under VEC)."""
    def at(r: int, c: int) -> Callable[[Node], int | Node | None]:
        return thread_leaves(g, dims, r, c)

    def runs_along_row(index: Node, width: int, pointer: Node | None) -> bool | None:
        return unit_stride(index, at, width=width, pointer=pointer)
    try:
        return analyse_store(stmt, float_pointers(g.plan, g.body), set(g.tiles),
                             runs_along_row,
                             float_pointers(g.plan, g.body, HALF_TYPES, "fp16"))
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
