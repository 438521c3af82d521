"""Rewriting a recognised reduction: GRID_BLOCKS, VEC with ITEMS_PER_THREAD, and FINAL.

Each step edits the :class:`~workbench.templater.plan.Plan` and notes what it did or why
it could not (what each knob means and why every config stays correct is in
:mod:`workbench.templater.reduce`).
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.core.hardware import DEVICES
from workbench.templater.analysis import line, strip, text, walk
from workbench.templater.plan import Plan
from workbench.templater.reduce_dp4a import Dp4a, find_dp4a, packed_step
from workbench.templater.reduce_match import block_size
from workbench.templater.reduce_records import INTEGER, SHUFFLED, Reduction, identity
from workbench.templater.reduce_tail import ATOMICS
from workbench.templater.rules import literal, min_cap, rule_in_c
from workbench.templater.stencil import ldg_call
from workbench.templater.vector import VEC_STRUCT


def grid_values(cap: int) -> list[int]:
    """Block counts up to ``cap``: eighths of it and 1, 2, 4 waves of each known GPU's SMs."""
    sms = {d.num_sms for d in DEVICES.values()}
    values = {cap * k // 8 for k in range(1, 9)} | {s * k for s in sms for k in (1, 2, 4)}
    return sorted(v for v in values if 1 <= v <= cap)


def bound_serial_sum(plan: Plan, cap: int) -> str:
    """Keep a floating sum's per-thread run near the written one: the grid-stride loop hands
    each of ``GRID_BLOCKS * BLOCK_THREADS`` threads ``n`` over that many elements, added in
    order into one accumulator, whose rounding error grows with the run. The gate checks the
    small shape, where runs are short; at a large one, far fewer threads than written made
    runs long enough to leave the folder's tolerance (mse_i16_partials on the H200: 2,304 to
    16,384 threads against 262,144 as written, sums 1.2e-5 to 1.9e-5 off, tolerance 1e-5).
    So at least half the written threads run: each run at most twice the written one. The
    constraint added, for the note."""
    threads = plan.params.get("BLOCK_THREADS")
    written = threads.spec.get("default") if threads is not None else None
    rule = (f"GRID_BLOCKS * BLOCK_THREADS * 2 >= {cap * written}" if isinstance(written, int)
            else f"GRID_BLOCKS * 2 >= {cap}")
    plan.constrain(rule)
    return rule


def lift_grid_blocks(plan: Plan, red: Reduction, written: str) -> None:
    # the grid as written, not scaled by the lifted block size: the grid-stride loop covers
    # any grid, and partial outputs have the written grid's slots only
    plan.grid[0] = written
    cap = literal(written)
    capped = min_cap(written, "GRID_BLOCKS") if cap is None else None
    if cap is None and capped is None:
        plan.note("GRID_BLOCKS", False, f"the grid `{written}` is neither a literal block "
                  "count nor capped by min(...); the block count follows it")
        return
    count = str(cap) if cap is not None else None
    if capped is not None:
        plan.grid[0], cap = capped
        # the scalars by the shape expression they are launched with, for the slot count
        names = {v: k for k, v in plan.scalars.items() if v.isidentifier()}
        count = rule_in_c(written, names)
    else:
        plan.grid[0] = "GRID_BLOCKS"
    if not red.atomic:
        fill = identity(red.op, red.acc_type)
        why = None if fill is not None else f"the identity of {red.op.kind} for " \
            f"{red.acc_type} is not known"
        why = why or (None if count is not None else
                      f"the slot count `{written}` is not arithmetic over kernel arguments")
        if why is not None:
            plan.grid[0] = written
            plan.note("GRID_BLOCKS", False, f"{why}: the slots of blocks not launched could not "
                      "be filled, so the block count stays as written", red.final)
            return
        out_at = red.final.end_byte
        plan.rw.insert(out_at, (
            f"\n  if (blockIdx.x == 0) {{  // slots of the written grid's blocks not launched "
            f"(GRID_BLOCKS below it): the {red.op.kind}'s identity\n"
            f"    for (int wb_b = (int)gridDim.x + (int)threadIdx.x; wb_b < {count}; "
            f"wb_b += (int)blockDim.x) {red.out}[wb_b] = {fill};\n  }}"))
    assert cap is not None
    plan.add_param("GRID_BLOCKS", {
        "kind": "choice", "values": grid_values(cap), "default": cap,
        "description": f"blocks launched (as written: {cap}); the grid-stride loop covers "
                       "any count"}, f"{line(red.loop)}: grid {written}")
    plan.constrain(f"GRID_BLOCKS <= {cap}")
    serial = bound_serial_sum(plan, cap) if red.op.kind == "sum" and \
        red.acc_type not in INTEGER else None
    plan.note("GRID_BLOCKS", True, "any block count covers the data (grid-stride loop)" + (
        "" if red.atomic else f"; at most the {cap} partial slots, block 0 fills the slots of "
        "blocks not launched with the operator's identity") + (
        "" if serial is None else f"; `{serial}`: each thread's {red.acc_type} run at most "
        "twice the written one"), red.loop)


# -- VEC / ITEMS_PER_THREAD ------------------------------------------------------------------

def _vector_arrays(plan: Plan, red: Reduction) -> tuple[list[tuple[Node, str]], str | None]:
    """The accesses of E, each with its array: ``A[i]`` (all of them), or, in a pointer
    walk over A, ``*p`` / ``p[0]``; or the reason VEC does not apply."""
    accesses: list[tuple[Node, str]] = []
    written = {text(n.child_by_field_name("left").child_by_field_name("argument"))  # type: ignore[union-attr]
               for n in walk(plan.body) if n.type == "assignment_expression" and
               (left := n.child_by_field_name("left")) is not None and
               left.type == "subscript_expression"}
    for n in (m for term in (red.value, *red.prelude) for m in walk(term)):
        if n.type != "identifier" or text(n) != red.var:
            continue
        if red.walk_base is not None:
            deref = walk_read(n)
            if deref is None:
                return [], f"the walking pointer `{red.var}` is used in `{text(n.parent)}`, " \
                    f"not only as `*{red.var}`"
            accesses.append((deref, red.walk_base))
            continue
        sub = n.parent
        while sub is not None and sub.type in ("parenthesized_expression",
                                               "subscript_argument_list"):
            sub = sub.parent
        if sub is None or sub.type != "subscript_expression" or \
                text(strip(sub.child_by_field_name("indices").named_children[0])) != red.var:  # type: ignore[union-attr]
            return [], f"`{red.var}` is used in `{text(n.parent)}`, not only as `A[{red.var}]`"
        array = text(sub.child_by_field_name("argument"))
        if sub.parent is not None and sub.parent.type == "pointer_expression":
            load = ldg_call(sub)  # __ldg(&A[i]): A[i] through the read-only path
            if load is sub:
                return [], f"the address of `{text(sub)}` is taken"
            sub = load
        accesses.append((sub, array))
    for _node, array in accesses:
        if not plan.pointer(array) or array in written:
            return [], f"`{array}` is not a kernel pointer the kernel only reads"
        if plan.elem_bytes(array) is None:
            return [], f"`{array}` has no known element size"
    if not accesses:
        return [], f"no array is read at `[{red.var}]`"
    return accesses, None


def walk_read(use: Node) -> Node | None:
    """The read ``*p`` or ``p[0]`` around the use ``p`` of a walking pointer, else None."""
    up = use.parent
    if up is not None and up.type == "pointer_expression" and text(up).startswith("*"):
        return up
    while up is not None and up.type == "subscript_argument_list":
        up = up.parent
    if up is not None and up.type == "subscript_expression" and \
            up.child_by_field_name("argument") == use:
        idx = up.child_by_field_name("indices")
        if idx is not None and len(idx.named_children) == 1 and \
                text(strip(idx.named_children[0])) == "0":
            return up
    return None


def lift_loads(plan: Plan, red: Reduction) -> None:
    found, why = _vector_arrays(plan, red)
    arrays = sorted({array for _n, array in found})
    for n in walk(red.update):
        if n.type == "identifier" and text(n) == red.acc:
            plan.rw.replace(n, "wb_acc[wb_u]")
    if why is None:
        for node, array in found:
            plan.rw.replace(node, f"wb_in_{array}[wb_u].v[wb_v]")
        plan.helper(VEC_STRUCT)
        widths = {plan.elem_bytes(a) for a in arrays}
        for w in sorted(widths, key=str):
            plan.constrain(f"VEC * {w} <= 16")
        per_item = " + ".join(str(plan.elem_bytes(a)) for a in arrays)
        if len(arrays) > 1 or widths == {"1"}:
            # at most 128 bytes of loads in flight per thread (eight 16-byte vectors): more
            # adds no bandwidth (a block of 64 threads already has 8 KB in flight) and takes
            # registers ptxas may spill (int8 dot: 16 x 8 x 2 bytes spilled at 32 threads)
            plan.constrain(f"ITEMS_PER_THREAD * VEC * ({per_item}) <= 128")
        # bytes (int8 dot products, byte histograms' sums): 16 per load is the widest access
        values = [1, 2, 4, 8, 16] if widths == {"1"} else [1, 2, 4, 8]
        plan.add_param("VEC", {"kind": "choice", "values": values, "default": 1,
                               "description": "elements per vector load, the n % VEC tail "
                                              "loaded alone (as written: 1)"},
                       f"{line(red.loop)}: grid-stride loop over {red.var}")
        plan.note("VEC", True, f"{', '.join(arrays)} read as VEC-wide vectors; the elements "
                  "after the last whole vector one per thread (no divisibility needed)",
                  red.loop)
    else:
        plan.note("VEC", False, why, red.value)
        if red.walk_base is not None:  # the loop's index names the element the pointer is at
            for n in walk(red.value):
                if n.type == "identifier" and text(n) == red.var and walk_read(n) is not None:
                    plan.rw.replace(walk_read(n), f"{red.walk_base}[{red.var}]")  # type: ignore[arg-type]
    plan.add_param("ITEMS_PER_THREAD", {
        "kind": "choice", "values": [1, 2, 4, 8], "default": 1,
        "description": "loads in flight per thread, each into its own accumulator "
                       "(as written: 1)"}, f"{line(red.loop)}: accumulation into {red.acc}")
    plan.note("ITEMS_PER_THREAD", True, f"independent accumulators for `{red.acc}` "
              f"({red.op.kind}), combined after the loop", red.loop)
    first = red.loop.start_byte
    if red.loop_decl is not None:
        between = plan.source.data[red.loop_decl.end_byte:red.loop.start_byte]
        if between.strip():  # declarations between the variable's and the loop: kept
            plan.rw.replace(red.loop_decl, "")
        else:
            first = red.loop_decl.start_byte
    dp = find_dp4a(plan, red, found) if why is None else None
    if dp is not None:
        plan.note("VEC", True, f"{dp.left} x {dp.right}: bytes whose products add into "
                  f"`{red.acc}` ({red.acc_type}), so whole vectors with VEC % 4 == 0 take "
                  "__dp4a on packed words (exact)", red.value)
    plan.rw.replace_span(first, red.loop.end_byte, make=lambda rw: _loop_text(
        plan, red, arrays, vector=why is None, dp=dp))


def _loop_text(plan: Plan, red: Reduction, arrays: list[str], *, vector: bool,
               dp: Dp4a | None = None) -> str:
    rw = plan.rw
    it, t, s = red.var_type, red.acc_type, red.acc
    bound = rw.text(red.bound)
    update = rw.text(red.update) + ";"
    if red.prelude:  # the body's const locals before each copy of the accumulation
        update = "{ " + " ".join(rw.text(d) for d in red.prelude) + f" {update} }}"
    ident = identity(red.op, t) if red.op.kind == "sum" else s  # max/min: idempotent
    head = (f"{{  // the grid-stride loop: {'VEC-wide loads, ' if vector else ''}"
            f"ITEMS_PER_THREAD independent accumulators\n"
            f"    const {it} wb_stride = ({it})blockDim.x * ({it})gridDim.x;\n"
            f"    const {it} wb_first = ({it})blockIdx.x * ({it})blockDim.x + "
            f"({it})threadIdx.x;\n"
            f"    {t} wb_acc[ITEMS_PER_THREAD];\n"
            f"#pragma unroll\n"
            f"    for (int wb_u = 0; wb_u < ITEMS_PER_THREAD; ++wb_u) "
            f"wb_acc[wb_u] = wb_u == 0 ? {s} : {ident};\n")
    combine = (f"    {s} = wb_acc[0];\n#pragma unroll\n"
               f"    for (int wb_u = 1; wb_u < ITEMS_PER_THREAD; ++wb_u) "
               f"{s} = {red.op.combine(s, 'wb_acc[wb_u]')};\n  }}")
    if not vector:
        v, typ = red.var, it
        return head + (
            f"    {it} wb_j = wb_first;\n"
            f"    for (; wb_j + (ITEMS_PER_THREAD - 1) * wb_stride < {bound}; "
            f"wb_j += ITEMS_PER_THREAD * wb_stride) {{\n"
            f"#pragma unroll\n"
            f"      for (int wb_u = 0; wb_u < ITEMS_PER_THREAD; ++wb_u) {{\n"
            f"        const {typ} {v} = wb_j + wb_u * wb_stride;\n"
            f"        {update}\n      }}\n    }}\n"
            f"    for (; wb_j < {bound}; wb_j += wb_stride) {{\n"
            f"      const int wb_u = 0;\n      const {typ} {v} = wb_j;\n      {update}\n    }}\n"
        ) + combine

    def vec(arr: str) -> str:
        return f"WbVec<{plan.kernel.param(arr).base_type}, VEC>"

    def step(pad: str) -> str:
        own = f"#pragma unroll\n{pad}for (int wb_v = 0; wb_v < VEC; ++wb_v) {update}\n"
        return own if dp is None else packed_step(red, dp, own, pad)

    decls = "".join(f"      {vec(a)} wb_in_{a}[ITEMS_PER_THREAD];\n" for a in arrays)
    loads = "".join(f"        wb_in_{a}[wb_u] = *reinterpret_cast<const {vec(a)}*>"
                    f"(&{a}[(wb_j + wb_u * wb_stride) * VEC]);\n" for a in arrays)
    one = "".join(f"      {vec(a)} wb_in_{a}[1];\n      wb_in_{a}[0] = *reinterpret_cast<const "
                  f"{vec(a)}*>(&{a}[wb_j * VEC]);\n" for a in arrays)
    tail = "".join(f"        {vec(a)} wb_in_{a}[1];\n        wb_in_{a}[0].v[0] = {a}[wb_t];\n"
                   for a in arrays)
    return head + (
        f"    const {it} wb_nv = ({bound}) / VEC;  // whole vectors\n"
        f"    {it} wb_j = wb_first;\n"
        f"    for (; wb_j + (ITEMS_PER_THREAD - 1) * wb_stride < wb_nv; "
        f"wb_j += ITEMS_PER_THREAD * wb_stride) {{\n{decls}"
        f"#pragma unroll\n      for (int wb_u = 0; wb_u < ITEMS_PER_THREAD; ++wb_u) {{\n"
        f"{loads}      }}\n"
        f"#pragma unroll\n      for (int wb_u = 0; wb_u < ITEMS_PER_THREAD; ++wb_u) {{\n"
        f"{step('        ')}      }}\n"
        f"    }}\n"
        f"    for (; wb_j < wb_nv; wb_j += wb_stride) {{  // the last whole vectors\n"
        f"      const int wb_u = 0;\n{one}{step('      ')}    }}\n"
        f"    {{  // the {bound} % VEC elements after the last whole vector, one per thread\n"
        f"      const {it} wb_t = wb_nv * VEC + wb_first;\n"
        f"      if (wb_t < {bound}) {{\n        const int wb_u = 0, wb_v = 0;\n{tail}"
        f"        {update}\n      }}\n    }}\n"
    ) + combine


# -- FINAL -----------------------------------------------------------------------------------

def final_refusal(plan: Plan, red: Reduction, buf_type: str) -> str | None:
    """Why FINAL cannot offer the shuffle stage (``buf_type``: the shared slots' type)."""
    t = red.acc_type
    if t not in SHUFFLED or buf_type != t:
        return f"`{red.acc}` is a {t} (shared {buf_type}), which the shuffle stage does not move"
    if identity(red.op, t) is None:
        return f"the identity of {red.op.kind} for {t} is not known"
    size = block_size(plan)
    if plan.block[0] not in plan.params and (size is None or size % 32):
        return f"the block `{plan.block[0]}` is not known to be whole warps"
    return None


def _shuffles(red: Reduction, buf: str) -> str:
    """Each warp's ``acc`` by __shfl_down_sync, one slot of ``buf`` per warp, warp 0 over
    the slots: the block's result in ``buf[0]`` for thread 0 (any block of whole warps)."""
    t, comb = red.acc_type, red.op.combine
    step = (f"for (int wb_o = 16; wb_o > 0; wb_o >>= 1) wb_r = "
            f"{comb('wb_r', '__shfl_down_sync(0xffffffffu, wb_r, wb_o)')};\n")
    return (f"  {{  // warp shuffles, then one shared slot per warp, reduced by warp 0\n"
            f"    {t} wb_r = {red.acc};\n#pragma unroll\n    {step}"
            f"    if (threadIdx.x % 32 == 0) {buf}[threadIdx.x / 32] = wb_r;\n"
            f"    __syncthreads();\n"
            f"    if (threadIdx.x < 32) {{\n"
            f"      wb_r = threadIdx.x < blockDim.x / 32 ? {buf}[threadIdx.x] : "
            f"{identity(red.op, t)};\n"
            f"#pragma unroll\n      {step}"
            f"      if (threadIdx.x == 0) {buf}[0] = wb_r;\n    }}\n  }}\n")


def _tree(red: Reduction, buf: str) -> str:
    """The shared tree over ``buf`` for any block size: the largest power of two below it
    first (that step folds the threads past it onto the first ones), then halving to 1."""
    return (f"  {buf}[threadIdx.x] = {red.acc};\n  __syncthreads();\n"
            f"  int wb_k = 1;\n  while (2 * wb_k < (int)blockDim.x) wb_k *= 2;\n"
            f"  for (; wb_k > 0; wb_k >>= 1) {{\n"
            f"    if ((int)threadIdx.x < wb_k && (int)threadIdx.x + wb_k < (int)blockDim.x)\n"
            f"      {buf}[threadIdx.x] = "
            f"{red.op.combine(f'{buf}[threadIdx.x]', f'{buf}[threadIdx.x + wb_k]')};\n"
            f"    __syncthreads();\n  }}\n")


def lift_final(plan: Plan, red: Reduction) -> None:
    """FINAL over the author's tree (kept at 0) or, where the author's stage is shuffles
    (``red.kept_tail``, read by :mod:`.reduce_tail`), over both stages written anew: the
    author's combines every accumulator once with the loop's operator into one value a
    block, as each of them does at any block size of whole warps."""
    if red.kept_tail:
        _regenerate(plan, red)
        return
    buf_type = " ".join(text(plan.facts.defs[red.buf].decl.child_by_field_name("type")).split())
    why = final_refusal(plan, red, buf_type)
    if why is not None:
        plan.note("FINAL", False, why, red.tree)
        return
    a, b = red.store.start_byte, red.tree.end_byte
    plan.rw.replace_span(a, b, make=lambda rw: (
        f"#if FINAL == 0\n  {rw.render(a, b)}\n#else\n{_shuffles(red, red.buf)}#endif"))
    plan.add_param("FINAL", {"kind": "choice", "values": [0, 1], "default": 0,
                             "description": "the block's last stage: 0 the shared-memory tree "
                                            "(as written), 1 warp shuffles"},
                   f"{line(red.tree)}: {text(red.tree).splitlines()[0][:60]}")
    plan.note("FINAL", True, "the tree or warp shuffles (__shfl_down_sync, one shared slot "
              "per warp); thread 0's store reads the same slot", red.tree)


def _regenerate(plan: Plan, red: Reduction) -> None:
    """The author's shuffle stage (``red.store`` .. ``red.final``) replaced by the family's
    tree (FINAL 0) or shuffles (FINAL 1, the default: as written), thread 0 writing the
    block's value as the author's stage did."""
    out = f"{red.out}[blockIdx.x] = wb_red[0]" if not red.atomic else \
        f"{ATOMICS[red.op.kind]}({red.out}, wb_red[0])"
    a, b = red.store.start_byte, red.final.end_byte
    plan.rw.replace_span(a, b, (
        f"{{  // the block's combine (the author's: lines {line(red.store)} to "
        f"{line(red.final)}), FINAL 0 a shared tree, 1 warp shuffles\n"
        f"  __shared__ {red.acc_type} wb_red[{plan.block[0]}];\n"
        f"#if FINAL == 0\n{_tree(red, 'wb_red')}#else\n{_shuffles(red, 'wb_red')}#endif\n"
        f"  if (threadIdx.x == 0) {out};\n  }}"))
    plan.add_param("FINAL", {"kind": "choice", "values": [0, 1], "default": 1,
                             "description": "the block's last stage: 0 a shared-memory tree, "
                                            "1 warp shuffles (as written)"},
                   f"{line(red.store)}: {text(red.store).splitlines()[0][:60]}")
    plan.note("FINAL", True, "the author's stage written anew: a shared tree (any block size) "
              "or warp shuffles (__shfl_down_sync, one shared slot per warp); thread 0 "
              f"{'adds' if red.atomic else 'stores'} the block's value", red.store)
