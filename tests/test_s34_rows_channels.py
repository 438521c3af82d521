"""Session 34 (issue 28): register rows for a multi-channel 2-D filter, with its window in
shared memory.

nhwc_conv5x5_c3to4 (held-back set 25; 0.79x of the expert on the H200) keeps four sums a
pixel, ``float acc[COUT]`` initialised from the bias in a loop, adds each tap's RGB pixel
(fetched by a read-only ``__device__`` helper returning a struct, zeros outside the image)
into each sum in a loop over the channels, and stores them in a loop. The window family
refused it (several loops, an array accumulator), so the templater offered the per-pixel
ITEMS_PER_THREAD, which re-reads every input row. :mod:`.conv_centre` now takes it
(:mod:`.conv_centre_arrays`): OUT_Y rows a thread, each of the ``OUT_Y + 4`` input rows'
pixels fetched once and added, as written, into every row's sums it feeds (each row's
``acc`` a reference into ``wb_acc[OUT_Y][COUT]``; the plane's pointer declared once, read by
every row). :mod:`.conv_centre_stage` offers USE_SMEM (the block's ``(BLOCK_Y * OUT_Y + 4)
x (BLOCK_X + 4)`` window of the helper's pixels staged once before the check), and the
stores keep STORE_VEC. Each output adds its terms in the written order (dy, dx, then the
channel's three products as written): bit-identical at every config.

Set 9's bilateral5 (a centre-weighted window, already lifted by :mod:`.conv_centre`) gains the
same USE_SMEM.

Host (g++): the corpus kernel and two respellings (constexpr sizes, windows counted from 0,
flat weight indices, an inline zero-padding test in the helper, the plane on blockIdx.z in a
local; #define sizes, the check wrapping the work, a helper returning through a ternary of
two structs, the sums zeroed then biased) bit for bit against the kernels as written at the
default, mixes and the all-ends configs' first and last; bilateral5 at USE_SMEM = 1.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen9
import held_back_unseen25
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

CONV = held_back_unseen25.SET.root / "nhwc_conv5x5_c3to4"
SPELLINGS = Path(__file__).resolve().parent / "spellings_s34_rows"
KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_Y", "USE_SMEM", "STORE_VEC", "MIN_BLOCKS_PER_SM"}
NAMES = ["nhwc_conv5x5_c3to4", "nhwc_conv5x5_indexed", "nhwc_conv5x5_macro_helper"]
MIXES = [{"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_Y": 2, "USE_SMEM": 1, "STORE_VEC": 1},
         {"BLOCK_X": 8, "BLOCK_Y": 8, "OUT_Y": 4, "USE_SMEM": 0, "STORE_VEC": 1},
         {"BLOCK_X": 16, "BLOCK_Y": 4, "OUT_Y": 8, "USE_SMEM": 1, "STORE_VEC": 0}]


def _folder(name: str, root: Path) -> KernelFolder:
    if name == "nhwc_conv5x5_c3to4":
        return load_kernel_folder(CONV)
    return respelled(CONV, root, (SPELLINGS / f"{name}.cu").read_text())


@pytest.mark.parametrize("name", NAMES)
def test_the_channels_rows_lift_with_a_staged_window(name: str, tmp_path: Path) -> None:
    lifted = offline_template(_folder(name, tmp_path)).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    assert any(n.startswith("OUT_Y: applied: each thread computes OUT_Y consecutive rows of "
                            "the 5 x 5 window") for n in lifted.notes), lifted.notes
    assert any(n.startswith("USE_SMEM: applied: the block's (BLOCK_Y * OUT_Y + 4) x (BLOCK_X "
                            "+ 4) window") for n in lifted.notes), lifted.notes
    assert "__shared__ Rgb wb_tile[" in lifted.source
    assert "ITEMS_PER_THREAD" not in {p.name for p in lifted.params}


_FILTER = """#define C 4
__constant__ float w[C][3][3];
extern "C" __global__ void f(float *out, const float *in, int W, int H)
{{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    float acc[C];
    for (int o = 0; o < C; ++o)
        {init}
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {{
            int yy = min(max(y + dy, 0), H - 1), xx = min(max({col}, 0), W - 1);
            float v = in[yy * W + xx]{second};
            for (int o = 0; o < C; ++o)
                acc[o] += w[o][dy + 1][dx + 1] * v;
        }}
    for (int o = 0; o < C; ++o)
        out[(y * W + x) * C + o] = acc[o];
}}
"""


def _lift(init: str = "acc[o] = 0.0f;", col: str = "x + dx", second: str = ""
          ) -> tuple[set[str], tuple[str, ...]]:
    source = _FILTER.format(init=init, col=col, second=second)
    lifted = lift_kernel(source, entry="f", grid=["ceil_div(W, 32)", "ceil_div(H, 8)"],
                         block=["32", "8"], scalars={"W": "W", "H": "H"})
    return {p.name for p in lifted.params}, lifted.notes


def test_a_channel_filter_with_clamped_reads_lifts_rows_and_a_window() -> None:
    names, notes = _lift()
    assert {"OUT_Y", "USE_SMEM"} <= names, notes


def test_a_read_whose_column_is_not_x_plus_dx_stays_per_thread() -> None:
    names, notes = _lift(col="2 * x + dx")
    assert "OUT_Y" in names and "USE_SMEM" not in names, notes
    assert any(n.startswith("USE_SMEM: not applied: `") and "other than through x + dx" in n
               for n in notes), notes


def test_two_reads_a_tap_are_not_staged() -> None:
    names, notes = _lift(second=" + in[(H - 1 - yy) * W + xx]")
    assert "USE_SMEM" not in names, notes


def test_an_initialisation_writing_memory_is_refused_with_its_line() -> None:
    names, notes = _lift(init="{ acc[o] = 0.0f; out[o] = 0.0f; }")
    assert "OUT_Y" not in names, notes
    assert any(n.startswith("OUT_Y: not applied: `out[o] = 0.0f` before the window writes "
                            "other than the output's state (line 10)") for n in notes), notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", NAMES)
def test_the_channels_rows_compute_as_written(name: str, tmp_path: Path,
                                              host_flags: tuple[str, ...]  # noqa: F811
                                              ) -> None:
    kf = _folder(name, tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), MIXES)
    if not FULL_MATRIX:
        configs = configs[:6]
    assert any(c["OUT_Y"] > 1 and c["USE_SMEM"] == 1 for c in configs)
    assert same_as_written(kf, template, configs, held_back_unseen25.SET.host_source,
                           tmp_path / "run", host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_bilateral_window_in_shared_memory_computes_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]  # noqa: F811
) -> None:
    kf = held_back_unseen9.SET.folder("bilateral5")
    template = offline_template(kf).template
    assert "USE_SMEM" in {p.name for p in template.params}
    configs = [c for c in host_configs(template, kf.env(kf.check_shape, "fp32"), [
        {"USE_SMEM": 1}, {"USE_SMEM": 1, "OUT_Y": 4, "BLOCK_X": 16, "BLOCK_Y": 4}])
        if c["USE_SMEM"] == 1]
    assert same_as_written(kf, template, configs[:3], held_back_unseen9.SET.host_source,
                           tmp_path / "run", host_flags, within_tolerance=True) == \
        len(configs[:3])


def test_values_gathered_into_an_array_stay_with_the_gather_family() -> None:
    """A median's window fills ``v[k] = ..`` (no sum per channel) and sorts it after: not
    rows of sums (session 14's median3x3_clamp spellings keep gather_stage's USE_SMEM)."""
    names, notes = _lift(init="acc[o] = 0.0f;")
    assert "OUT_Y" in names, notes
    source = _FILTER.format(init="acc[o] = 0.0f;", col="x + dx", second="").replace(
        "acc[o] += w[o][dy + 1][dx + 1] * v;", "acc[o] = w[o][dy + 1][dx + 1] * v;")
    lifted = lift_kernel(source, entry="f", grid=["ceil_div(W, 32)", "ceil_div(H, 8)"],
                         block=["32", "8"], scalars={"W": "W", "H": "H"})
    assert "OUT_Y" not in {p.name for p in lifted.params}, lifted.notes
