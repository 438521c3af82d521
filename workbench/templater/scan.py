"""Per-row prefix scans: BLOCK_THREADS, ITEMS_PER_THREAD, PAD.

The family and how it is recognised are in :mod:`.scan_match` (by what the block computes,
run on symbols by :mod:`.scan_sim`, not by the algorithm's spelling). The kernel's body is
regenerated around what the analysis kept (the statements before the scan, the element
expression, the store's target, the row length, the operator, its identity, inclusive or
exclusive) as the thread-coarsened scan an expert writes:

* the row is walked in tiles of BLOCK_THREADS x ITEMS_PER_THREAD elements, loaded
  coalesced into shared memory (past the row: the identity);
* each thread scans ITEMS_PER_THREAD consecutive elements in registers (the barrier-bound
  part runs over the threads' totals, not every element), the warps scan those totals with
  ``__shfl_up_sync``, one shared word per warp holds the warps' totals;
* the scanned tile goes back through shared memory to coalesced stores, combined with the
  carry (the total of the tiles before it), which then takes the tile's total;
* PAD: one spare shared word per 32, so the threads' strided reads of their consecutive
  elements do not share banks.

Every config computes the same prefixes in another order of combining: exact for integer
scans and for max/min, float sums within rounding. At the defaults the launch is the
kernel's (one block of the written size per row, one element a thread per tile).
"""

from __future__ import annotations

from workbench.templater.analysis import text, walk
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, fresh_names
from workbench.templater.scan_match import RowScan, recognise

NAME = "ROW_SCAN"
#: Bytes of an element of each scalar type a row scan may scan (ROW_SCAN, WARP_SCAN).
SCALAR_BYTES = {"float": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "double": 8,
                "long long": 8, "unsigned long long": 8}
#: Items a thread scans in registers: the expert's powers of two and the odd counts that
#: leave the strided shared reads conflict-free without padding.
_ITEMS = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16]


def is_candidate(plan: Plan) -> bool:
    """The family's outline: one 1-D block per row, a barrier or a warp shuffle, and a
    loop that doubles or halves a count (the scan's steps) or a shuffle up the warp."""
    if len(plan.block) != 1 or len(plan.grid) != 1:
        return False
    body = text(plan.body)
    if "__syncthreads" not in body and "__shfl" not in body:
        return False
    if "__shfl_up_sync" in body:
        return True
    for n in walk(plan.body):
        if n.type in ("assignment_expression", "update_expression"):
            op = text(n.child_by_field_name("operator"))
            right = text(n.child_by_field_name("right"))
            if (op in ("*=", "<<=", ">>=", "/=") and right in ("1", "2")) or (
                    op == "=" and any(f"{w}" in right.replace(" ", "")
                                      for w in ("*2", "<<1", "2*"))):
                return True
    return False


def lift_scan(plan: Plan) -> bool:
    """Apply the row-scan family where the kernel computes one; True when it did. A kernel
    of the family's outline that the analysis cannot follow is refused with the reason and
    the line (and left to the other transforms)."""
    if not is_candidate(plan):
        return False
    try:
        scan = recognise(plan)
    except Refused as exc:
        plan.note(NAME, False, exc.reason, exc.node)
        return False
    _emit(plan, scan)
    return True


def _emit(plan: Plan, scan: RowScan) -> None:
    names = fresh_names(plan, ["BLOCK_THREADS", "ITEMS_PER_THREAD", "PAD"])
    threads, items, pad = names.values()
    plan.helper(operator_helper(scan))
    plan.rw.replace(plan.body, _body(scan, threads, items, pad))
    plan.block = [threads]
    plan.launch_bounds = threads
    size = SCALAR_BYTES[scan.scalar]
    origin = f"{scan.anchor.start_point.row + 1}: {text(scan.anchor).splitlines()[0].strip()}"
    plan.add_param(threads, {"kind": "int", "min": 32, "max": 1024, "step": 32,
                             "default": scan.threads,
                             "description": f"threads per block, one block per row (as "
                                            f"written: {scan.threads})"}, origin)
    plan.add_param(items, {"kind": "choice", "values": _ITEMS, "default": 1,
                           "description": "consecutive elements a thread scans in registers "
                                          "per tile (as written: 1)"}, origin)
    plan.add_param(pad, {"kind": "choice", "values": [0, 1], "default": 0,
                         "description": "one spare shared word per 32 against bank conflicts "
                                        "(as written: 0)"}, origin)
    # the padded tile and the warps' totals in static shared memory (48 KB)
    plan.constrain(f"{size} * ({threads} * {items} + {pad} * ({threads} * {items} // 32)) + "
                   f"{size} * ({threads} // 32) <= 49152")
    mode = "inclusive" if scan.inclusive else "exclusive"
    plan.note(NAME, True, f"an {mode} `{scan.spelling}` scan of each row (identity "
              f"{scan.identity}, {scan.length} elements) regenerated as tiles of {threads} "
              f"threads x {items} consecutive elements in registers, a warp-shuffle scan of "
              f"the threads' totals, one shared word per warp, {pad} spare word per 32 and "
              "the carry between tiles; the loads and the store as written", scan.anchor)


def operator_helper(scan: RowScan) -> str:
    """The device function ``wb_scan_op`` combining two elements as ``scan`` does (the
    helper ROW_SCAN and WARP_SCAN render before the kernel)."""
    t = scan.scalar
    combined = f"a {scan.spelling} b" if scan.spelling in ("+", "*") else \
        f"{scan.spelling}(a, b)"
    return (f"// the row scan's operator, as the kernel combines its elements\n"
            f"__device__ __forceinline__ {t} wb_scan_op({t} a, {t} b) {{ return {combined}; }}")


def _body(scan: RowScan, threads: str, items: str, pad: str) -> str:
    t, ident, n = scan.scalar, scan.identity, scan.length
    at = f"wb_e + {pad} * (wb_e / 32)"
    prologue = "".join(f"  {s}\n" for s in scan.prologue)
    kept = "wb_next" if scan.inclusive else "wb_prev"
    return (
        "{\n"
        + prologue +
        f"  // the row in tiles of {threads} x {items} elements: each thread scans {items} "
        "consecutive ones in registers,\n"
        "  // the warps their threads' totals by shuffles, one shared word a warp the "
        "warps'\n"
        f"  __shared__ {t} wb_tile[{threads} * {items} + {pad} * ({threads} * {items} / 32)];\n"
        f"  __shared__ {t} wb_warp_total[{threads} / 32];\n"
        "  const int wb_t = (int)threadIdx.x, wb_lane = wb_t % 32, wb_warp = wb_t / 32;\n"
        f"  {t} wb_carry = {ident};\n"
        f"  for (int wb_c0 = 0; wb_c0 < ({n}); wb_c0 += {threads} * {items}) {{\n"
        "#pragma unroll\n"
        f"    for (int wb_k = 0; wb_k < {items}; ++wb_k) {{\n"
        f"      const int wb_e = wb_k * {threads} + wb_t;\n"
        "      const int wb_col = wb_c0 + wb_e;\n"
        f"      wb_tile[{at}] = wb_col < ({n}) ? ({t})({scan.element}) : {ident};\n"
        "    }\n"
        "    __syncthreads();\n"
        f"    {t} wb_v[{items}];\n"
        f"    {t} wb_run = {ident};\n"
        "#pragma unroll\n"
        f"    for (int wb_k = 0; wb_k < {items}; ++wb_k) {{\n"
        f"      const int wb_e = wb_t * {items} + wb_k;\n"
        f"      wb_run = wb_scan_op(wb_run, wb_tile[{at}]);\n"
        "      wb_v[wb_k] = wb_run;\n"
        "    }\n"
        f"    {t} wb_inc = wb_run;  // the warp's inclusive scan of its threads' totals\n"
        "#pragma unroll\n"
        "    for (int wb_off = 1; wb_off < 32; wb_off *= 2) {\n"
        f"      const {t} wb_up = __shfl_up_sync(0xffffffffu, wb_inc, wb_off);\n"
        "      if (wb_lane >= wb_off) wb_inc = wb_scan_op(wb_up, wb_inc);\n"
        "    }\n"
        f"    {t} wb_lanes_before = __shfl_up_sync(0xffffffffu, wb_inc, 1);\n"
        f"    if (wb_lane == 0) wb_lanes_before = {ident};\n"
        "    if (wb_lane == 31) wb_warp_total[wb_warp] = wb_inc;\n"
        "    __syncthreads();\n"
        f"    {t} wb_prev = wb_carry, wb_tile_total = wb_carry;\n"
        f"    for (int wb_w = 0; wb_w < {threads} / 32; ++wb_w) {{\n"
        "      if (wb_w < wb_warp) wb_prev = wb_scan_op(wb_prev, wb_warp_total[wb_w]);\n"
        "      wb_tile_total = wb_scan_op(wb_tile_total, wb_warp_total[wb_w]);\n"
        "    }\n"
        "    wb_prev = wb_scan_op(wb_prev, wb_lanes_before);  // all before the thread's\n"
        f"    const {t} wb_base = wb_prev;\n"
        "#pragma unroll\n"
        f"    for (int wb_k = 0; wb_k < {items}; ++wb_k) {{\n"
        f"      const int wb_e = wb_t * {items} + wb_k;\n"
        f"      const {t} wb_next = wb_scan_op(wb_base, wb_v[wb_k]);\n"
        f"      wb_tile[{at}] = {kept};\n"
        "      wb_prev = wb_next;\n"
        "    }\n"
        "    __syncthreads();\n"
        "#pragma unroll\n"
        f"    for (int wb_k = 0; wb_k < {items}; ++wb_k) {{\n"
        f"      const int wb_e = wb_k * {threads} + wb_t;\n"
        "      const int wb_col = wb_c0 + wb_e;\n"
        f"      if (wb_col < ({n})) {scan.target} = wb_tile[{at}];\n"
        "    }\n"
        "    wb_carry = wb_tile_total;\n"
        "    __syncthreads();\n"
        "  }\n"
        "}")
