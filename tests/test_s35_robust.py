"""Session 35: stage 1's robustness to how people spell kernels, for three families whose
corpus kernels lift well. Each family has three kernels of this session's own
(tests/spellings_s35_robust/), written the way different programmers would; each is
compared with its family's corpus kernels (which knobs lift) and checked on the host (g++)
against the kernel as written at the default, the ends of the space and a mix of knobs.

(a) compute-bound per-element kernels with branches and loops (corpus_compute_unseen27/
    planck_band_frac, unseen26/bs_callput_hart): BLOCK_THREADS, ITEMS_PER_THREAD (the items'
    chains interleaved), MIN_BLOCKS_PER_SM, and the math knobs the element's operations
    allow. A literal block width (``blockIdx.x * TPB``) made debye_tail_macro a vector
    region (VEC, ITEMS_PER_THREAD as vectors), losing the interleave and FAST_MATH /
    FAST_DIV: the compute-bound test VEC asks (ilp.would_interleave) saw a loop in the body
    but not one in a helper the item calls, which the items family interleaves as well.
(b) grid-stride reductions to per-block partials (unseen27/mse_i16_partials): REDUCTION's
    BLOCK_THREADS, GRID_BLOCKS, VEC, ITEMS_PER_THREAD, FINAL, MIN_BLOCKS_PER_SM. A warp step
    written as a helper called by both stages (``acc = warp_sum(acc);``: the inliner copied
    a body once) was refused; the helper is now inlined at each call (below, (c)) and
    reduce_tail reads its copy, ``T v = acc;``, the warp loop over ``v``, ``acc = v;``, as
    the warp loop. moments_struct_xor (a struct of two partial quantities) is a documented
    gap: REDUCTION reads one accumulator.
(c) warp-per-row kernels (unseen26/rowquant_h16_s8: LANES, VEC, ITEMS_PER_THREAD, REG_ROW,
    the warps a block, MIN_BLOCKS_PER_SM). Two spellings kept their row in memory:
    l2norm_f64_rows_sizet reads ``*(src + c)`` (REG_ROW read ``P[c]`` only: warp_regs now
    reads ``*(P + E)``, ``__ldg(&P[E])`` and ``__ldg(P + E)`` as the element ``P[E]``), and
    rowmax_i32_tpl's while loops over one reused counter read through ``__ldg(&cr[c])``
    stayed while loops (loop_forms_reuse took ``&cr[c]`` for the counter's address: now only
    ``&c``, ``&c.x``, ``&c[0]`` are), so nothing lifted. Both lanes' vector paths and the
    kept row replace ``__ldg(&P[E])`` whole (vector_access.ldg_call): ``__ldg`` of a
    register's address would load a local address through the global path.
    A helper that carries the launch and keeps no state (no ``__shared__`` or ``static``
    storage) is now inlined at each of its calls, one after another
    (inline_site._only_call): layernorm_rows_yw's ``warp_allreduce_sum``, called by both
    statistics, left its lanes unread (WARPS_PER_BLOCK, ROWS, LDG, AHEAD); it now lifts
    LANES, VEC, ITEMS_PER_THREAD, REG_ROW (the expert's VEC and REGS), WARPS_PER_BLOCK and
    MIN_BLOCKS_PER_SM. minmax_sum_partials (a struct merged by a helper called twice) keeps
    its knobs (BLOCK_THREADS, MIN_BLOCKS_PER_SM) over the inlined source. Both are
    host-checked here.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import held_back_unseen26
import held_back_unseen27
import pytest
from held_back_harness import same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401  (the session fixture)
from test_templater_warp2 import SHFL_SYNC

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_calls import inline_calls

SPELLINGS = Path(__file__).resolve().parent / "spellings_s35_robust"
BENCH = held_back_unseen27.SET.root.parent

#: What the corpus kernel of each family lifts (the comparison the pure test makes).
PER_ELEMENT = frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"})
PARTIALS = frozenset({"BLOCK_THREADS", "GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD", "FINAL",
                      "MIN_BLOCKS_PER_SM"})
#: rowquant_h16_s8's (besides the warps a block, named after the kernel's constant)
ROWS = frozenset({"LANES", "VEC", "ITEMS_PER_THREAD", "REG_ROW", "MIN_BLOCKS_PER_SM"})

#: corpus kernels of the families: folder -> its knobs
CORPUS: dict[str, tuple[Path, frozenset[str]]] = {
    "planck_band_frac": (BENCH / "corpus_compute_unseen27" / "planck_band_frac",
                         PER_ELEMENT | {"FAST_MATH", "FAST_DIV"}),
    "bs_callput_hart": (BENCH / "corpus_compute_unseen26" / "bs_callput_hart", PER_ELEMENT),
    "mse_i16_partials": (BENCH / "corpus_compute_unseen27" / "mse_i16_partials", PARTIALS),
    "rowquant_h16_s8": (BENCH / "corpus_compute_unseen26" / "rowquant_h16_s8",
                        ROWS | {"WARPS_PER_BLOCK"}),
    "layernorm_rows_yw": (BENCH / "corpus_compute_unseen27" / "layernorm_rows_yw",
                          ROWS | {"WARPS_PER_BLOCK"}),
    "minmax_sum_partials": (BENCH / "corpus_compute_unseen26" / "minmax_sum_partials",
                            frozenset({"BLOCK_THREADS", "MIN_BLOCKS_PER_SM"})),
}

#: this session's kernels: name -> (family's knobs it must lift, its own extra knobs, the
#: mixes checked on the host beside the default and the ends, bit for bit or not)
KERNELS: dict[str, tuple[frozenset[str], frozenset[str], list[dict[str, int]], bool]] = {
    # fp32 series in a helper: the math knobs as planck_band_frac's
    "debye_tail_macro": (PER_ELEMENT, frozenset({"FAST_MATH", "FAST_DIV"}), [
        {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "FAST_MATH": 1, "FAST_DIV": 0},
        {"BLOCK_THREADS": 160, "ITEMS_PER_THREAD": 2, "MIN_BLOCKS_PER_SM": 2}], False),
    # a Newton solve in double in the body: its trips known, so UNROLL, and the double
    # division knobs
    "bond_yield_tpl_f64": (PER_ELEMENT, frozenset({"UNROLL", "DIV_FOLD", "DIV_RCP"}), [
        {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 2},
        {"BLOCK_THREADS": 224, "ITEMS_PER_THREAD": 2, "DIV_RCP": 1, "DIV_FOLD": 1}], False),
    "collatz_len_u32": (PER_ELEMENT, frozenset(), [
        {"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 4},
        {"BLOCK_THREADS": 512, "ITEMS_PER_THREAD": 2, "MIN_BLOCKS_PER_SM": 2}], True),
    "sad_u8_partials": (PARTIALS, frozenset(), [
        {"BLOCK_THREADS": 128, "GRID_BLOCKS": 58, "VEC": 4, "ITEMS_PER_THREAD": 2,
         "FINAL": 1},
        {"BLOCK_THREADS": 1024, "GRID_BLOCKS": 72, "VEC": 8, "ITEMS_PER_THREAD": 4,
         "FINAL": 0}], False),
    # the float run bound: GRID_BLOCKS * BLOCK_THREADS * 2 >= 262144
    "dot_f64_while_shfl": (PARTIALS, frozenset(), [
        {"BLOCK_THREADS": 1024, "GRID_BLOCKS": 132, "VEC": 4, "ITEMS_PER_THREAD": 2,
         "FINAL": 1},
        {"BLOCK_THREADS": 512, "GRID_BLOCKS": 264, "VEC": 2, "ITEMS_PER_THREAD": 4,
         "FINAL": 0}], False),
    # warp-per-row: the row kept in registers past its statistic (REG_ROW at the cache that
    # holds the check shape's row: 384 for 328 columns, 256 for 200; VEC at most 16 bytes of
    # the widest stream: 4 floats or ints); a float sum of squares at VEC > 1 adds each
    # lane's elements in another order (within the tolerance), a double or integer one bit
    # for bit here
    "rmsnorm_h16_rows_macro": (ROWS, frozenset({"RPB"}), [
        {"LANES": 32, "VEC": 4, "REG_ROW": 384, "RPB": 1},
        {"LANES": 8, "VEC": 4, "REG_ROW": 384, "RPB": 2},
        {"LANES": 16, "VEC": 2, "ITEMS_PER_THREAD": 4, "RPB": 8}], False),
    "l2norm_f64_rows_sizet": (ROWS, frozenset({"WARPS_PER_BLOCK"}), [
        {"LANES": 32, "VEC": 4, "REG_ROW": 256, "WARPS_PER_BLOCK": 1},
        {"LANES": 4, "VEC": 2, "REG_ROW": 256, "WARPS_PER_BLOCK": 2},
        {"LANES": 16, "VEC": 1, "ITEMS_PER_THREAD": 4, "WARPS_PER_BLOCK": 8}], True),
    "rowmax_i32_tpl": (ROWS, frozenset({"WARPS"}), [
        {"LANES": 32, "VEC": 4, "REG_ROW": 384, "WARPS": 1},
        {"LANES": 8, "VEC": 4, "REG_ROW": 384, "WARPS": 2},
        {"LANES": 16, "VEC": 2, "ITEMS_PER_THREAD": 4, "WARPS": 8}], True),
}

#: spellings that lift less than their family's corpus kernel, asserted and documented:
#: name -> (its knobs, the refusal that names the line, the mixes checked on the host)
GAPS: dict[str, tuple[frozenset[str], str, list[dict[str, int]]]] = {
    # two partial quantities in a struct (sum and sum of squares): REDUCTION reads one
    # accumulator (reduce_match), so the block size and FINAL stay as written; the
    # grid-stride loop's VEC / ITEMS_PER_THREAD and GRID_BLOCKS lift (set 26's
    # minmax_sum_partials, a struct of three, lifts less still)
    "moments_struct_xor": (frozenset({"GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD"}),
                           "REDUCTION: not applied: after the grid-stride loop the kernel must "
                           "be exactly `buf[tid] = s;`, `__syncthreads();`, the halving tree and "
                           "thread 0's store (line 37)", [
                               {"GRID_BLOCKS": 512, "VEC": 4, "ITEMS_PER_THREAD": 2},
                               {"GRID_BLOCKS": 640, "VEC": 2, "ITEMS_PER_THREAD": 8}]),
}

#: Host forms of what this session's kernels use: set 26's built-ins (half, the round-to-
#: nearest conversion), set 27's (the fast exponential and division), the broadcast
#: shuffle and the float-to-half conversion (after set 26's half type).
HOST_EXTRAS = held_back_unseen27.HOST_EXTRAS + SHFL_SYNC + r"""
static inline __half __float2half(float f) { return (__half)f; }
"""


def _host(source: str) -> str:
    return held_back_unseen26.SET.host_source(HOST_EXTRAS + source)


def _folder(name: str) -> KernelFolder:
    return load_kernel_folder(SPELLINGS / name)


def _knobs(kf: KernelFolder) -> set[str]:
    return {p.name for p in offline_template(kf).lifted.params}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_family_corpus_kernels_lift_their_knobs(name: str) -> None:
    path, knobs = CORPUS[name]
    assert _knobs(load_kernel_folder(path)) == knobs


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_spelling_lifts_its_familys_knobs(name: str) -> None:
    family, extra, _mixes, _exact = KERNELS[name]
    assert _knobs(_folder(name)) == family | extra


def test_a_literal_block_leaves_a_compute_bound_element_to_the_items() -> None:
    notes = offline_template(_folder("debye_tail_macro")).lifted.notes
    assert any(n.startswith("VEC: not applied: the per-element work runs a compute loop "
                            "(line 20)") for n in notes), notes
    assert any(n.startswith("ITEMS_PER_THREAD: applied: 3 item-dependent local(s) (T, idx, v)"
                            " get one copy per item; the items' calls of `debye_tail` (its "
                            "loop at line 20) run in one") for n in notes), notes


def test_the_kept_row_reads_pointer_arithmetic_and_ldg_as_elements() -> None:
    """Each cached pass reads the register, never ``__ldg`` of it; the fill loads from the
    row's element address."""
    for name, fill in (("l2norm_f64_rows_sizet", "(&*(src + (wb_at)))"),
                       ("rowmax_i32_tpl", "((&cr[(wb_at)]))")):
        source = offline_template(_folder(name)).lifted.source
        assert "wb_keep[wb_s] = *reinterpret_cast<const WbVec<" in source
        assert f">*>{fill};" in source, name
        assert "__ldg(&wb_" not in source and "__ldg(&wb_keep" not in source


def test_a_warp_step_in_a_helper_called_twice_is_read_as_its_loop() -> None:
    notes = offline_template(_folder("dot_f64_while_shfl")).lifted.notes
    assert any(n.startswith("REDUCTION: applied: grid-stride sum over `i` into `acc`; the "
                            "block's stage after the loop") for n in notes), notes


@pytest.mark.parametrize("name", sorted(GAPS))
def test_a_documented_gap_lifts_what_it_says(name: str) -> None:
    knobs, refusal, _mixes = GAPS[name]
    lifted = offline_template(_folder(name)).lifted
    assert {p.name for p in lifted.params} == knobs
    assert refusal in lifted.notes, lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(GAPS))
def test_a_documented_gap_computes_as_written(name: str, tmp_path: Path,
                                              host_flags: tuple[str, ...]) -> None:  # noqa: F811
    _knobs_lifted, _refusal, mixes = GAPS[name]
    kf = _folder(name)
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), mixes)
    assert same_as_written(kf, template, configs, _host, tmp_path, host_flags,
                           within_tolerance=True) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_spelling_computes_as_written(name: str, tmp_path: Path,
                                           host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """The default, each mix and the all-ends configs' first and last: bit for bit where
    every knob keeps the order of the operations, else as the engine compares (a sum in
    another order, fast math within the folder's tolerance)."""
    _family, _extra, mixes, exact = KERNELS[name]
    kf = _folder(name)
    template = offline_template(kf).template
    configs: list[dict[str, Any]] = host_configs(template, kf.env(kf.check_shape, "fp32"), mixes)
    assert len(configs) >= 4
    assert same_as_written(kf, template, configs, _host, tmp_path, host_flags,
                           within_tolerance=not exact) == len(configs)


# -- a stateless helper called twice: inlined at each call --------------------------------

TWICE = """
__device__ float lanes_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
extern "C" __global__ void k(float* y, const float* x, int n) {
  const float a = lanes_sum(x[threadIdx.x]);
  const float b = lanes_sum(a * a);
  y[threadIdx.x] = a + b;
}
"""


def test_a_stateless_helper_called_twice_is_inlined_at_each_call() -> None:
    done = inline_calls(TWICE, "k", "k.cu")
    assert [f.applied for f in done.findings] == [True, True], done.findings
    body = done.text[done.text.index('extern "C"'):]
    assert "lanes_sum(" not in body.replace("// lanes_sum(", "")
    assert body.count("__shfl_xor_sync") == 2
    # one state a block: each call would share it, so it stays a call
    shared = TWICE.replace("__device__ float lanes_sum(float v) {",
                           "__device__ float lanes_sum(float v) {\n  __shared__ float s[32];")
    refused = inline_calls(shared, "k", "k.cu")
    assert refused.text == shared
    assert "called 2 times" in refused.findings[-1].reason


def _with_cols(path: Path, root: Path, cols: int) -> KernelFolder:
    """A copy of the folder with its check shape's row length ``cols``."""
    copy = root / path.name
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("expert"))
    toml = copy / "kernel.toml"
    text, hits = re.subn(r"^(small = \{.*\bcols = )\d+", lambda m: f"{m.group(1)}{cols}",
                         toml.read_text(), flags=re.M)
    assert hits == 1
    toml.write_text(text)
    return load_kernel_folder(copy)


#: the corpus kernels the inlining changes: (folder at the check shape or at another row
#: length, the host source, the mixes)
INLINED: dict[str, tuple[Path, int | None, list[dict[str, int]]]] = {
    # 203 columns: VEC 1 (cols % VEC), the cache of 256; 200: float4 groups
    "layernorm_rows_yw": (CORPUS["layernorm_rows_yw"][0], None, [
        {"LANES": 8, "REG_ROW": 256, "WARPS_PER_BLOCK": 2},
        {"LANES": 32, "ITEMS_PER_THREAD": 4, "WARPS_PER_BLOCK": 8}]),
    "layernorm_rows_yw_200": (CORPUS["layernorm_rows_yw"][0], 200, [
        {"LANES": 32, "VEC": 4, "REG_ROW": 256, "WARPS_PER_BLOCK": 1},
        {"LANES": 16, "VEC": 2, "ITEMS_PER_THREAD": 2, "WARPS_PER_BLOCK": 4}]),
    "minmax_sum_partials": (CORPUS["minmax_sum_partials"][0], None, [
        {"BLOCK_THREADS": 96, "MIN_BLOCKS_PER_SM": 0},
        {"BLOCK_THREADS": 1024, "MIN_BLOCKS_PER_SM": 2}]),
}


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(INLINED))
def test_the_corpus_kernels_inlined_at_each_call_compute_as_written(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    path, cols, mixes = INLINED[name]
    kf = load_kernel_folder(path) if cols is None else _with_cols(path, tmp_path / "f", cols)
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), mixes)
    assert same_as_written(kf, template, configs, _host, tmp_path / "run", host_flags,
                           within_tolerance=True) == len(configs)
