"""Column reductions to partial rows: BLOCK_X, BLOCK_Y, CHUNKS / ROWS_PER_CHUNK, VEC,
ROW_UNROLL.

The family and how it is recognised are in :mod:`workbench.templater.colreduce_match`:
each thread sums one column of some rows of a row-major matrix; block row ``blockIdx.y``
writes one partial row ``out[blockIdx.y * LD + col]``; the host adds the partial rows. The
kernel's body is regenerated from what the analysis read (the summed value ``E`` with its
reads of the matrix at (row, column), the width, the row count, the output and its row
stride), so every knob below is a property of that one body:

* BLOCK_X, BLOCK_Y: the block (threads along the columns, threads down the rows); the
  BLOCK_Y sums of a column are folded through shared memory (a tree that halves the live
  rows, any BLOCK_Y); with BLOCK_Y = 1 the sum is stored directly.
* CHUNKS (a grid-stride walk over rows): the grid's y extent, the partial rows written,
  at most the extent as written (the buffer holds that many rows, as far as the analysis
  knows); ROWS_PER_CHUNK (a fixed slice of rows per block row): at least the slice as
  written, so no more partial rows than written. Either way block row 0 writes zero into
  the partial rows of block rows not launched, so every column's total over the partial
  rows as written is the column's sum at every config (the sum's order changes; integer
  valued inputs stay exact). The layout of the partials changes with the config: the
  folder compares them by their sum (``compare = "sum"``) or reference.py's ``verify``.
  Where it compares a fixed slice's partial rows element by element, the slice is kept as
  written (no ROWS_PER_CHUNK): each partial row adds the rows it adds as written, only in
  another order (the other knobs); a grid-stride walk's is refused (BLOCK_Y moves rows
  between partial rows).
* VEC: each thread sums VEC adjacent columns, each matrix row's VEC elements read as one
  aligned vector where the row stride is a multiple of VEC and the pointer is aligned
  (tested at run time), element by element otherwise and at the right edge.
* ROW_UNROLL: rows in flight per thread per step, each into its own accumulators, added at
  the end.

One row walk may feed several sums (LayerNorm backward's ``sg += dy * xhat; sb += dy;``),
each stored directly to its own partial rows: they share the loads, each has its own
accumulators, fold and store.

At the defaults (the block, the grid, one column and one row at a time) each thread adds
the same rows of the same column as the kernel as written, and the same slots are written.
"""

from __future__ import annotations

from collections.abc import Collection

from tree_sitter import Node

from workbench.templater.analysis import text, walk
from workbench.templater.colreduce_match import ColumnReduction, PartialSum, recognise
from workbench.templater.plan import Plan
from workbench.templater.regtile import (
    Refused,
    fresh_names,
    render,
    single_assignment_values,
)
from workbench.templater.rules import scale_divisor
from workbench.templater.vector import VEC_STRUCT

NAME = "COLUMN_PARTIALS"
_LOAD = """template <typename T, int N>
__device__ __forceinline__ void wb_load_cols(T (&v)[N], const T* p, bool packed, int left) {
  // N adjacent elements from p: one aligned vector when `packed`, else one by one (the
  // lanes past the matrix's right edge read as zero and are never stored)
  if (N > 1 && packed) {
    const WbVec<T, N> q = *reinterpret_cast<const WbVec<T, N>*>(p);
#pragma unroll
    for (int e = 0; e < N; ++e) v[e] = q.v[e];
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) v[e] = e < left ? p[e] : T(0);
  }
}"""
_BYTES = {"float": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "double": 8, "__half": 2,
          "half": 2, "__nv_bfloat16": 2, "long long": 8, "unsigned long long": 8,
          "short": 2, "char": 1, "unsigned char": 1, "signed char": 1}


def is_candidate(plan: Plan) -> bool:
    """The family's outline: a 2-D grid, a loop whose walk reads blockIdx.y or gridDim.y
    (through locals: the row walk) and a store to a kernel array whose index reads
    blockIdx.y (the partial row). Only such kernels get a refusal noted."""
    if len(plan.grid) != 2:
        return False
    values = single_assignment_values(plan.body, set())

    def by(node: Node | None, depth: int = 0) -> bool:
        if node is None or depth > 6:
            return False
        for n in walk(node):
            if n.type == "field_expression" and text(n) in ("blockIdx.y", "gridDim.y"):
                return True
            if n.type == "identifier" and text(n) in values and by(values[text(n)], depth + 1):
                return True
        return False

    walks = any(n.type in ("for_statement", "while_statement") and (
        by(n.child_by_field_name("initializer")) or by(n.child_by_field_name("condition")) or
        by(n.child_by_field_name("update"))) for n in walk(plan.body))
    stores = any(n.type == "assignment_expression" and (left := n.child_by_field_name("left"))
                 is not None and left.type == "subscript_expression" and by(left)
                 for n in walk(plan.body))
    return walks and stores


def lift_colreduce(plan: Plan, compared_by_total: Collection[str] | None = None) -> bool:
    """Apply the column-partials family where the kernel has its shape; True when it did.
    A kernel of the family's outline that differs is refused with the reason and the line
    (and left to the other transforms). ``compared_by_total`` names the outputs the kernel
    folder compares by a reduced quantity (``compare = "sum"``, or every output when
    reference.py defines ``verify``); None where no folder says (the lift then rests on each
    column's total being unchanged). A partial output the folder compares element by
    element is refused: the layout of the partials changes with the config."""
    if not is_candidate(plan):
        return False
    try:
        red = recognise(plan)
        outs = [ps.out for ps in red.sums]
        by_element = [o for o in outs if compared_by_total is not None and
                      o not in compared_by_total]
        if by_element and red.mode != "slice":
            raise Refused(f"the partial rows `{by_element[0]}` are compared element by element "
                          "(kernel.toml has no compare = \"sum\" for it and reference.py no "
                          "verify()), and which rows a partial of a grid-stride walk adds "
                          "changes with the block's rows: compare them by their sum or "
                          "verify() to lift the family", red.sums[outs.index(by_element[0])].store)
        _emit(plan, red, fixed_slice=bool(by_element))
    except Refused as exc:
        plan.note(NAME, False, exc.reason, exc.node)
        return False
    return True


def _emit(plan: Plan, red: ColumnReduction, fixed_slice: bool) -> None:
    """``fixed_slice``: the partial rows are compared element by element, so each keeps the
    slice of rows it adds as written (ROWS_PER_CHUNK is not lifted; only the order of the
    adds changes with the block's rows and the rows in flight)."""
    slice_mode = red.mode == "slice"
    names = fresh_names(plan, ["BLOCK_X", "BLOCK_Y", "ROWS_PER_CHUNK" if slice_mode
                               else "CHUNKS", "VEC", "ROW_UNROLL"])
    if fixed_slice:
        names["ROWS_PER_CHUNK"] = str(red.rows_per_chunk)
    bx, by, rows_knob, vec, unroll = names.values()
    grid_x = scale_divisor(plan.grid[0], str(red.block_x), f"{bx} * {vec}")
    if grid_x is None:
        raise Refused(f"the grid's x extent `{plan.grid[0]}` is not ceil_div(columns, "
                      f"{red.block_x}) (one block per {red.block_x} columns)", red.loop)
    if slice_mode:
        grid_y = scale_divisor(plan.grid[1], str(red.rows_per_chunk), rows_knob)
        assert grid_y is not None  # the matcher checked the ceil_div
        written = f"(({red.rows}) + {red.rows_per_chunk} - 1) / {red.rows_per_chunk}"
    else:
        grid_y = rows_knob
        written = str(red.chunks)
    sizes = {_BYTES.get(r.c_type) for r in red.reads}
    if None in sizes:
        raise Refused(f"the matrix element type `{red.reads[0].c_type}` has no known size",
                      red.reads[0].node)
    widest = max(s for s in sizes if s is not None)
    acc_bytes = _BYTES.get(red.acc_type, 8)
    plan.helper(VEC_STRUCT)
    plan.helper(_LOAD)
    plan.rw.replace(plan.body, _body(plan, red, names, written))
    plan.grid = [grid_x, grid_y]
    plan.block = [bx, by]
    if any(c.type == "launch_bounds" for c in plan.source.function_node(plan.kernel).children):
        plan.launch_bounds = f"{bx} * {by}"
    _params(plan, red, names, widest, fixed_slice)
    plan.constrain(f"{bx} * {by} >= 32")
    plan.constrain(f"{bx} * {by} <= 1024")
    plan.constrain(f"{acc_bytes * len(red.sums)} * {by} * {bx} * {vec} <= 49152")
    plan.constrain(f"{vec} * {unroll} <= 16")
    plan.constrain(f"{vec} * {widest} <= 16")
    where = "a grid-stride walk over rows" if not slice_mode else \
        f"a slice of {red.rows_per_chunk} rows per block row"
    fold = {"none": "stored directly", "halving": "folded by a halving tree",
            "serial": "folded by thread row 0"}[red.tree]
    plan.note(NAME, True, f"each thread sums one column over {where} into a partial row of "
              f"`{'`, `'.join(ps.out for ps in red.sums)}` (the block's row sums {fold}); the kernel is regenerated with "
              f"the block ({bx} x {by}), the partial rows ({rows_knob}), {vec} adjacent "
              f"columns per thread and {unroll} rows in flight; " + (
                  "block row 0 writes zero into the partial rows not launched, so each "
                  "column's total over the partial rows as written is unchanged (compare the "
                  "partials by their sum or verify())" if not fixed_slice else
                  "each partial row adds the rows it adds as written (the slice is not "
                  "lifted: the partials are compared element by element)"), red.loop)


def _params(plan: Plan, red: ColumnReduction, names: dict[str, str], widest: int,
            fixed_slice: bool) -> None:
    bx, by, rows_knob, vec, unroll = names.values()
    origin = f"{red.loop.start_point.row + 1}: {text(red.loop).splitlines()[0].strip()}"
    plan.add_param(bx, {"kind": "choice", "values": sorted({16, 32, 64, 128, 256,
                                                            red.block_x}),
                        "default": red.block_x,
                        "description": f"threads per block along the columns (as written: "
                                       f"{red.block_x})"}, origin)
    plan.add_param(by, {"kind": "choice", "values": sorted({1, 2, 4, 8, 16, 32, red.block_y}),
                        "default": red.block_y,
                        "description": f"threads per block down the rows, their sums folded "
                                       f"through shared memory (as written: {red.block_y})"},
                   origin)
    if red.mode == "slice" and not fixed_slice:
        k = red.rows_per_chunk
        plan.add_param(rows_knob, {"kind": "choice", "values": [k, 2 * k, 4 * k, 8 * k],
                                   "default": k,
                                   "description": f"rows per block row (one partial row "
                                                  f"each; as written: {k}); more rows, fewer "
                                                  "partial rows, the rest written as zero"},
                       origin)
    elif red.mode != "slice":
        c = red.chunks
        values = sorted({v for v in (c // 8, c // 4, c // 2, c) if v >= 1})
        plan.add_param(rows_knob, {"kind": "choice", "values": values, "default": c,
                                   "description": f"row chunks = partial rows written = the "
                                                  f"grid's y extent (as written: {c}); the "
                                                  "rows of chunks not launched written as "
                                                  "zero"}, origin)
    plan.add_param(vec, {"kind": "choice", "values": [v for v in (1, 2, 4)
                                                      if v * widest <= 16],
                         "default": 1,
                         "description": "adjacent columns per thread, each row's read as one "
                                        "aligned vector where the stride allows (as "
                                        "written: 1)"}, origin)
    plan.add_param(unroll, {"kind": "choice", "values": [1, 2, 4], "default": 1,
                            "description": "rows in flight per thread per step, each into "
                                           "its own accumulators (as written: 1)"}, origin)


def _body(plan: Plan, red: ColumnReduction, names: dict[str, str], written: str) -> str:
    """The regenerated kernel body; the first sum's locals are ``wb_acc``, ``wb_tot`` and
    ``wb_red``, the k-th's more carry ``k`` (``wb_acc1``): one row walk feeds them all."""
    bx, by, rows_knob, vec, unroll = names.values()
    a = red.acc_type
    data = plan.source.data
    reads = {r.node.start_byte: k for k, r in enumerate(red.reads)}
    tags = [str(k) if k else "" for k in range(len(red.sums))]

    def sub(n: Node) -> str | None:
        k = reads.get(n.start_byte)
        if k is not None and n.end_byte == red.reads[k].node.end_byte:
            return f"wb_v{k}[wb_e]"
        return None

    values = [render(data, ps.value, sub) for ps in red.sums]
    locals_ = [render(data, d, sub).strip() for d in red.locals_]
    loads = "\n".join(
        f"        {r.c_type} wb_v{k}[{vec}];\n"
        f"        wb_load_cols<{r.c_type}, {vec}>(wb_v{k}, {r.ptr} + (size_t)wb_row * "
        f"({r.ld}) + wb_col, wb_packed, wb_left);" for k, r in enumerate(red.reads))
    packed = " && ".join(
        [f"({r.ld}) % {vec} == 0 && (size_t)({r.ptr}) % ({vec} * sizeof({r.c_type})) == 0"
         for r in red.reads])
    inner = "\n".join(f"          {lo}" for lo in locals_)
    zeros = " ".join(f"wb_acc{t}[wb_u][wb_e] = ({a})0;" for t in tags)

    def step(u: str) -> str:
        return (f"        const int wb_row = wb_r + {u} * wb_step;\n{loads}\n"
                f"#pragma unroll\n"
                f"        for (int wb_e = 0; wb_e < {vec}; ++wb_e) {{\n"
                + (inner + "\n" if inner else "") +
                "".join(f"          wb_acc{t}[{u}][wb_e] += {v};\n"
                        for t, v in zip(tags, values, strict=True)) +
                "        }\n")

    if red.mode == "slice":
        rows = (f"    const int wb_first = (int)blockIdx.y * {rows_knob};\n"
                f"    const int wb_step = {by};\n"
                f"    const int wb_end = min(wb_first + {rows_knob}, (int)({red.rows}));\n"
                f"    int wb_r = wb_first + (int)threadIdx.y;\n")
    else:
        rows = (f"    const int wb_step = (int)gridDim.y * {by};\n"
                f"    const int wb_end = {red.rows};\n"
                f"    int wb_r = (int)blockIdx.y * {by} + (int)threadIdx.y;\n")
    return (
        "{\n"
        f"  // one partial row per block row: {bx} x {by} threads, {vec} adjacent columns per "
        f"thread, {unroll} rows in flight\n"
        + "".join(f"  __shared__ {a} wb_red{t}[{by}][{bx} * {vec}];\n" for t in tags) +
        f"  const int wb_col = ((int)blockIdx.x * {bx} + (int)threadIdx.x) * {vec};\n"
        f"  const int wb_left = (int)({red.width}) - wb_col;  // columns inside the matrix\n"
        + "".join(f"  {a} wb_acc{t}[{unroll}][{vec}];\n" for t in tags) +
        "#pragma unroll\n"
        f"  for (int wb_u = 0; wb_u < {unroll}; ++wb_u)\n"
        "#pragma unroll\n"
        f"    for (int wb_e = 0; wb_e < {vec}; ++wb_e) "
        + (zeros if len(tags) == 1 else f"{{ {zeros} }}") + "\n"
        "  if (wb_left > 0) {\n"
        + rows +
        f"    const bool wb_packed = {vec} > 1 && wb_left >= {vec} && {packed};\n"
        f"    for (; wb_r + ({unroll} - 1) * wb_step < wb_end; wb_r += {unroll} * wb_step) {{\n"
        "#pragma unroll\n"
        f"      for (int wb_u = 0; wb_u < {unroll}; ++wb_u) {{\n"
        + step("wb_u") +
        "      }\n"
        "    }\n"
        "    for (; wb_r < wb_end; wb_r += wb_step) {\n"
        "      {\n"
        + step("0") +
        "      }\n"
        "    }\n"
        "  }\n"
        + "".join(_sum_tail(red, ps, t, names, written) for ps, t in zip(red.sums, tags,
                                                                          strict=True)) +
        "}")


def _sum_tail(red: ColumnReduction, ps: PartialSum, t: str, names: dict[str, str],
              written: str) -> str:
    """One sum's end: its rows in flight added, the block's rows folded, the partial row
    stored (and block row 0 zeroing the partial rows not launched)."""
    by, vec, unroll = names["BLOCK_Y"], names["VEC"], names["ROW_UNROLL"]
    a = red.acc_type
    out_at = f"{ps.out}[(size_t)wb_chunk * ({ps.out_ld}) + wb_col + wb_e]"
    return (
        f"  {a} wb_tot{t}[{vec}];\n"
        "#pragma unroll\n"
        f"  for (int wb_e = 0; wb_e < {vec}; ++wb_e) {{\n"
        f"    wb_tot{t}[wb_e] = wb_acc{t}[0][wb_e];\n"
        "#pragma unroll\n"
        f"    for (int wb_u = 1; wb_u < {unroll}; ++wb_u) wb_tot{t}[wb_e] += "
        f"wb_acc{t}[wb_u][wb_e];\n"
        "  }\n"
        f"  if ({by} > 1) {{  // the block's row sums of a column, folded\n"
        "#pragma unroll\n"
        f"    for (int wb_e = 0; wb_e < {vec}; ++wb_e)\n"
        f"      wb_red{t}[threadIdx.y][threadIdx.x * {vec} + wb_e] = wb_tot{t}[wb_e];\n"
        "    __syncthreads();\n"
        f"    for (int wb_n = {by}; wb_n > 1;) {{\n"
        "      const int wb_h = (wb_n + 1) / 2;\n"
        "      if ((int)threadIdx.y < wb_n - wb_h) {\n"
        "#pragma unroll\n"
        f"        for (int wb_e = 0; wb_e < {vec}; ++wb_e)\n"
        f"          wb_red{t}[threadIdx.y][threadIdx.x * {vec} + wb_e] += "
        f"wb_red{t}[threadIdx.y + wb_h][threadIdx.x * {vec} + wb_e];\n"
        "      }\n"
        "      __syncthreads();\n"
        "      wb_n = wb_h;\n"
        "    }\n"
        "#pragma unroll\n"
        f"    for (int wb_e = 0; wb_e < {vec}; ++wb_e) wb_tot{t}[wb_e] = "
        f"wb_red{t}[0][threadIdx.x * {vec} + wb_e];\n"
        "  }\n"
        "  if (threadIdx.y == 0) {\n"
        "    const int wb_chunk = blockIdx.y;\n"
        "#pragma unroll\n"
        f"    for (int wb_e = 0; wb_e < {vec}; ++wb_e)\n"
        f"      if (wb_e < wb_left) {out_at} = wb_tot{t}[wb_e];\n"
        "    if (blockIdx.y == 0) {  // the partial rows of block rows not launched: zero\n"
        f"      for (int wb_chunk = gridDim.y; wb_chunk < (int)({written}); ++wb_chunk)\n"
        "#pragma unroll\n"
        f"        for (int wb_e = 0; wb_e < {vec}; ++wb_e)\n"
        f"          if (wb_e < wb_left) {out_at} = ({ps.out_type})0;\n"
        "    }\n"
        "  }\n")
