"""First contact with held-back set 22's pixel shuffle (issue 28):
benchmarks/corpus_compute_unseen22/pixel_shuffle_r2 writes one output element a thread,
``int total = N * C * OUT_H(H) * OUT_W(W); if (idx >= total) return;``, its parameters
``N, C, H, W`` launched with the folder's ``n, c, h, w``. The lift's space was empty at the
check shape (3432 elements, a multiple of no block): the whole-blocks rule
(:func:`~.regtile_shapes.constrain_whole_blocks`) looked for a comparison reading ``n``, a
name the kernel does not declare, and so kept ``n * c * 4 * h * w`` a multiple of the
block's share. The folder's scalar arguments are now read under the kernel's own names, by
position (:mod:`.parameter_names`): ``idx >= total`` bounds the extent, and the constraint
goes. A kernel with no guard keeps it.

Then the vector family: it read only ``if (i < n) { .. }``; its region model now reads
``if (i >= n) return; ..`` too (the statements after the exit,
:func:`~.vector_regions.flat_region`), a bound through an integer macro is a size (``(w) *
PS_R``), and a one-element region whose index is also read as a value (the gather's ``idx %
OUT_W(W)``) vectorizes with an output that is not ``__restrict__``: its lanes and items are
threads of the kernel as written, which run in no order (a loop's lanes, one thread's
elements in order, still refuse). VEC output elements a thread are stored as one aligned
vector (the expert's JV = 2 float2 store of both columns of an input pixel is VEC 2),
ITEMS_PER_THREAD vectors a thread.

Host (g++): the folder, a second hand (modern C++: a namespace ``constexpr`` factor and
block, ``static_cast`` indices, ``auto``, the plane index folded) and a third (C89: late
initialised locals, other parameter names, a ``#define R``, the work under ``if (i <
total)``), bit for bit against the kernel as written at the default, two mixes and the
all-ends configs' first and last.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen13
import held_back_unseen22
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen22.SET.root / "pixel_shuffle_r2"
GRID = ["ceil_div(n * c * 4 * h * w, 256)"]
SCALARS = {"n": "n", "c": "c", "h": "h", "w": "w"}
#: float4 stores, two a thread of 64 (3432 elements over 512 a block: seven blocks, the
#: last partly); float2 stores (the expert's JV 2), four a thread of 128, four blocks an SM
#: (3432 over 1024: four blocks).
MIXES = ({"BLOCK_THREADS": 64, "VEC": 4, "ITEMS_PER_THREAD": 2},
         {"BLOCK_THREADS": 128, "VEC": 2, "ITEMS_PER_THREAD": 4, "MIN_BLOCKS_PER_SM": 4})
WHOLE = "(n * c * 4 * h * w) % (BLOCK_THREADS * ITEMS_PER_THREAD) == 0"


#: Modern C++: namespace constants for the factor and the block, static_cast indices,
#: ``auto``, the extent a local of locals, the image and channel folded into one plane.
SECOND = """namespace {
constexpr int kR = 2;
constexpr int kThreads = 256;
}  // namespace

extern "C" __global__ void pixel_shuffle_r2(float* __restrict__ out, const float* __restrict__ in,
                                            int n, int c, int h, int w) {
  const auto o = static_cast<int>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x);
  const int ow = w * kR;
  const int oh = h * kR;
  const int count = n * c * oh * ow;
  if (o >= count) return;
  const int ox = o % ow;
  const int oy = (o / ow) % oh;
  const int plane = o / (ow * oh);  // image * c + channel
  const int src = ((plane * kR * kR + (oy % kR) * kR + ox % kR) * h + oy / kR) * w + ox / kR;
  out[o] = in[src];
}
"""

#: C89: locals declared first and set later, parameter names of its own (launched with n, c,
#: h, w by position), the factor a macro, the work under ``if (i < total)``.
THIRD = """#define R 2

extern "C" __global__ void pixel_shuffle_r2(float *dst, const float *src, int batch, int chans,
                                            int height, int width)
{
    int i;
    int total;
    i = blockIdx.x * 256 + threadIdx.x;
    total = batch * chans * height * width * R * R;
    if (i < total) {
        int ox = i % (width * R);
        int oy = i / (width * R) % (height * R);
        int plane = i / (width * R * height * R);
        dst[i] = src[((plane * R * R + oy % R * R + ox % R) * height + oy / R) * width + ox / R];
    }
}
"""

#: The folder's kernel without its guard: it writes every element of the blocks it launches.
UNGUARDED = FOLDER.joinpath("pixel_shuffle_r2.cu").read_text().replace(
    "    if (idx >= total)\n        return;\n", "")


def _lift(source: str) -> tuple[list[str], tuple[str, ...], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="pixel_shuffle_r2", grid=GRID, block=["256"],
                         scalars=SCALARS)
    return [p.name for p in lifted.params], lifted.constraints, lifted.notes, lifted.source


def test_the_folder_lift_is_bounded_and_vectorizes_the_stores() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    names = [p.name for p in lifted.params]
    assert {"BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD"} <= set(names), lifted.notes
    assert WHOLE not in lifted.constraints and not any(
        "% (BLOCK_THREADS" in c for c in lifted.constraints), lifted.constraints
    # VEC divides a row only where an item spans rows (ITEM_ROWS, session 35)
    assert not any("% VEC" in c and not c.startswith("ITEM_ROWS == 1 or ")
                   for c in lifted.constraints), lifted.constraints
    assert "} else if (idx < total) {  // the vector would cross total: one by one" in \
        lifted.source
    assert "VEC: applied: region over idx vectorized (line 24)" in lifted.notes
    assert lifted.grid == ("ceil_div(n * c * 4 * h * w, BLOCK_THREADS * VEC * ITEMS_PER_THREAD"
                           " * ITEM_ROWS)",)  # item rows: session 35 (test_s35_shuffle.py)
    assert "*reinterpret_cast<WbVec<float, VEC>*>(&out[idx]) = wb_out[wb_i];" in lifted.source
    # the lanes share one quotient of the run-time divisors (workbench.templater.vector_lanes)
    assert "int ox = wb_lane_mod(idx, wb_v, (((W) * PS_R)));" in lifted.source
    assert "(w * 2) >= VEC" in lifted.constraints


@pytest.mark.parametrize("source", [SECOND, THIRD], ids=["modern", "c89"])
def test_other_spellings_lift_the_same_knobs(source: str) -> None:
    names, constraints, notes, _text = _lift(source)
    assert {"BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD"} <= set(names), notes
    assert not any("% (BLOCK_THREADS" in c for c in constraints), constraints
    assert any(n.startswith("VEC: applied: region over") for n in notes), notes


def test_a_kernel_with_no_guard_keeps_whole_blocks() -> None:
    """No comparison bounds the extent: as written the kernel is right only where the
    blocks tile it, and so is each config (the note names the kernel's line)."""
    names, constraints, notes, _text = _lift(UNGUARDED)
    assert WHOLE in constraints, constraints
    assert "BLOCK_THREADS: applied: no comparison bounds the extent by C or H or N or W: the " \
        "kernel as written reads and writes whole tiles only (correct where n * c * 4 * h * w " \
        "is a multiple of its tile), so the space keeps n * c * 4 * h * w a multiple of " \
        "(BLOCK_THREADS * ITEMS_PER_THREAD) (line 21)" in notes, notes
    assert "VEC" not in names


def test_an_exit_past_the_bound_bounds_the_blocks_whatever_the_names() -> None:
    """The folder's kernel with one scalar more than the folder lists: the position of each is
    not known, so nothing is renamed (``total`` reads ``N``, no name the launch gives a size),
    but ``if (idx >= total) return;`` makes every thread past the bound leave: the blocks
    need not tile the extent. VEC no longer needs the bound as a size (session 31,
    :mod:`.vector_bound`): ``total`` is a local no statement after the exit changes, and the
    item whose vector would cross it takes its elements one by one (the folder's own lift,
    host-checked below, is the same region with ``total`` a size)."""
    source = FOLDER.joinpath("pixel_shuffle_r2.cu").read_text().replace("int H,\n",
                                                                         "int H, int pad,\n")
    assert "int pad" in source
    names, constraints, notes, text = _lift(source)
    assert not any("% (BLOCK_THREADS" in c for c in constraints), constraints
    assert {"VEC", "ITEMS_PER_THREAD"} <= set(names), notes
    assert not any("total" in c for c in constraints), constraints
    assert "} else if (idx < total) {  // the vector would cross total: one by one" in text


@pytest.mark.parametrize("guard", ["if (idx < total) return;", "if (total > idx) return;",
                                   "if (idx >= 0) {} else return;"])
def test_an_exit_below_a_bound_is_no_upper_bound(guard: str) -> None:
    """Leaving where the place is below a size (or a test with an ``else``) bounds nothing
    from above: the blocks stay whole (the kernel's count renamed apart as above, so the
    names alone bound nothing either)."""
    source = FOLDER.joinpath("pixel_shuffle_r2.cu").read_text().replace(
        "int H,\n", "int H, int pad,\n").replace("if (idx >= total)\n        return;", guard)
    assert guard in source
    _names, constraints, notes, _text = _lift(source)
    assert WHOLE in constraints, (constraints, notes)


def test_a_loop_reading_its_index_as_a_value_still_needs_restrict() -> None:
    """One thread's elements in order (a thread-stride loop): a read at another lane's value
    would run before the vectors' stores, where the loop as written stored first."""
    source = """__global__ void up2(float* y, const float* x, int n) {
  for (int j = threadIdx.x; j < n; j += 256) y[j] = x[j / 2];
}
"""
    lifted = lift_kernel(source, entry="up2", grid=["1"], block=["256"], scalars={"n": "n"})
    assert "VEC" not in [p.name for p in lifted.params]
    assert any("`y` is written and not __restrict__, and `j` is also read as a value" in n
               for n in lifted.notes), lifted.notes


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, [{k: v for k, v in mix.items()
                                            if k in template.param_names} for mix in MIXES])
    if not FULL_MATRIX:
        configs = configs[:5]
    assert any(c.get("VEC", 1) > 1 for c in configs), configs
    return same_as_written(kf, template, configs, held_back_unseen22.SET.host_source, tmp_path,
                           flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags) >= 4


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("source", [SECOND, THIRD], ids=["modern", "c89"])
def test_other_spellings_compute_as_written(source: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", source)
    assert _same_outputs(kf, tmp_path, host_flags) >= 4


#: Set 13's max pool: ``if (idx >= ho * wo) return;``, an output that is not __restrict__, the
#: index also read as a value (``oy = idx / wo``): the same three readings lift VEC there too
#: (strictly more knobs than before; host-checked at 12 x 18 outputs a plane, an even row
#: count for the planes' offsets ``blockIdx.y * ho * wo``).
POOL = held_back_unseen13.SET.root / "maxpool3s2_nchw"


def test_the_max_pool_vectorizes_its_early_exit_region() -> None:
    lifted = offline_template(load_kernel_folder(POOL)).lifted
    names = [p.name for p in lifted.params]
    assert {"BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"} <= set(names), \
        lifted.notes
    # the planes' offsets (blockIdx.y * ho * wo) keep ho a multiple of VEC (alignment); the
    # bound ho * wo needs no constraint of its own (the tail)
    assert "ho % VEC == 0" in lifted.constraints
    assert "(ho * wo) % VEC == 0" not in lifted.constraints


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_max_pool_computes_as_written(tmp_path: Path,
                                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(POOL, tmp_path / "folders", POOL.joinpath("maxpool3s2_nchw.cu").read_text())
    toml = kf.path / "kernel.toml"
    toml.write_text(toml.read_text().replace("small = { p = 3, h = 23, w = 37, ho = 11, wo = 18 }",
                                             "small = { p = 3, h = 25, w = 37, ho = 12, wo = 18 }"))
    kf = load_kernel_folder(toml.parent)
    assert kf.env(kf.check_shape, "fp32")["ho"] == 12
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    mixes = [{"BLOCK_THREADS": 64, "VEC": 4, "ITEMS_PER_THREAD": 2},
             {"BLOCK_THREADS": 96, "VEC": 2, "ITEMS_PER_THREAD": 4}]
    configs = host_configs(template, env, mixes)
    if not FULL_MATRIX:
        configs = configs[:5]
    assert same_as_written(kf, template, configs, held_back_unseen13.SET.host_source, tmp_path,
                           host_flags) >= 4


def test_a_map_naming_the_kernels_parameters_is_taken_as_keyed_by_them() -> None:
    """``{"n", "m", "c2"}`` for ``(float c2, int n, int m)``: a caller keyed the map by the
    kernel's names in another order; renaming by position would launch c2 with n."""
    from workbench.core.cuda_source import parse_cuda
    from workbench.templater.parameter_names import scalars_by_parameter

    kernel = parse_cuda('extern "C" __global__ void k(float* o, float c2, int n, int m) {}\n',
                        "k.cu").kernel("k")
    given = {"n": "n", "m": "m", "c2": "c2"}
    assert scalars_by_parameter(kernel, given) == given
    assert scalars_by_parameter(kernel, {"a": "x", "b": "n", "c": "m"}) == \
        {"c2": "x", "n": "n", "m": "m"}
    assert scalars_by_parameter(kernel, {"a": "x", "b": "n"}) == {"a": "x", "b": "n"}
