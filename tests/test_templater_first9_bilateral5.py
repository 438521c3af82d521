"""First contact with held-back set 9's bilateral filter (issue 28): benchmarks/
corpus_compute_unseen9/bilateral5 filters each pixel in a ``__device__`` helper
(``out[y * W + x] = bilateral_pixel(img, x, y, H, W)``) whose 5 x 5 taps weigh each
neighbour by its difference to the centre value and sum into two accumulators. The helper
stayed a call (a value helper), so the lift had BLOCK_X/BLOCK_Y/ITEMS_X/ITEMS_Y only (1.01x on
the H100, the expert's rows per thread and __expf 1.59x). Now: inline_calls inlines a helper
whose loop reads a window around the thread's point, assigned by a store; conv_centre gives
the window OUT_Y (each input row loaded once for every output row, each row on its own
centre and sums) and FAST_MATH (expf as __expf, gated by the folder's tolerance).

Pure: the knobs, the rewrite's shape, two other spellings of a centre-weighted window (a
3 x 3 range filter with zero padding through a pure helper; a 7 x 7 filter with a table of
spatial weights in constant memory and fmaf accumulations), the refusals with their reasons,
and a one-accumulator window left to conv. Host (g++): each lift at its default, every
all-ends config and mixes (the expert's tuned pick spelled in the lift's knobs first)
against the kernel as written, element for element (the rewrite adds every output's taps in
the written order: the same bits; FAST_MATH's __expf is expf on the host, the GPU gate
checks its tolerance).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen9
import numpy as np
import pytest
from held_back_harness import respelled
from helpers_templater import end_configs, needs_gxx
from test_corpus_unseen3 import (
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen9.ROOT / "bilateral5"
#: USE_SMEM since session 34: the window's one read staged (workbench/templater/
#: conv_centre_stage.py)
KNOBS = ("BLOCK_X", "BLOCK_Y", "OUT_Y", "USE_SMEM", "FAST_MATH", "MIN_BLOCKS_PER_SM")
#: The expert's tuned pick on the H100 (BX 32, BY 4, ITEMS_Y 8, FAST_EXP 1; its USE_SMEM has
#: no counterpart), then a flat wide block of two rows and a narrow tall one of four.
MIXES = [{"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_Y": 8, "FAST_MATH": 1},
         {"BLOCK_X": 128, "BLOCK_Y": 1, "OUT_Y": 2, "FAST_MATH": 0},
         {"BLOCK_X": 8, "BLOCK_Y": 32, "OUT_Y": 4, "FAST_MATH": 1, "MIN_BLOCKS_PER_SM": 2}]

#: A 3 x 3 range filter: macros, loops from 0, zero padding as an `if` around the tap, the
#: range weight in a pure helper, `acc = acc + ..`, unsigned-free int indices.
RANGE3 = """#define R 1
#define DIAM (2 * R + 1)
__device__ __forceinline__ float range_w(float d) { return expf(-d * d * 12.5f); }

extern "C" __global__ void bilateral5(float* out, const float* img, int H, int W) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  float c = img[y * W + x];
  float acc = 0.f;
  float wsum = 0.f;
  for (int i = 0; i < DIAM; i++) {
    int sy = y + i - R;
    for (int j = 0; j < DIAM; j++) {
      int sx = x + j - R;
      if (sy >= 0 && sy < H && sx >= 0 && sx < W) {
        float v = img[sy * W + sx];
        float wt = range_w(v - c);
        acc = acc + wt * v;
        wsum += wt;
      }
    }
  }
  out[y * W + x] = acc / wsum;
}
"""

#: The 1.5-pixel Gaussian of bilateral5 over a 7 x 7 window, as an initializer.
_GAUSS7 = ", ".join(f"{np.exp(-(a * a + b * b) / 4.5):.8f}f"
                    for a in range(-3, 4) for b in range(-3, 4))

#: A 7 x 7 filter: the spatial weights a table in constant memory (read at the tap, the
#: same for every row), clamped edges, fmaf accumulations, the work inside `if (in range)`.
TABLE7 = """constexpr int RAD = 3;
__constant__ float spatial[7][7] = {GAUSS7};

extern "C" __global__ void bilateral5(float* out, const float* img, int H, int W) {
  const int x = threadIdx.x + blockIdx.x * blockDim.x;
  const int y = threadIdx.y + blockIdx.y * blockDim.y;
  if (x < W && y < H) {
    const float mid = img[y * W + x];
    float top = 0.0f, bottom = 0.0f;
    for (int a = -RAD; a <= RAD; ++a) {
      const int row = max(0, min(H - 1, y + a));
      for (int b = -RAD; b <= RAD; ++b) {
        const float v = img[row * W + max(0, min(W - 1, x + b))];
        const float d = v - mid;
        const float wt = spatial[a + RAD][b + RAD] * expf(-50.0f * d * d);
        top = fmaf(wt, v, top);
        bottom += wt;
      }
    }
    out[y * W + x] = top / bottom;
  }
}
""".replace("GAUSS7", _GAUSS7)


def _lift(source: str) -> Any:
    return lift_kernel(source, entry="bilateral5", grid=["ceil_div(W, 32)", "ceil_div(H, 8)"],
                       block=["32", "8"], scalars={"H": "H", "W": "W"})


def test_bilateral5_lifts_rows_per_thread_and_the_fast_exponential() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    assert tuple(p.name for p in result.lifted.params) == KNOBS, result.notes
    assert result.lifted.grid == ("ceil_div(W, BLOCK_X)", "ceil_div(H, BLOCK_Y * OUT_Y)")
    assert result.lifted.block == ("BLOCK_X", "BLOCK_Y")
    assert any(n.startswith("INLINE: applied: bilateral_pixel inlined") for n in result.notes)
    note = next(n for n in result.notes if n.startswith("OUT_Y: applied"))
    assert "each on its own center, num, den" in note
    source = result.lifted.source
    assert "bilateral_pixel" not in source.split("inlined", 1)[1]  # no call left
    # one load per input row and column, read where the first row needing it is in range
    # (and once more in USE_SMEM's fill of the block's window)
    assert source.count("img[yy * W + xx]") == 2
    assert "(y + wb_first) < H) ? (float)(img[yy * W + xx]) : (float)0" in source
    assert "#define WB_F_expf __expf" in source


ADDED = FOLDER.joinpath("bilateral5.cu").read_text().replace(
    "out[y * W + x] = bilateral_pixel", "out[y * W + x] += bilateral_pixel")


def test_a_result_added_into_the_output_is_inlined_before_the_add() -> None:
    """``out[i] += f(..)``: the right side of a compound assignment runs before its left,
    so the helper's body runs first and its value is added (a3c8f43); each output is still
    one thread's, so the rows a thread lift as for ``=``, each row adding its own value
    once under its own guard. (The host harness poisons outputs with NaN, so it cannot
    compare a kernel that reads its output: no host run here.)"""
    lifted = _lift(ADDED)
    assert any(n.startswith("INLINE: applied: bilateral_pixel inlined into bilateral5")
               for n in lifted.notes), lifted.notes
    assert "OUT_Y" in {p.name for p in lifted.params}, lifted.notes
    assert ("if ((x < W && (y + wb_k) < H)) {\n      const int y = wb_y0 + wb_k; auto& num = "
            "wb_num[wb_k]; auto& den = wb_den[wb_k]; out[y * W + x] += num / den;"
            ) in lifted.source


@pytest.mark.parametrize(("source", "state"), [(RANGE3, "c, acc, wsum"),
                                               (TABLE7, "mid, top, bottom")],
                         ids=["range3", "table7"])
def test_other_spellings_of_a_centre_weighted_window_lift_the_same_knobs(
        source: str, state: str) -> None:
    lifted = _lift(source)
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert any(n.startswith("OUT_Y: applied") and f"its own {state}" in n
               for n in lifted.notes), lifted.notes


def test_zero_padding_guards_the_shared_load_with_the_taps_condition() -> None:
    source = _lift(RANGE3).source
    assert ("!(x >= W || (y + wb_first) >= H) && (sy >= 0 && sy < H && sx >= 0 && sx < W) ? "
            "(float)(img[sy * W + sx]) : (float)0") in source


def test_a_table_read_the_same_for_every_row_stays_in_the_taps() -> None:
    source = _lift(TABLE7).source
    assert source.count("img[row * W + max(0, min(W - 1, x + b))]") == 2  # rows, fill
    assert "spatial[a + RAD][b + RAD] * WB_F_expf(" in source


_BODY = """extern "C" __global__ void bilateral5(float* out, const float* img, int H, int W) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  %(before)s
  if (x >= W || y >= H) return;
  const float c = img[y * W + x];
  float num = 0.0f, den = 0.0f;
  for (int dy = -2; dy <= 2; ++dy) {
    for (int dx = -2; dx <= 2; ++dx) {
      %(tap)s
      const float w = expf(-(v - c) * (v - c) * 50.0f);
      num += w * v;
      den += w;
    }
  }
  out[y * W + x] = num / den;
}
"""
_CLAMPED = "const float v = img[min(max(y + dy, 0), H - 1) * W + min(max(x + dx, 0), W - 1)];"


@pytest.mark.parametrize(("before", "tap", "why"), [
    ("", "const float v = img[min(max(2 * y + dy, 0), H - 1) * W + x];",
     "depends on y and dy other than through y + dy"),
    ("", _CLAMPED + " out[0] = v;", "`out[0] = v` writes inside the window"),
    ("const int base = y * W;", "const float v = img[min(base + dy * W, H * W - 1)];",
     "`base` (line 4) derives from y outside the output's work"),
    ("", "const float v = __ldg(img + min(max(y + dy, 0), H - 1) * W + x);",
     "the taps call `__ldg`, which is not a pure function"),
    ("", "const float v = img[min(max(y + dy, 0), H - 1) * W + x] * img[(int)c];",
     "`img[(int)c]` reads the output's state"),
])
def test_what_the_family_cannot_prove_is_refused_with_the_reason(
        before: str, tap: str, why: str) -> None:
    lifted = _lift(_BODY % {"before": before, "tap": tap})
    refusals = [n for n in lifted.notes if n.startswith("OUT_Y: not applied")]
    assert any(why in n for n in refusals), lifted.notes
    assert "OUT_Y" not in {p.name for p in lifted.params}


def test_a_bounds_check_through_a_local_of_the_row_is_refused() -> None:
    """Each row's check is the check with y moved; one through `row = y` would not move."""
    source = (_BODY % {"before": "const int row = y;", "tap": _CLAMPED}).replace(
        "if (x >= W || y >= H) return;", "if (x >= W || row >= H) return;")
    lifted = _lift(source)
    assert "OUT_Y: not applied: the bounds check reads `row`, which depends on y (line 5)" in \
        lifted.notes, lifted.notes


def test_a_window_with_one_accumulator_and_no_centre_stays_convs() -> None:
    """A plain correlation (weights that do not read the point): conv's OUT_X and USE_SMEM."""
    source = _BODY % {"before": "", "tap": _CLAMPED}
    source = source.replace("const float w = expf(-(v - c) * (v - c) * 50.0f);",
                            "const float w = 0.04f;").replace("den += w;", "")
    lifted = _lift(source.replace("num / den", "num").replace("const float c = img[y * W + x];",
                                                               ""))
    names = {p.name for p in lifted.params}
    assert {"OUT_Y", "OUT_X", "USE_SMEM"} <= names, lifted.notes
    assert not any("its own" in n for n in lifted.notes)


def _checked(template: Any, env: dict[str, Any]) -> list[dict[str, Any]]:
    """The default, every all-ends config and the mixes (over the default), each once."""
    space = template.space(env)
    default = dict(template.default_config())
    out: list[dict[str, Any]] = []
    for config in [default, *end_configs(template, env), *({**default, **m} for m in MIXES)]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return out


def _same_bits(kf: KernelFolder, source: str, tmp_path: Path, flags: tuple[str, ...]) -> int:
    """Runs ``kf``'s lift at :func:`_checked`'s configs and the kernel ``source`` as written
    on the host; asserts every output element is the same float; the configs run."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(template, env)
    inputs = _inputs(kf)

    host = held_back_unseen9.host_source
    want = _run(kf, host(source), kf.baseline.launch_for({}, env), inputs,
                tmp_path / "plain", flags)["out"]
    assert not np.isnan(want).any()
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        assert np.array_equal(got["out"], want), config
    return len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_lift_computes_the_same_bits_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    ran = _same_bits(kf, kf.baseline.render({}, "fp32").source, tmp_path, host_flags)
    assert ran == 1 + 32 + len(MIXES)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("source", [RANGE3, TABLE7], ids=["range3", "table7"])
def test_other_spellings_compute_the_same_bits_at_every_end_and_the_mixes(
        source: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", source)
    assert _same_bits(kf, source, tmp_path / "runs", host_flags) == 1 + 32 + len(MIXES)
