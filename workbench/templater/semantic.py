"""The offline templater's semantic pass: a kernel as written -> a template of it.

Parses the baseline with :mod:`workbench.core.cuda_source`, then applies, in order, the
tile family (2-D tiled kernels) or the block-size lift, vector width / items per thread /
blocks per row on unit-stride regions, the grid cap of grid-stride kernels, the split of a
per-thread serial sum over lanes (:mod:`.split_walk`), and items per thread by wrapping
where vectorizing is not legal, and where none of these lifted anything, the constants the
kernel names (:mod:`.named`: ``kVec = 16 / ELEM_BYTES``, a 1024 block cap); integer macros
(``#define BLOCK 256``) are read as their values throughout and lifted with their uses
(:mod:`.macros`). Each transform either applies (with the
constraints that keep every config correct) or is reported with its reason. The defaults
reproduce the kernel as written: same launch, same work per thread.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace

from workbench.core.cuda_source import parse_cuda
from workbench.core.defines import define_lines
from workbench.core.errors import CudaSourceError, WorkbenchError
from workbench.templater.analysis import integer_macros as reading_macros
from workbench.templater.analysis import text, walk
from workbench.templater.apron_flat import flat_windows
from workbench.templater.auto_refuse import AutoGuard
from workbench.templater.auto_types import typed_autos
from workbench.templater.bitloops import apply_bitloops
from workbench.templater.block import lift_block
from workbench.templater.block_merge import lift_merge
from workbench.templater.block_phases import lift_phases
from workbench.templater.colreduce import lift_colreduce
from workbench.templater.const_via import apply_const
from workbench.templater.conv import lift_conv
from workbench.templater.conv_centre import lift_centre
from workbench.templater.conv_mix import apply_channel_items
from workbench.templater.coop_groups import inlined_after_groups
from workbench.templater.fir_slide import lift_fir
from workbench.templater.functor_calls import functors_as_lambdas
from workbench.templater.functor_objects import functor_objects_as_lambdas
from workbench.templater.gather_stage import apply_gather_stage
from workbench.templater.grid_planes import apply_grid_planes
from workbench.templater.guarded_returns import guarded_returns
from workbench.templater.header_counters import header_counters
from workbench.templater.ifconv import apply_ifconv
from workbench.templater.ilp import apply_ilp, interleaves, leave_at_one
from workbench.templater.ilp_div_fold import apply_div_fold
from workbench.templater.ilp_div_rcp import apply_div_rcp
from workbench.templater.ilp_fastmath import apply_fastmath
from workbench.templater.ilp_rcp_counter import apply_rcp
from workbench.templater.index_mask import apply_index_mask
from workbench.templater.inline_bind import callee_name
from workbench.templater.inline_bodies import expand_bodies
from workbench.templater.inline_calls import InlinedSource, block_stage
from workbench.templater.inline_exits import joined_exits
from workbench.templater.inline_lambda import expand_lambdas
from workbench.templater.inline_macros import expand_macros
from workbench.templater.late_init import late_inits
from workbench.templater.launch_minimum import bounds_by_minimum
from workbench.templater.loop_forms import counted_whiles
from workbench.templater.loop_forms_open import open_loops
from workbench.templater.loop_forms_postinc import postinc_walks
from workbench.templater.macros import (
    derived_macros,
    follow_named,
    integer_macros,
    lift_macros,
    lift_switches,
)
from workbench.templater.named import lift_named
from workbench.templater.once_form import ONCE, once_form
from workbench.templater.parameter_names import scalars_by_parameter
from workbench.templater.periodic_index import reduce_periodic
from workbench.templater.plan import Plan
from workbench.templater.point_split import split_points
from workbench.templater.pointer_locals import TRANSFORM as POINTER_LOCAL
from workbench.templater.pointer_locals import pointer_locals
from workbench.templater.pointer_rows import pointer_rows
from workbench.templater.pointer_taps import pointer_taps
from workbench.templater.reassigned_locals import split_reassigned
from workbench.templater.record_stage import apply_record_stage
from workbench.templater.record_structs import record_structs
from workbench.templater.records import Finding, LiftedSource
from workbench.templater.reduce import lift_reduce
from workbench.templater.reduce_atomic import apply_atomic_count
from workbench.templater.reduce_consts import constant, spell_members
from workbench.templater.regtile import lift_regtile
from workbench.templater.regtile_shapes import constrain_whole_blocks
from workbench.templater.residue_taps import apply_residue_taps
from workbench.templater.row_blocks import apply_row_blocks
from workbench.templater.scan import lift_scan
from workbench.templater.scoped_names import scoped_names
from workbench.templater.select_stores import select_stores
from workbench.templater.shared_carves import static_carves
from workbench.templater.slot_arrays import slot_arrays
from workbench.templater.smem_tiles import lift_tied_tiles
from workbench.templater.split_walk import apply_split_walk
from workbench.templater.staged_walk import apply_staged_walk
from workbench.templater.stencil import lift_stencil
from workbench.templater.stencil_flat import lift_flat_stencil
from workbench.templater.stencil_rows import lift_rows
from workbench.templater.stencil_zmarch import lift_zmarch
from workbench.templater.store_vec import apply_store_vec
from workbench.templater.struct_locals import struct_locals
from workbench.templater.table_emit import apply_table
from workbench.templater.table_items import apply_table_items
from workbench.templater.table_via import apply_table_via
from workbench.templater.tile import lift_tile
from workbench.templater.tile_batch import lift_tile_batch
from workbench.templater.tile_count_loops import tile_count_loops
from workbench.templater.value_casts import value_casts
from workbench.templater.vector import apply_vector, vector_flat
from workbench.templater.walk_rounds import apply_walk_rounds
from workbench.templater.warp import apply_warp
from workbench.templater.wrap import apply_grid_cap, apply_wrap_items


def lift_kernel(source_text: str, *, entry: str | None, grid: Sequence[str],
                block: Sequence[str], scalars: Mapping[str, str], smem_bytes: str = "0",
                file: str = "baseline.cu",
                compared_by_total: Collection[str] | None = None) -> LiftedSource:
    """Template ``entry`` of ``source_text`` (pure). ``scalars`` maps each scalar kernel
    argument to the shape expression it is launched with (``{"d": "d"}``);
    ``compared_by_total`` names the outputs the kernel folder compares by a reduced
    quantity (None: no folder says); raises CudaSourceError when the kernel cannot be
    parsed. A struct built by a braced initializer is read as its fields' locals only where
    that lifts strictly more knobs, losing none (:mod:`.struct_locals`)."""
    args = (source_text, entry, grid, block, scalars, smem_bytes, file, compared_by_total)
    lifted, braced = _lift_spelled(*args, braced=False)
    as_fields = _if_gains(lifted, lambda: _lift_spelled(*args, braced=True)[0]) \
        if braced else None
    lifted = as_fields or lifted
    if _calls_block_stage(source_text, entry, file):  # block_sum<256>(s) in the body
        staged = _if_gains(lifted, lambda: _lift_spelled(
            *args, braced=as_fields is not None, stages=True)[0])
        if staged is not None:
            return staged
    return lifted


def _calls_block_stage(source_text: str, entry: str | None, file: str) -> bool:
    """Whether the kernel calls a helper holding a block's shared stage
    (:func:`.inline_calls.block_stage`): the lift then also tries the reading with that
    helper inlined, and keeps it where it lifts strictly more (the reduction family reads
    the stage in the kernel's body: ``float total = block_sum<256>(sum);``)."""
    try:
        source = parse_cuda(source_text, file)
        defs = source.function_definitions()
        body = source.body(source.kernel(entry))
    except CudaSourceError:
        return False
    return any(n.type == "call_expression" and callee_name(n) in defs and
               block_stage(defs[callee_name(n)]) for n in walk(body))


def _lift_spelled(source_text: str, entry: str | None, grid: Sequence[str],
                  block: Sequence[str], scalars: Mapping[str, str], smem_bytes: str,
                  file: str, compared_by_total: Collection[str] | None, *,
                  braced: bool, stages: bool = False) -> tuple[LiftedSource, bool]:
    """:func:`lift_kernel`'s lift with braced structs read as their fields or not
    (``braced``), block-stage helpers inlined or not (``stages``); and whether reading the
    structs so changes the source the families read."""
    # block.sync(), tile.shfl_down(v, 16) as built-ins; then a body in a __device__ function
    inlined = inlined_after_groups(source_text, entry, file, block, block_stages=stages)
    # extern __shared__ float s[]; float *sa = s, *sb = s + T * (T + 1): static sa[..], sb[..]
    inlined, smem_bytes = static_carves(inlined, entry, smem_bytes)
    inlined = split_points(inlined, entry)  # int x = .., y = ..; one declaration per index
    inlined = split_reassigned(inlined, entry)  # col = a; ..col..; col = b; ..: col, col_2
    inlined = late_inits(inlined, entry)  # int tx; .. tx = threadIdx.x; read declared so
    inlined = header_counters(inlined, entry)  # int b; .. for (b = 0; ..): for (int b = 0; ..)
    inlined = scoped_names(inlined, entry)  # int gx in a loop, float gx after: two names
    spelled = struct_locals(inlined, entry, braced=braced)  # Signal s; s.x = x; ..: s_x[i]
    differs = not braced and struct_locals(inlined, entry).text != spelled.text
    inlined = spelled
    inlined = expand_macros(inlined, entry)  # A[AT(r, c, K)] read as the compiler reads it
    inlined = value_casts(inlined, entry)  # (y) - d: y a variable, not a cast to a type y
    inlined = record_structs(inlined, entry)  # S p = reinterpret_cast<const S*>(P)[i]
    inlined = slot_arrays(inlined, entry)  # __shared__ double acc[2]; acc[0]: acc_0
    inlined = guarded_returns(inlined, entry)  # if (c) return a; return b;: c ? a : b
    inlined = functor_objects_as_lambdas(inlined, entry)  # const S op{..}; op(u[i])
    inlined = expand_bodies(inlined, entry)  # auto f = [&](T v) { s += v; }; f(x);
    inlined = functors_as_lambdas(inlined, entry)  # const Torus at(H, W); at(r - 1, c)
    inlined = expand_lambdas(inlined, entry)  # auto at = [&](int r) { return A[r]; }; at(i)
    inlined = value_casts(inlined, entry)  # (tile[r][c]) + v as a call expanded: a read
    inlined = typed_autos(inlined, entry)  # const auto x = xy[2 * i]: const float x
    inlined = postinc_walks(inlined, entry)  # while (p < end) { w = *p++; ..}: p[wb_k]
    inlined = counted_whiles(inlined, entry)  # int v = a; while (v < b) {..; v += s;}
    inlined = open_loops(inlined, entry)  # T* p = a; for (; p < e; p += s); do {..} while
    inlined = tile_count_loops(inlined, entry)  # t < (n + T - 1) / T; base = t * T: by T
    inlined = flat_windows(inlined, entry)  # tile[(ty + dy) * W + tx + dx]: tile[ty + dy][..]
    inlined = pointer_taps(inlined, entry)  # for (..; ++dx, ++tap) acc += *tap * v: tap[idx]
    inlined = pointer_rows(inlined, entry)  # while (p < end) {..; p += ld; q += ld;}: rows
    arrays = pointer_locals(inlined, entry)  # const float *src = img + y * W; src[x]
    refused = tuple(f for f in arrays.findings if f not in inlined.findings)
    read = arrays.text != inlined.text
    inlined = _late_spellings(inlined, entry)
    lifted = _lift_inlined(inlined, entry, grid, block, scalars, smem_bytes, file,
                           compared_by_total)
    if read:  # the lift with the pointers read as their arrays, where it lifts more
        as_arrays = _if_gains(lifted, lambda: _lift_inlined(
            _late_spellings(arrays, entry), entry, grid, block, scalars, smem_bytes, file,
            compared_by_total))
        if as_arrays is not None:
            lifted, inlined = as_arrays, _late_spellings(arrays, entry)
            refused = ()  # its notes carry the pass's own
        else:
            refused += (Finding(POINTER_LOCAL, False, "read as the arrays they point into, "
                                "the pointers lift nothing more: the kernel as written is "
                                "lifted"),)
    once = once_form(inlined, entry, grid, block, scalars, _named_integers)
    if once.text != inlined.text:  # a grid-stride loop run once a thread: its guarded item
        as_item = _if_gains(lifted, lambda: _lift_inlined(
            once, entry, grid, block, scalars, smem_bytes, file, compared_by_total))
        if as_item is not None:
            lifted = as_item
            refused += (Finding(ONCE, True, "the grid-stride loop runs once a thread at the "
                                "launch as written: read as the guarded item it is (`T i = "
                                "..; if (i < n) ..`), which lifts more"),)
    if refused:
        lifted = replace(lifted, notes=lifted.notes + tuple(str(f) for f in refused),
                         findings=lifted.findings + refused)
    return lifted, differs


def _late_spellings(inlined: InlinedSource, entry: str | None) -> InlinedSource:
    """The spelling passes after the pointer locals (:func:`lift_kernel`)."""
    inlined = select_stores(inlined, entry)  # if (c) { s[i] = A[j]; } else { s[i] = 0; }
    inlined = joined_exits(inlined, entry)  # if (x >= w) return; if (y >= h) return;
    return reduce_periodic(inlined, entry)  # (r - 1 + H) % H, r < H: a compare, a select


def _named_integers(plan: Plan) -> dict[str, int]:
    """The file's named integers as the families read them: constexpr and const constants,
    then ``#define`` macros (:func:`_lift_inlined`'s reading)."""
    macros = integer_macros(plan.source)
    return {**file_constants(plan), **{m.name: m.value for m in macros.values()}}


def _if_gains(written: LiftedSource,
              other: Callable[[], LiftedSource]) -> LiftedSource | None:
    """The lift of another reading of the kernel (``other``: pointer locals as their arrays,
    braced structs as their fields, a grid-stride loop run once as its guarded item) where
    it lifts strictly more knobs than ``written``, losing none; else None (it lifts no more,
    or it is refused). A family that reads the spelling as written itself (the counting
    loop's VEC reads ``P = X + OFF``) keeps it."""
    try:
        lifted = other()
    except WorkbenchError:
        return None
    before, after = {p.name for p in written.params}, {p.name for p in lifted.params}
    return lifted if before < after else None


def _lift_inlined(inlined: InlinedSource, entry: str | None, grid: Sequence[str],
                  block: Sequence[str], scalars: Mapping[str, str], smem_bytes: str,
                  file: str, compared_by_total: Collection[str] | None) -> LiftedSource:
    """The lift of ``inlined`` (the source after the spelling passes of :func:`lift_kernel`)."""
    members = spell_members(inlined.text, file)  # Tile::ROWS read as a named constant
    source = parse_cuda(members.source_text, file)
    kernel = source.kernel(entry)
    plan = Plan(source, kernel, grid=list(grid), block=list(block),
                scalars=scalars_by_parameter(kernel, scalars))  # N launched with n
    macros = integer_macros(source)
    constants = file_constants(plan, members.values)
    guard = AutoGuard(plan)  # a family copying an `auto` local (`auto acc[TM]`) refuses
    named = {**constants, **{m.name: m.value for m in macros.values()}}
    with reading_macros({**derived_macros(source, named), **named}):
        if not (guard(lift_reduce, compared_by_total) or
                guard(lift_colreduce, compared_by_total) or guard(lift_scan) or
                guard(lift_regtile) or guard(lift_tile) or guard(lift_tile_batch) or
                guard(lift_tied_tiles) or guard(lift_stencil) or guard(lift_flat_stencil) or
                guard(lift_zmarch) or
                guard(lift_centre) or guard(lift_conv) or guard(lift_rows) or
                guard(lift_phases) or guard(lift_fir) or guard(apply_warp, macros) or
                guard(lift_merge)):
            lift_block(plan)
            guard(apply_table_items)  # outputs a thread along a row a block's table serves
            flat = vector_flat(plan) is not None
            vectorized = apply_vector(plan)
            apply_grid_cap(plan, compared_by_total)
            guard(apply_ilp)
            # output channels on the grid per thread, else outer indices sharing index math
            guard(apply_channel_items) or guard(apply_grid_planes)
            guard(apply_row_blocks)  # a block of one named-width row: rows, planes, items
            guard(apply_split_walk)
            guard(apply_wrap_items, {"x"} if vectorized and flat else set())
            guard(apply_gather_stage)  # a 2-D window gather's tile in shared memory
            apply_store_vec(plan)  # a pixel's consecutive outputs as one vector store
            apply_table(plan)
            apply_fastmath(plan)
            apply_bitloops(plan)  # while ((x & 1) == 0) x >>= 1;: one shift by ctz(x)
            if interleaves(plan):  # compute loops the items share: their integer work counts
                apply_index_mask(plan)
            apply_rcp(plan)  # double divisions by a loop counter's function
            apply_div_fold(plan)  # p / (q + r / s): one double division for two
            apply_div_rcp(plan)  # double divisions by a value the loop recomputes
            apply_ifconv(plan)  # after ilp: its sides render with the per-item names
            apply_atomic_count(plan, compared_by_total)
            smem_bytes = lift_named(plan, macros, str(smem_bytes))  # where nothing else lifted
            guard(apply_staged_walk)  # rows of threads split a staged tile's walk
            guard(apply_record_stage)  # per-thread records through shared memory
            guard(apply_walk_rounds)  # a walk every thread reads at one index: in rounds
        apply_residue_taps(plan)  # for (ky = (oy + 1) & 1; ky < 4; ky += 2), any family
        apply_const(plan, str(smem_bytes))  # lane-indexed __constant__ arrays, any family
        apply_table_via(plan, str(smem_bytes))  # a const pointer's small table, any family
        lift_switches(plan, macros)
        lift_macros(plan, macros)
        follow_named(plan, {n: members.values[n] for n in members.back}, members.back,
                     members.literals)
    constrain_whole_blocks(plan, grid)  # a kernel that bounds no index by the size it tiles
    _launch_bounds(plan)
    defined = _header(plan)
    rendered = leave_at_one(_late_defaults(plan, defined, plan.rw.render()))
    rendered = members.restore(rendered)
    guard.check(rendered)  # never `auto x[..]`: a pass no guard covers refuses the lift
    return inlined.restore(LiftedSource(
        source=rendered, params=tuple(plan.params.values()),
        constraints=tuple(plan.constraints), grid=tuple(plan.grid), block=tuple(plan.block),
        smem_bytes=str(smem_bytes), notes=tuple(members.restore(str(f)) for f in plan.findings),
        findings=tuple(plan.findings)))


#: Declarators a kernel's parameters and locals name (a name declared there shadows a
#: file-scope constant of the same name).
_DECLARATORS = ("init_declarator", "parameter_declaration", "declaration", "pointer_declarator",
                "array_declarator", "reference_declarator")


def file_constants(plan: Plan, members: Mapping[str, int] | None = None) -> dict[str, int]:
    """File-scope integer constants (``constexpr int BW = 32, BH = 8;``, ``const int``)
    defined once, read like ``#define`` macros by every transform: a tile's extents, a
    block size and a loop's trip count are the same number in either spelling. A name some
    function declares again (a parameter or a local) is left out. ``members``: the named
    member constants (:func:`~.reduce_consts.spell_members`), shadowed alike."""
    root = plan.source.tree.root_node
    shadowed: set[str] = set()
    functions = [n for n in walk(root) if n.type == "function_definition"]
    for fn in functions:
        for n in walk(fn):
            d = n.child_by_field_name("declarator") if n.type in _DECLARATORS else None
            if d is not None and d.type == "identifier":
                shadowed.add(text(d))
    spans = [(fn.start_byte, fn.end_byte) for fn in functions]
    found: dict[str, int] = {}
    for decl in walk(root):  # the file's and its namespaces' declarations
        if decl.type != "declaration" or any(a <= decl.start_byte < b for a, b in spans):
            continue
        for d in decl.children_by_field_name("declarator"):
            name = d.child_by_field_name("declarator") if d.type == "init_declarator" else None
            value = constant(plan, name) if name is not None and name.type == "identifier" \
                and text(name) not in shadowed else None
            if name is not None and value is not None:
                found[text(name)] = value
    return {**{k: v for k, v in (members or {}).items() if k not in shadowed}, **found}


def _launch_bounds(plan: Plan) -> None:
    """Tie ``__launch_bounds__`` to the lifted block size; add MIN_BLOCKS_PER_SM (the
    register cap that lets that many blocks share an SM) where the author gave none."""
    if plan.launch_bounds is None:
        return
    fn = plan.source.function_node(plan.kernel)
    bounds = next((c for c in fn.children if c.type == "launch_bounds"), None)
    if bounds is not None and len(bounds.named_children) > 1:
        plan.rw.replace(bounds.named_children[0], plan.launch_bounds)
        return
    threads = plan.launch_bounds
    # 0 gives no minimum: ptxas's own register heuristic, as written (an explicit 1 lets it
    # take up to 255 registers: percell_compute at 8 items went from 63 to 255)
    plan.add_param("MIN_BLOCKS_PER_SM", {"kind": "choice", "values": [0, 1, 2, 4], "default": 0,
                                         "description": "blocks that must fit on one SM: "
                                                        "caps registers per thread (0: no "
                                                        "minimum, the compiler's choice, as "
                                                        "written)"},
                   f"{plan.kernel.line}: __launch_bounds__")
    product = threads if " " not in threads else f"({threads})"
    plan.constrain(f"{product} * MIN_BLOCKS_PER_SM <= 2048")
    # a minimum whose register share is still ptxas's 255 a thread (65536 / (threads * MIN)
    # >= 256) caps nothing MIN 1 does not: the same code (sm_90 nvdisasm: stereo_sad64 at
    # 32 x 2 threads, MIN 1, 2 and 4), so the twin leaves the space
    plan.constrain(f"MIN_BLOCKS_PER_SM <= 1 or {product} * MIN_BLOCKS_PER_SM > 256")
    text = f"{threads}, MIN_BLOCKS_PER_SM"
    if bounds is not None and bounds.named_children:
        plan.rw.replace(bounds.named_children[0], text)
    else:  # at 0 none, as written, where the preprocessor can tell (launch_minimum)
        decl = next(n for n in walk(fn) if n.type == "function_declarator")
        if not bounds_by_minimum(plan, threads, fn):
            plan.rw.insert(decl.start_byte, f"__launch_bounds__({text}) ")
    plan.note("MIN_BLOCKS_PER_SM", True, f"__launch_bounds__({threads}) with a minimum of "
              "resident blocks per SM (register cap); correct at every value")


_HEADER_LAST = "// the defaults are the kernel as written."


def _header(plan: Plan) -> set[str]:
    """The lifted parameters' guarded defaults (and the families' helpers) at the top of the
    file; returns the names it defined."""
    if not plan.params:
        return set()
    lines = ["// Tuning parameters lifted by the Kernel Workbench offline templater;",
             _HEADER_LAST]
    lines += define_lines([(p.name, p.spec["default"]) for p in plan.params.values()],
                          guarded=True)
    lines += plan.helpers
    block = "\n".join(lines) + "\n"
    root = plan.source.tree.root_node
    includes = [c for c in root.children if c.type == "preproc_include"]
    if includes:
        plan.rw.insert(includes[-1].end_byte, "\n" + block)
    else:
        at = 0
        # keep a leading comment block (the author's description) above the parameters
        for c in root.children:
            if c.type != "comment":
                break
            at = c.end_byte + 1
        plan.rw.insert(at, block + ("\n" if at == 0 else ""))
    return set(plan.params)


def _late_defaults(plan: Plan, defined: set[str], rendered: str) -> str:
    """``rendered`` with the guarded defaults of the parameters a lazy edit added while the
    file rendered (after :func:`_header`: the grid-stride items' SPAN), right after the
    header's first lines (or as a header of their own): every lifted parameter is named in
    the source, as a kernel folder's template must."""
    late = [(p.name, p.spec["default"]) for p in plan.params.values() if p.name not in defined]
    if not late:
        return rendered
    block = "\n".join(define_lines(late, guarded=True)) + "\n"
    at = rendered.find(_HEADER_LAST + "\n")
    if at < 0:
        return "// Tuning parameters lifted by the Kernel Workbench offline templater.\n" + \
            block + rendered
    at += len(_HEADER_LAST) + 1
    return rendered[:at] + block + rendered[at:]
