"""A warp a row's prefix scan in chunks: ITEMS_PER_THREAD consecutive columns a lane, VEC.

A warp-family kernel whose items stay a warp each (:func:`.warp._apply_whole_warps`) may
scan its row: the warp walks the row in chunks of 32 columns (``for (base = 0; base < n;
base += 32) { c = base + lane; ... }``), each chunk scanned across the lanes and carried to
the next. That it is one is not read from the text: :func:`.scan_match.recognise` runs the
warp's 32 lanes on symbols (the lane the column, the warp index the row's) and checks that
every column stored holds exactly the elements up to it (or before it), combined by one
associative operator. The chunk loop (and the scan state declared right before it; the
last statement of its block, inside nothing but blocks and ``if``s without ``else``: ``if
(row < rows) { .. }``) is then regenerated as the chunked scan an expert writes:

* each lane loads ITEMS_PER_THREAD consecutive columns of a chunk of 32 x ITEMS_PER_THREAD
  (past the row: the operator's identity) and scans them in registers;
* the warp scans the lanes' totals with ``__shfl_up_sync``, each lane combines what the
  lanes before it and the chunks before hold with its own, the store as written;
* VEC: where the element is a kernel array's element read as written and the store one of
  another (``src[c]``, ``dst[c] = v``), the lane's columns are loaded and stored VEC at a
  time as one aligned vector where the lane's first column is aligned to it and all its
  columns lie in the row (tested at run time, else one at a time), so the vector path is
  taken exactly where it reads and writes the same elements;
* LDG: where the element's array is a pointer-to-const parameter (or a local pointer into
  one: :mod:`.warp_ldg`'s rule) of the scanned type, its loads (scalar and vector) go
  through the read-only path (``__ldg``), as a ``const __restrict__`` input's would.

The statements before it (the row, its pointers, the test that leaves past the last row)
stay as written, so WARPS_PER_BLOCK and ROWS compose with it. Every config computes the
same prefixes in another order of combining: exact for max/min and integers, float sums
within rounding. ITEMS_PER_THREAD 1 and VEC 1 are the kernel's chunks of 32 columns.
"""

from __future__ import annotations

from workbench.core.cuda_source import parse_cuda
from workbench.templater.analysis import strip, text, walk
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, fresh_names
from workbench.templater.scan import SCALAR_BYTES, operator_helper
from workbench.templater.scan_match import RowScan, recognise
from workbench.templater.warp_ldg import READ_ONLY, read_only_root

NAME = "WARP_SCAN"
#: The CUDA vector types ``__ldg`` loads N elements of a type as (LDG's vector path).
_RO_VECTORS = {"float": ("float2", "float4"), "int": ("int2", "int4"),
               "unsigned": ("uint2", "uint4"), "unsigned int": ("uint2", "uint4"),
               "double": ("double2", None)}
_ITEMS = [1, 2, 4, 8]
_VECTORS = [1, 2, 4]
#: The aligned vector of N elements of an array's own type the lane's columns move in.
_PACK = """// N elements of an array as one aligned vector
template <int N, class T> struct alignas(sizeof(T) * N) wb_pack {
  T v[N];
};
template <int N, class T> __device__ __forceinline__ bool wb_aligned(const T *p) {
  return reinterpret_cast<unsigned long long>(p) % sizeof(wb_pack<N, T>) == 0;
}
template <int N, class T, class V> __device__ __forceinline__ void wb_load(const T *p, V *v) {
  const wb_pack<N, T> w = *reinterpret_cast<const wb_pack<N, T> *>(p);
#pragma unroll
  for (int j = 0; j < N; ++j) v[j] = V(w.v[j]);
}
template <int N, class T, class V> __device__ __forceinline__ void wb_store(T *p, const V *v) {
  wb_pack<N, T> w;
#pragma unroll
  for (int j = 0; j < N; ++j) w.v[j] = v[j];
  *reinterpret_cast<wb_pack<N, T> *>(p) = w;
}"""


def apply_warp_scan(plan: Plan) -> bool:
    """Regenerate a warp's row scan in chunks (notes why not); True when it did."""
    try:
        scan = recognise(plan, warp=True)
        start, end = _span(plan, scan)
    except Refused as exc:
        plan.note(NAME, False, exc.reason, exc.node)
        return False
    names = fresh_names(plan, ["ITEMS_PER_THREAD", "VEC", "LDG"])
    items, vec, ldg = names.values()
    array = _vector_reads(scan)
    vector = array is not None
    root = read_only_root(plan, array) if array is not None else None
    ro = root is not None and plan.kernel.param(root).base_type == scan.scalar and \
        scan.scalar in _RO_VECTORS
    plan.helper(operator_helper(scan))
    if vector:
        plan.helper(_PACK)
    if ro:
        plan.helper(READ_ONLY.replace("LDG", ldg))
        plan.helper(_ro_pack(scan.scalar, ldg))
    plan.rw.replace_span(start, end, _loop(scan, items, vec if vector else None,
                                           ldg if ro else None))
    origin = f"{scan.anchor.start_point.row + 1}: {text(scan.anchor).splitlines()[0].strip()}"
    plan.add_param(items, {"kind": "choice", "values": _ITEMS, "default": 1,
                           "description": "consecutive columns a lane scans in registers, a "
                                          "chunk of 32 x ITEMS_PER_THREAD (as written: 1)"},
                   origin)
    size = SCALAR_BYTES[scan.scalar]
    if vector:
        plan.add_param(vec, {"kind": "choice", "values": _VECTORS, "default": 1,
                             "description": "a lane's columns loaded and stored VEC at a time "
                                            "as one aligned vector where aligned (as written: "
                                            "1)"}, origin)
        plan.constrain(f"{items} % {vec} == 0")
        plan.constrain(f"{vec} * {size} <= 16")
    if ro:
        plan.add_param(ldg, {"kind": "choice", "values": [0, 1], "default": 0,
                             "description": f"1: the scan reads {root} through the read-only "
                                            "cache (__ldg) (as written: 0)"}, origin)
    mode = "inclusive" if scan.inclusive else "exclusive"
    plan.note(NAME, True, f"an {mode} `{scan.spelling}` scan of the warp's row (identity "
              f"{scan.identity}, {scan.length} elements) regenerated as chunks of 32 lanes x "
              f"{items} consecutive columns scanned in registers, the lanes' totals by "
              "shuffles and the carry between chunks" +
              (f", the columns {vec} at a time as aligned vectors" if vector else
               "; no VEC: the element or the store is not an array's element as written"),
              scan.anchor)
    return True


def _span(plan: Plan, scan: RowScan) -> tuple[int, int]:
    """The bytes the scan takes: its chunk loop, the last statement of its block (itself
    the body or the last statement of blocks and ``if``s without ``else`` up to it), and
    the scan state declared right before it (declarations the row's statements do not
    keep: ``float carry = -INFINITY;``)."""
    loop, block = scan.anchor, scan.anchor.parent
    stmts = [c for c in block.named_children if c.type != "comment"] if block else []
    if loop.type != "for_statement" or not stmts or stmts[-1].start_byte != loop.start_byte:
        raise Refused("the warp's scan is no chunk loop ending its block", loop)
    node = block
    while node is not None and node != plan.body:
        up = node.parent
        last = [c for c in up.named_children if c.type != "comment"][-1] \
            if up is not None and up.type == "compound_statement" else node
        if up is None or (up.type not in ("compound_statement", "if_statement")) or \
                last.start_byte != node.start_byte or up.child_by_field_name("alternative"):
            raise Refused("the warp's scan is not the kernel's last work (a statement after "
                          "it, or an `else`)", loop)
        node = up
    kept = {s.start_byte for s in scan.kept}
    first = len(stmts) - 1
    while first > 0 and stmts[first - 1].type == "declaration" and \
            stmts[first - 1].start_byte not in kept:
        first -= 1
    return stmts[first].start_byte, loop.end_byte


def _vector_reads(scan: RowScan) -> str | None:
    """The array the element reads where the element and the store are each one array
    element (``p[..]``): their columns can move as vectors; else None."""
    arrays = []
    for expr in (scan.element, scan.target):
        tree = parse_cuda(f"void wb_probe() {{ wb_x = {expr}; }}", "probe.cu").tree.root_node
        node = next((n for n in walk(tree) if n.type == "assignment_expression"), None)
        right = node.child_by_field_name("right") if node is not None else None
        if right is None or strip(right).type != "subscript_expression":
            return None
        arrays.append(strip(strip(right).child_by_field_name("argument") or right))
    return text(arrays[0]) if arrays[0].type == "identifier" else None


def _ro_pack(scalar: str, ldg: str) -> str:
    """``wb_load_ro``: N elements of ``scalar`` as one vector through ``__ldg``, the vector
    loads' function (``WB_LOAD_VEC``) at ``ldg`` 1."""
    pairs, four = _RO_VECTORS[scalar][0], _RO_VECTORS[scalar][1]
    specs = f"template <> struct wb_ro_vec<{scalar}, 2> {{ typedef {pairs} type; }};\n"
    if four is not None:
        specs += f"template <> struct wb_ro_vec<{scalar}, 4> {{ typedef {four} type; }};\n"
    return ("// N elements as the CUDA vector type __ldg loads them\n"
            "template <class T, int N> struct wb_ro_vec;\n" + specs +
            "template <int N, class T, class V> __device__ __forceinline__ void "
            "wb_load_ro(const T *p, V *v) {\n"
            "  typedef typename wb_ro_vec<T, N>::type W;\n"
            "  const W w = __ldg(reinterpret_cast<const W *>(p));\n"
            "  const T *e = reinterpret_cast<const T *>(&w);\n"
            "#pragma unroll\n"
            "  for (int j = 0; j < N; ++j) v[j] = V(e[j]);\n"
            "}\n"
            f"#if {ldg}\n#define WB_LOAD_VEC wb_load_ro\n#else\n#define WB_LOAD_VEC wb_load\n"
            "#endif")


def _loop(scan: RowScan, items: str, vec: str | None, ldg: str | None) -> str:
    t, ident, n = scan.scalar, scan.identity, scan.length
    element = f"WB_RO({scan.element})" if ldg is not None else scan.element
    load = f"wb_v[wb_k] = wb_col < ({n}) ? ({t})({element}) : {ident};"
    kept = "wb_next" if scan.inclusive else "wb_prev"
    # an exclusive scan stores what came before each column: the previous column's value
    step = "" if scan.inclusive else "wb_prev = wb_next;"
    store = f"{scan.target} = {kept};"
    loads = (f"#pragma unroll\n      for (int wb_k = 0; wb_k < {items}; ++wb_k) {{\n"
             f"        const int wb_col = wb_first + wb_k;\n        {load}\n      }}\n")
    stores = ("#pragma unroll\n"
              f"      for (int wb_k = 0; wb_k < {items}; ++wb_k) {{\n"
              "        const int wb_col = wb_first + wb_k;\n"
              f"        const {t} wb_next = wb_scan_op(wb_before, wb_v[wb_k]);\n"
              f"        if (wb_col < ({n})) {store}\n"
              f"        {step}\n"
              "      }\n")
    if vec is not None:
        at = f"&{scan.element.replace('wb_col', 'wb_first')}"
        to = f"&{scan.target.replace('wb_col', 'wb_first')}"
        load_vec = "wb_load" if ldg is None else "WB_LOAD_VEC"  # through __ldg at LDG 1
        loads = (
            f"#if {vec} > 1\n"
            f"      const bool wb_whole = wb_first + {items} <= ({n}) && "
            f"wb_aligned<{vec}>({at}) &&\n          wb_aligned<{vec}>({to});\n"
            "      if (wb_whole) {\n"
            "#pragma unroll\n"
            f"        for (int wb_k = 0; wb_k < {items}; wb_k += {vec}) "
            f"{load_vec}<{vec}>({at} + wb_k, wb_v + wb_k);\n"
            "      } else\n"
            "#endif\n"
            "      {\n" + loads + "      }\n")
        stores = (
            f"#if {vec} > 1\n"
            "      if (wb_whole) {\n"
            f"        {t} wb_o[{items}];\n"
            "#pragma unroll\n"
            f"        for (int wb_k = 0; wb_k < {items}; ++wb_k) {{\n"
            f"          const {t} wb_next = wb_scan_op(wb_before, wb_v[wb_k]);\n"
            f"          wb_o[wb_k] = {kept};\n"
            f"          {step}\n"
            "        }\n"
            "#pragma unroll\n"
            f"        for (int wb_k = 0; wb_k < {items}; wb_k += {vec}) "
            f"wb_store<{vec}>({to} + wb_k, wb_o + wb_k);\n"
            "      } else\n"
            "#endif\n"
            "      {\n" + stores + "      }\n")
    return (
        f"{{  // the row's scan: chunks of 32 lanes x {items} consecutive columns\n"
        f"    {t} wb_carry = {ident};\n"
        "    const int wb_lane = (int)(threadIdx.x % 32);\n"
        f"    for (int wb_c0 = 0; wb_c0 < ({n}); wb_c0 += 32 * {items}) {{\n"
        f"      const int wb_first = wb_c0 + wb_lane * {items};\n"
        f"      {t} wb_v[{items}];\n"
        + loads +
        "#pragma unroll\n"
        f"      for (int wb_k = 1; wb_k < {items}; ++wb_k) "
        "wb_v[wb_k] = wb_scan_op(wb_v[wb_k - 1], wb_v[wb_k]);\n"
        f"      {t} wb_inc = wb_v[{items} - 1];  // the lanes' totals, scanned by shuffles\n"
        "#pragma unroll\n"
        "      for (int wb_off = 1; wb_off < 32; wb_off *= 2) {\n"
        f"        const {t} wb_up = __shfl_up_sync(0xffffffffu, wb_inc, wb_off);\n"
        "        if (wb_lane >= wb_off) wb_inc = wb_scan_op(wb_up, wb_inc);\n"
        "      }\n"
        f"      {t} wb_before = __shfl_up_sync(0xffffffffu, wb_inc, 1);\n"
        f"      if (wb_lane == 0) wb_before = {ident};\n"
        "      wb_before = wb_scan_op(wb_carry, wb_before);  // all before the lane's columns\n"
        + ("" if scan.inclusive else f"      {t} wb_prev = wb_before;\n")
        + stores +
        "      wb_carry = wb_scan_op(wb_carry, __shfl_sync(0xffffffffu, wb_inc, 31));\n"
        "    }\n"
        "  }")
