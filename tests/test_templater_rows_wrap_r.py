"""The rows family (OUT_Y) on batched periodic 2-D stencils (issue 28, set 11's jacobi9_torus):
a 2-D block over a 3-D grid (the batch on z), the input read through a pointer set once per
image from a local (``U = u + plane``), rows and columns wrapped by the compares and selects
:mod:`workbench.templater.periodic_index` writes (:mod:`workbench.templater.stencil_rows_wrap`
keys them in the register window).

Pure: a second spelling (a 5-point heat step with ``% H`` inline, the image a local ``b =
blockIdx.z``, the output indexed ``b * per + ..``) lifts OUT_Y with the wrapped rows in one
window; an unwrapped read above the row that shares a slot with a wrapped one is refused with
its line; a non-periodic batch (the plane a local of a local field, a __restrict__ row
pointer, the border copied) walks its rows too. Host (g++): the folder at H = 1 and 2, the
heat spelling at H = 19, 2 and 1 and the non-periodic one at H = 19, each at
its default, mixes and the all-ends configs, bit for bit against the kernel as written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers_templater import needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401  (the session fixture)
from test_templater_first11_jacobi9_torus import FOLDER, MIXES, _folder, _same_outputs

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.records import LiftedSource
from workbench.templater.semantic import lift_kernel

HEAT = """// out = one explicit heat step (5 points, periodic) of each field of a batch.
extern "C" __global__ void heat5_wrap(float* out, const float* in, int H, int W, float k) {
  const int b = blockIdx.z;
  const size_t per = (size_t)H * W;
  const float* img = in + b * per;
  int x = threadIdx.x + blockIdx.x * blockDim.x;
  int y = threadIdx.y + blockIdx.y * blockDim.y;
  if (x < W && y < H) {
    float up = img[((y + H - 1) % H) * W + x];
    float dn = img[((y + 1) % H) * W + x];
    float lf = img[y * W + (x + W - 1) % W];
    float rt = img[y * W + (x + 1) % W];
    float c = img[y * W + x];
    out[b * per + y * W + x] = c + k * (up + dn + lf + rt - 4.0f * c);
  }
}
"""

HEAT_TOML = """name = "heat5_wrap"
dtypes = ["fp32"]
check_shape = "small"
[shapes]
small = { B = 3, H = 19, W = 37 }
[tolerances]
fp32 = { rtol = 1e-5, atol = 1e-6 }
[[args]]
name = "out"
dtype = "f32"
role = "out"
shape = ["B", "H", "W"]
[[args]]
name = "in"
dtype = "f32"
role = "in"
shape = ["B", "H", "W"]
[[args]]
name = "H"
dtype = "i32"
role = "scalar"
value = "H"
[[args]]
name = "W"
dtype = "i32"
role = "scalar"
value = "W"
[[args]]
name = "k"
dtype = "f32"
role = "scalar"
value = "0.2"
[baseline]
source = "baseline.cu"
entry = "heat5_wrap"
grid = ["ceil_div(W, 16)", "ceil_div(H, 16)", "B"]
block = ["16", "16"]
"""

HEAT_REFERENCE = '''"""numpy reference for heat5_wrap."""
from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    size = (shape["B"], shape["H"], shape["W"])
    return {"in": rng.uniform(-1.0, 1.0, size=size).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    u = np.asarray(inputs["in"], dtype=np.float64)
    s = sum(np.roll(u, r, axis=a) for a in (1, 2) for r in (1, -1))
    return {"out": u + 0.2 * (s - 4.0 * u)}
'''

#: Non-periodic, by other hands: the field a local, its plane a local of it, the rows read
#: through a pointer set from both, the border copied by an early exit.
SMOOTH = """extern "C" __global__ void smooth5_batch(float* out, const float* in, int H, int W) {
  const unsigned field = blockIdx.z;
  const long long plane = (long long)field * H * W;
  const float* __restrict__ src = in + plane;
  const int col = blockIdx.x * 16 + threadIdx.x;
  const int row = blockIdx.y * 16 + threadIdx.y;
  if (col >= W || row >= H) return;
  const int at = row * W + col;
  if (row == 0 || col == 0 || row == H - 1 || col == W - 1) { out[plane + at] = src[at]; return; }
  out[plane + at] = 0.5f * src[at] + 0.125f * (src[at - W] + src[at + W] + src[at - 1] + src[at + 1]);
}
"""

K_ARG = """[[args]]
name = "k"
dtype = "f32"
role = "scalar"
value = "0.2"
"""
SMOOTH_TOML = HEAT_TOML.replace("heat5_wrap", "smooth5_batch").replace(K_ARG, "")


def test_a_plane_from_locals_walks_its_rows_without_wraps() -> None:
    lifted = lift_kernel(SMOOTH, entry="smooth5_batch", grid=["ceil_div(W, 16)",
                         "ceil_div(H, 16)", "B"], block=["16", "16"],
                         scalars={"H": "H", "W": "W"})
    assert "OUT_Y" in [p.name for p in lifted.params], lifted.notes
    assert "wb_col_p0[wb_k + 0], &src[at - W]" in lifted.source
    assert "wb_col_p0[wb_k + 2], &src[at + W]" in lifted.source


#: 32 x 2 threads of 8 rows (19 rows: the second block's walk stops mid-way), 16 x 4 of 2
#: columns x 4 rows.
HEAT_MIXES = [{"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_Y": 8},
              {"BLOCK_X": 16, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 4}]


def _heat(source: str) -> LiftedSource:
    return lift_kernel(source, entry="heat5_wrap", grid=["ceil_div(W, 16)", "ceil_div(H, 16)",
                       "B"], block=["16", "16"], scalars={"H": "H", "W": "W"})


def test_an_inline_modulo_batch_walks_its_rows_in_one_window() -> None:
    lifted = _heat(HEAT)
    assert [p.name for p in lifted.params] == ["BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X",
                                               "MIN_BLOCKS_PER_SM"], lifted.notes
    source = lifted.source
    # the wrapped row above, the row and the wrapped row below: slots 0, 1, 2 of one window
    assert "wb_col_p0[wb_k + 0], &img[(((y - 1) >= 0 ? (y - 1) : (y - 1) + H)) * W + x]" \
        in source
    assert "wb_col_p0[wb_k + 1], &img[y * W + x]" in source
    assert "wb_col_p0[wb_k + 2], &img[(((y + 1) >= H ? (y + 1) - H : (y + 1))) * W + x]" \
        in source
    assert "wb_col_p0[OUT_Y + 2]" in source and "% H" not in source


def test_an_unwrapped_row_above_beside_a_wrapped_one_is_refused_with_its_line() -> None:
    # (y - 1) read as written under y > 0 shares the slot of the wrapped y - 1: both above
    # the row, and the window cannot tell that the unwrapped one is inside the field
    source = HEAT.replace("    float c = img[y * W + x];",
                          "    float c = img[y * W + x];\n"
                          "    if (y > 0) c += 0.0f * img[(y - 1) * W + x];")
    lifted = _heat(source)
    assert "OUT_Y" not in [p.name for p in lifted.params]
    assert any(n.startswith("OUT_Y: not applied: `img[") and "may share a row of the window "
               "above the field's first (H wraps one of them, not the other) (line 14)" in n
               for n in lifted.notes), lifted.notes


def _reshaped(tmp_path: Path, folder: Path, old: str, new: str) -> KernelFolder:
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    toml = copy / "kernel.toml"
    assert old in toml.read_text()
    toml.write_text(toml.read_text().replace(old, new))
    return load_kernel_folder(copy)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("rows", [1, 2])
def test_the_torus_walk_computes_as_written_on_one_and_two_rows(
        rows: int, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _reshaped(tmp_path, FOLDER, "small = { B = 2, H = 19, W = 45 }",
                   f"small = {{ B = 2, H = {rows}, W = 45 }}")
    assert _same_outputs(kf, tmp_path, host_flags, MIXES) >= 1 + len(MIXES)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(("name", "rows"), [("heat5_wrap", 19), ("heat5_wrap", 2),
                                            ("heat5_wrap", 1), ("smooth5_batch", 19)])
def test_the_spellings_compute_as_written(name: str, rows: int, tmp_path: Path,
                                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    toml, source = {"heat5_wrap": (HEAT_TOML, HEAT),
                    "smooth5_batch": (SMOOTH_TOML, SMOOTH)}[name]
    # the reference's inputs only: the lift is compared with the kernel as written
    kf = _folder(tmp_path / "folders", name, toml.replace("H = 19", f"H = {rows}"),
                 HEAT_REFERENCE, source)
    assert "OUT_Y" in {p.name for p in offline_template(kf).lifted.params}
    assert _same_outputs(kf, tmp_path, host_flags, HEAT_MIXES) >= 1 + len(HEAT_MIXES)


def test_a_pointer_that_moves_with_the_row_is_named_with_its_line() -> None:
    source = """extern "C" __global__ void rowptr5(float* out, const float* in, int H, int W) {
  const int col = blockIdx.x * 16 + threadIdx.x;
  const int row = blockIdx.y * 16 + threadIdx.y;
  if (col < 1 || row < 1 || col >= W - 1 || row >= H - 1) return;
  const float* at = in + row * W + col;
  out[row * W + col] = at[-W] + at[W] + at[-1] + at[1];
}
"""
    lifted = lift_kernel(source, entry="rowptr5", grid=["ceil_div(W, 16)", "ceil_div(H, 16)"],
                         block=["16", "16"], scalars={"H": "H", "W": "W"})
    assert "OUT_Y" not in [p.name for p in lifted.params]
    assert "OUT_Y: not applied: `at` is set from `in + row * W + col`, which is not one array " \
        "for every output of a thread (one kernel argument plus a value of arguments, " \
        "constants, the block's z and locals of such values): its reads are not followed " \
        "(line 5)" in lifted.notes, lifted.notes


def _smooth(source: str) -> LiftedSource:
    return lift_kernel(source, entry="smooth5_batch", grid=["ceil_div(W, 16)",
                       "ceil_div(H, 16)", "B"], block=["16", "16"], scalars={"H": "H", "W": "W"})


def test_an_exit_every_later_row_takes_too_stops_the_walk() -> None:
    # row >= H holds for the rows below once it holds: the walk stops (the compiler then
    # knows the slots an earlier output loaded are loaded); the border's exit does not
    body = _smooth(SMOOTH).source
    assert "if (col >= W || row >= H) break;" in body
    assert "out[plane + at] = wb_once_ldg(wb_col_p0_has[wb_k + 1], wb_col_p0[wb_k + 1], " \
        "&src[at]); continue; }" in body
    # row < 1 fails again below: the walk goes on
    falling = _smooth(SMOOTH.replace("if (col >= W || row >= H) return;",
                                     "if (col >= W || row >= H || row < 1) return;")).source
    assert "if (col >= W || row >= H || row < 1) continue;" in falling
    # a bound read from memory is no bound of the rows below
    loaded = _smooth(SMOOTH.replace("if (col >= W || row >= H) return;",
                                    "if (col >= W || row >= (int)in[0]) return;")).source
    assert "if (col >= W || row >= (int)in[0]) continue;" in loaded
