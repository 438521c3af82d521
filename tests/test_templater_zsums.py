"""Z_SUMS: planes read once and the outputs' partial sums carried along the z-march
(workbench/templater/stencil_zsums.py, reached through stencil_zgrid's Z_ITEMS; issue 28).

Spellings: held-back set 6's box27_smooth (a 1-D block along x, ``k = blockIdx.z``, a box of
three nested loops over -1..1 with the plane outermost, a switch helper for the weights,
early returns for the boundary layer) and a separable box written by another hand: a 2-D
block of 16 x 4, an ``IDX`` macro, loops over 0..2 with the plane innermost, a pure helper
for the taps, a ``bool`` for the boundary, a double ``sum = sum + ...``; and a 7-point star
summed over the whole box (zero weights off the axes) whose reads are named in the nest
(``const size_t pz = at + dz * plane;`` at the plane's level, ``const float v =
in[pz + dy * nx + dx];`` then ``s += coef(dx, dy, dz) * v;``). Each lifted
template runs on the host (g++, the cooperative block) at Z_SUMS 1 at both ends of Z_ITEMS,
the expert's block and planes and a mix, against the kernel as written (box27 and the star bit for
bit: the plane is their nest's outermost counter; the separable box within 1e-6: its sum's
planes come in another order). What cannot be shown legal is refused with the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import FULL_MATRIX, end_configs, host_sample, lifted_template
from test_corpus_unseen3 import _inputs, _run, host_flags  # noqa: F401  (the fixture)
from test_templater_stencil_zmarch import ENV, NX, NY, NZ, SHAPE, host

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.offline import offline_template

_BOX27 = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen6" / \
    "box27_smooth"

SEPARABLE = """
#define IDX(x, y, z) (((size_t)(z) * ny + (y)) * nx + (x))
__device__ inline float tap(int t) { return t == 1 ? 0.5f : 0.25f; }

extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  int x = threadIdx.x + 16 * blockIdx.x;
  int y = threadIdx.y + 4 * blockIdx.y;
  int z = blockIdx.z;
  if (x >= nx || y >= ny) return;
  bool edge = x < 1 || y < 1 || z < 1 || x > nx - 2 || y > ny - 2 || z > nz - 2;
  if (edge) {
    out[IDX(x, y, z)] = 0.0f;
    return;
  }
  double sum = 0.0;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 3; c += 1)
        sum = sum + (double)(tap(a) * tap(b) * tap(c)) * in[IDX(x + a - 1, y + b - 1, z + c - 1)];
  out[IDX(x, y, z)] = (float)sum;
}
"""

STAR_NAMED = """
__device__ float coef(int dx, int dy, int dz) {
  const int taxi = abs(dx) + abs(dy) + abs(dz);
  return taxi == 0 ? 0.4f : (taxi == 1 ? 0.1f : 0.0f);
}

extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  const int x = threadIdx.x + 128 * blockIdx.x;
  const int y = blockIdx.y;
  const int z = blockIdx.z;
  const size_t plane = (size_t)nx * ny;
  const size_t at = z * plane + (size_t)y * nx + x;
  if (x >= nx) return;
  if (x == 0 || y == 0 || z == 0 || x + 1 == nx || y + 1 == ny || z + 1 == nz) {
    out[at] = in[at];
    return;
  }
  float s = 0.f;
  for (int dz = -1; dz < 2; ++dz) {
    const size_t pz = at + dz * plane;
    for (int dy = -1; dy < 2; ++dy)
      for (int dx = -1; dx < 2; ++dx) {
        const float v = in[pz + dy * nx + dx];
        s += coef(dx, dy, dz) * v;
      }
  }
  out[at] = s;
}
"""

#: source, grid, block as written
CASES: dict[str, tuple[str, list[str], list[str]]] = {
    "box27": ((_BOX27 / "baseline.cu").read_text().replace("void box27_smooth(", "void k("),
              ["ceil_div(nx, 128)", "ny", "nz"], ["128"]),
    "separable": (SEPARABLE, ["ceil_div(nx, 16)", "ceil_div(ny, 4)", "nz"], ["16", "4"]),
    "star_named": (STAR_NAMED, ["ceil_div(nx, 128)", "ny", "nz"], ["128"]),
}


def lift(name: str, source: str | None = None) -> LiftedSource:
    text, grid, block = CASES[name]
    return lift_kernel(source if source is not None else text, entry="k", grid=grid,
                       block=block, scalars=SHAPE)


def params(lifted: LiftedSource) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in lifted.params}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_sum_over_a_box_of_planes_lifts_z_sums(name: str) -> None:
    lifted = lift(name)
    knobs = params(lifted)
    assert knobs["Z_SUMS"] == {"kind": "choice", "values": [0, 1], "default": 0,
                               "description": knobs["Z_SUMS"]["description"]}, lifted.notes
    assert "Z_SUMS == 0 or Z_ITEMS > 1" in lifted.constraints
    start = lifted.source.index("#if Z_SUMS")
    march = lifted.source[start:lifted.source.index("#else", start)]
    if "if (wb_zin) {" in march:  # INTERIOR's march first (test_templater_zsums_interior.py)
        march = march[march.index("} else {"):]  # the general one
    # a plane's nine values loaded once each, where an output that reads them reaches the
    # sum; three outputs' sums carried; 27 terms, each from a loaded value
    assert march.count("? (float)(in[") == 9
    assert march.count("wb_zok0 || wb_zok1 || wb_zok2") == 9
    assert "wb_zs0 = " in march and "wb_zs2 = wb_zs1;" in march
    assert sum(march.count(f"wb_zs{j} += ") for j in range(3)) == 27
    sums = march[march.index("its terms of plane"):march.index("its sum is done")]
    assert "in[" not in sums and sums.count("wb_zv") == 27
    assert any("Z_SUMS: applied: 9 value(s) of a plane read once each, 3 outputs' sums"
               in n for n in lifted.notes)


def _configs(lifted: LiftedSource, name: str) -> list[dict[str, Any]]:
    """Z_SUMS 1 at Z_ITEMS 2 and 32 (19 planes: one chunk past the end), the expert's pick
    (box27: 64 x 8 threads, 32 planes) and a mix (8 planes, a last chunk of 3), then the
    all-ends corners with Z_SUMS 1 under WORKBENCH_FULL_MATRIX."""
    template = lifted_template(lifted)
    base = {**template.default_config(), "Z_SUMS": 1}
    wide = {"BLOCK_THREADS": 64, "BLOCK_Y": 8} if name != "separable" else {}
    listed = [{**base, "Z_ITEMS": 2}, {**base, "Z_ITEMS": 32, **wide},
              {**base, "Z_ITEMS": 8, **({"BLOCK_Y": 4} if name != "separable" else {})}]
    if FULL_MATRIX:
        listed += [c for c in end_configs(template, ENV) if c["Z_SUMS"] == 1]
    space = template.space(dict(ENV))
    assert all(space.rejection(c) is None for c in listed), listed
    return listed


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    source, _grid, block_text = CASES[name]
    block = [int(b) for b in block_text]
    grid = [-(-NX // block[0]), -(-NY // block[1]) if len(block) > 1 else NY, NZ]
    want = host(tmp_path, "as_written", source, grid, block, host_flags)
    assert not np.isnan(want).any()
    lifted = lift(name)
    template = lifted_template(lifted)
    configs = _configs(lifted, name)
    for i, config in enumerate(configs if FULL_MATRIX else [configs[0], configs[1]]):
        launch = template.launch_for(config, ENV)
        got = host(tmp_path, f"config{i}", template.render(config, "fp32").source,
                   launch.grid, launch.block, host_flags)
        if name != "separable":
            np.testing.assert_array_equal(got, want, err_msg=str(config))
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=str(config))


@pytest.mark.timeout(240)
def test_the_box27_folder_at_the_experts_pick_computes_as_written_bit_for_bit(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """The expert's pick (BLOCK_X 64, BLOCK_Y 8, Z_ITEMS 32) in the lift's knobs, and a
    short march (2 planes, 4 rows of 64 threads, MIN_BLOCKS_PER_SM 2), at the folder's check shape (41 x 10 x 7)."""
    kf = load_kernel_folder(_BOX27)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = _run(kf, kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env),
                inputs, tmp_path / "plain", host_flags)
    picks = [{**template.default_config(), "BLOCK_THREADS": 64, "BLOCK_Y": 8, "Z_ITEMS": 32,
              "Z_SUMS": 1},
             {**template.default_config(), "BLOCK_THREADS": 64, "BLOCK_Y": 4, "Z_ITEMS": 2,
              "Z_SUMS": 1, "MIN_BLOCKS_PER_SM": 2}]
    for i, config in enumerate(host_sample(picks)):
        assert template.space(env).rejection(config) is None, config
        got = _run(kf, template.render(config, "fp32").source,
                   template.launch_for(config, env), inputs, tmp_path / f"sums{i}", host_flags)
        for name, values in want.items():
            np.testing.assert_array_equal(got[name], values, err_msg=f"{name} {config}")


# -- refused, with the line ------------------------------------------------------------------

@pytest.mark.parametrize(("old", "new", "why"), [
    # one term reading two planes belongs to no single plane's sum
    ("acc += weight_for(nonzero) * in[c + dz * plane + (long)dy * nx + dx];",
     "acc += in[c + dz * plane + (long)dy * nx + dx] * in[c - dz * plane];",
     "reads 2 planes at once"),
    # a weight that changes with the plane cannot be computed at another plane's step
    ("acc += weight_for(nonzero) *", "acc += weight_for(nonzero + k) *",
     "`k` in `weight_for(nonzero + k)"),
    # a value read before the sum would be read at planes the kernel never reads
    ("  float acc = 0.0f;", "  const float mid = in[c];\n  float acc = 0.0f;",
     "before the sum reads memory"),
    # the sum stored from inside the nest: no carried sum is whole there
    ("        acc += weight_for(nonzero)", "        out[c] = acc;\n        acc += weight_for("
     "nonzero)", "is not an addition to `acc`"),
])
def test_what_cannot_be_shown_legal_is_refused_with_the_line(old: str, new: str,
                                                             why: str) -> None:
    source = CASES["box27"][0]
    assert old in source
    lifted = lift("box27", source.replace(old, new))
    assert "Z_SUMS" not in params(lifted) and "Z_ITEMS" in params(lifted)
    reasons = [str(f) for f in lifted.findings if f.transform == "Z_SUMS" and not f.applied]
    assert any(why in r and "(line " in r for r in reasons), lifted.notes


def test_a_plane_sum_of_explicit_terms_is_left_to_z_items() -> None:
    """No accumulator and nest (one expression of seven reads): Z_ITEMS alone, no finding."""
    source = CASES["box27"][0]
    start, end = source.index("  float acc = 0.0f;"), source.index("  out[c] = acc;")
    explicit = source[:start] + ("  out[c] = 0.4f * in[c] + 0.1f * (in[c - 1] + in[c + 1] + "
                                 "in[c - nx] + in[c + nx] + in[c - plane] + in[c + plane]);\n"
                                 ) + source[end + len("  out[c] = acc;\n"):]
    lifted = lift("box27", explicit)
    assert "Z_ITEMS" in params(lifted) and "Z_SUMS" not in params(lifted)
    assert not [f for f in lifted.findings if f.transform == "Z_SUMS"]


def test_a_macro_reading_the_plane_keeps_the_march_off() -> None:
    """An object-like macro's text is not parsed: one reading ``blockIdx.z`` would read the
    block's z inside a march (a weight of the plane added at another plane's step)."""
    source = CASES["box27"][0].replace(
        "__device__ __forceinline__ float weight_for",
        "#define PLANE_BIAS (0.001f * blockIdx.z)\n__device__ __forceinline__ float weight_for"
    ).replace("acc += weight_for(nonzero) *", "acc += (weight_for(nonzero) + PLANE_BIAS) *")
    lifted = lift("box27", source)
    assert not {"Z_ITEMS", "Z_SUMS"} & set(params(lifted))
    assert any("Z_ITEMS: not applied: the macro `PLANE_BIAS` reads the grid's z" in n
               for n in lifted.notes), lifted.notes
