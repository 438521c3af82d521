"""Z-marching with a register queue for 3-D stencils whose threads walk z (Z_SPLIT,
workbench/templater/stencil_zmarch.py; issue 28).

Spellings, none the corpus's heat_step13: a 7-point Jacobi step whose column walk sits
inside an ``if (x < nx && y < ny)`` with ``z++``, full index arithmetic in place
(``in[(z + 1) * nx * ny + y * nx + x]``) and an if / else boundary; a radius-3 z stencil
(planes z - 3 .. z + 3, x / y radius 1) with a ``long long`` index local, the plane size a
local, ``z += 1`` against a ``depth`` argument and a ``continue`` boundary. Each lifted
template runs on the host (g++, the cooperative block) at Z_SPLIT configs with uneven and
empty chunks (CORNERS_EVERY_RUN at its default and last corner too; both spellings' with
``WORKBENCH_FULL_MATRIX=1``) and computes what the kernel as written computes;
heat_step13's folder lifts Z_SPLIT and computes as written too. What cannot be shown legal
is refused with the line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    corner_configs,
    host_sample,
    lifted_template,
    run_on_host,
)
from test_corpus_unseen3 import (  # noqa: F401  (host_flags: the fixture)
    _folder,
    _inputs,
    _plain_outputs,
    _run,
    host_flags,
)

from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.offline import offline_template

NX, NY, NZ = 13, 11, 19  # no multiple of any block's side; 19 planes: uneven chunks
SHAPE = {"nx": "nx", "ny": "ny", "nz": "nz"}
ENV: Mapping[str, Any] = {"nx": NX, "ny": NY, "nz": NZ}

JACOBI7 = """
extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  int x = threadIdx.x + blockIdx.x * 16;
  int y = threadIdx.y + blockIdx.y * 8;
  if (x < nx && y < ny) {
    for (int z = 0; z < nz; z++) {
      if (x > 0 && y > 0 && z > 0 && x < nx - 1 && y < ny - 1 && z < nz - 1) {
        out[z * nx * ny + y * nx + x] =
            0.25f * in[z * nx * ny + y * nx + x] +
            0.125f * (in[z * nx * ny + y * nx + x - 1] + in[z * nx * ny + y * nx + x + 1] +
                      in[z * nx * ny + (y - 1) * nx + x] + in[z * nx * ny + (y + 1) * nx + x] +
                      in[(z - 1) * nx * ny + y * nx + x] + in[(z + 1) * nx * ny + y * nx + x]);
      } else {
        out[z * nx * ny + y * nx + x] = in[z * nx * ny + y * nx + x];
      }
    }
  }
}
"""

DEEP_Z = """
#define RZ 3
extern "C" __global__ void k(float* dst, const float* src, int nx, int ny, int depth) {
  const int gx = blockDim.x * blockIdx.x + threadIdx.x;
  const int gy = blockDim.y * blockIdx.y + threadIdx.y;
  if (gx >= nx || gy >= ny) return;
  const long long plane = (long long)nx * ny;
  const long long col = (long long)gy * nx + gx;
  const bool side = gx == 0 || gy == 0 || gx == nx - 1 || gy == ny - 1;
  for (int z = 0; z < depth; z += 1) {
    const long long p = z * plane + col;
    if (side || z < RZ || z >= depth - RZ) {
      dst[p] = 0.5f * src[p];
      continue;
    }
    float acc = 0.4f * src[p] + 0.05f * (src[p - 1] + src[p + 1] + src[p - nx] + src[p + nx]);
    acc += 0.03f * (src[p - plane] + src[p + plane]);
    acc += 0.02f * (src[p - 2 * plane] + src[p + 2 * plane]);
    acc += 0.01f * (src[p - 3 * plane] + src[p + 3 * plane]);
    dst[p] = acc;
  }
}
"""

#: source, grid, block, scalars (the z extent's name)
CASES: dict[str, tuple[str, list[str], list[str], dict[str, str]]] = {
    "jacobi7": (JACOBI7, ["ceil_div(nx, 16)", "ceil_div(ny, 8)"], ["16", "8"], SHAPE),
    "deep_z": (DEEP_Z, ["ceil_div(nx, 32)", "ceil_div(ny, 4)"], ["32", "4"],
               {"nx": "nx", "ny": "ny", "depth": "nz"}),
}


def lift(name: str, source: str | None = None) -> LiftedSource:
    text, grid, block, scalars = CASES[name]
    return lift_kernel(source if source is not None else text, entry="k", grid=grid,
                       block=block, scalars=scalars)


def params(lifted: LiftedSource) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in lifted.params}


def refusals(lifted: LiftedSource) -> list[str]:
    return [str(f) for f in lifted.findings if f.transform == "Z_SPLIT" and not f.applied]


def _program(source: str, grid: Sequence[int], block: Sequence[int]) -> str:
    n = NX * NY * NZ
    g = ", ".join(f"{int(v)}u" for v in (*grid, 1, 1)[:3])
    b = ", ".join(f"{int(v)}u" for v in (*block, 1, 1)[:3])
    return "\n".join([
        COOPERATIVE_BLOCK, source, "int main() {",
        f"  std::vector<float> a({n}), o({n}, NAN);",
        f"  for (int i = 0; i < {n}; ++i) a[i] = std::sin(0.23f * i) + 0.01f * (i % 17);",
        f"  wb_launch({{{g}}}, {{{b}}}, [&] {{ k(o.data(), a.data(), {NX}, {NY}, {NZ}); }});",
        f"  for (int i = 0; i < {n}; ++i) std::printf(\"%a\\n\", (double)o[i]);",
        "  return 0;", "}"])


def host(work: Path, label: str, source: str, grid: Sequence[int],
         block: Sequence[int], flags: tuple[str, ...] = ()) -> np.ndarray:
    work.mkdir(parents=True, exist_ok=True)
    printed = run_on_host(work, label, _program(source, grid, block), flags=flags).split()
    return np.array([float.fromhex(v) if "nan" not in v else np.nan for v in printed])


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_column_walk_lifts_z_split_with_a_register_queue(name: str) -> None:
    lifted = lift(name)
    knobs = params(lifted)
    assert knobs["Z_SPLIT"]["default"] == 1, lifted.notes
    assert {"BLOCK_X", "BLOCK_Y"} <= set(knobs)
    assert lifted.grid[2] == "Z_SPLIT" and len(lifted.block) == 2
    slots = {"jacobi7": 3, "deep_z": 7}[name]
    assert f"float wb_q[{slots}];" in lifted.source
    assert f"Z_SPLIT == 1 or nz // Z_SPLIT >= {slots}" in lifted.constraints
    # one load per plane of the queue (2R to fill it, one a step); every other read of a
    # plane below or above is a queue slot, and the x / y neighbours stay loads (read-only)
    body = lifted.source[lifted.source.index("for (int z = wb_z0"):]
    assert body.count("? __ldg(") == slots
    below = {"jacobi7": "in[(z - 1) * nx * ny + y * nx + x]", "deep_z": "src[p - 3 * plane]"}
    assert body.count(below[name]) == 1
    side = {"jacobi7": "in[z * nx * ny + (y - 1) * nx + x]", "deep_z": "src[p - nx]"}
    assert body.count(side[name]) == 1 and f"__ldg(&{side[name]})" in body


#: The spelling whose default and last corner the default run checks too.
CORNERS_EVERY_RUN = "jacobi7"


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_computes_as_written_at_every_chunking(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    text, _grid, block, _scalars = CASES[name]
    template = lifted_template(lift(name))
    sides = [int(b) for b in block]
    want = host(tmp_path, "as_written", text, [-(-NX // sides[0]), -(-NY // sides[1])], sides,
                host_flags)
    assert not np.isnan(want).any()
    space = template.space(dict(ENV))
    base = template.default_config()
    # two uneven chunks (10 + 9 planes) at a block of 8 x 4; and beyond the space: 16
    # chunks of 2 planes (the last 6 empty), shorter than the queue
    configs = [*corner_configs(template, ENV),
               {**base, "Z_SPLIT": 2, "BLOCK_X": 8, "BLOCK_Y": 4}]
    assert all(space.rejection(c) is None for c in configs)
    beyond = {**base, "Z_SPLIT": 16}
    assert space.rejection(beyond) is not None
    # the uneven and the empty chunks of every spelling on every run; the default and the
    # last corner of CORNERS_EVERY_RUN too (of both with WORKBENCH_FULL_MATRIX=1)
    corners = host_sample(configs[:3]) if FULL_MATRIX or name == CORNERS_EVERY_RUN else []
    for i, config in enumerate([*corners, *configs[3:], beyond]):
        launch = template.launch_for(config, ENV)
        assert launch.grid[2] == config["Z_SPLIT"]
        got = host(tmp_path, f"config{i}", template.render(config, "fp32").source,
                   launch.grid, launch.block, host_flags)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=str(config))


@pytest.mark.timeout(240)
def test_heat_step13_folder_lifts_z_split_and_computes_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder("heat_step13")
    result = offline_template(kf)
    knobs = params(result.lifted)
    assert {"BLOCK_X", "BLOCK_Y", "Z_SPLIT"} <= set(knobs), result.notes
    template = result.template
    env = kf.env(kf.check_shape, "fp32")
    want = _plain_outputs("heat_step13", tmp_path / "plain", host_flags)
    inputs = _inputs(kf)
    changes: tuple[dict[str, int], ...] = ({}, {"Z_SPLIT": 2, "BLOCK_X": 16, "BLOCK_Y": 2})
    # the folder's marching config on every run, its default too with WORKBENCH_FULL_MATRIX=1
    for i, change in enumerate(changes if FULL_MATRIX else changes[1:]):
        config = {**template.default_config(), **change}
        assert template.space(env).rejection(config) is None
        got = _run(kf, template.render(config, "fp32").source, template.launch_for(config, env),
                   inputs, tmp_path / f"config{i}", host_flags)
        for name, values in want.items():
            np.testing.assert_allclose(got[name], values, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name} at {config}")


# -- refused, with the line ------------------------------------------------------------------

@pytest.mark.parametrize(("name", "old", "new", "why"), [
    # the walk stops at a plane: a later chunk would go on
    ("deep_z", "    dst[p] = acc;\n", "    dst[p] = acc;\n    if (acc > 1e30f) break;\n",
     "leaves the z walk early"),
    # the planes z +- 1 are not read: the queue's slots between would be unknown
    ("deep_z", "acc += 0.03f * (src[p - plane] + src[p + plane]);", "acc += 0.0f;",
     "is not read at plane offset(s) [-1, 1]"),
    # the grid's z read by the author
    ("jacobi7", "int y = threadIdx.y + blockIdx.y * 8;",
     "int y = threadIdx.y + blockIdx.y * 8 + blockIdx.z;", "`blockIdx.z` is read"),
    # a second input read at the neighbour planes
    # the input may be the output (not const): its planes could change under the queue
    ("jacobi7", "const float* in,", "float* in,", "is not a const input"),
    # the output stored at a second index
    ("deep_z", "dst[p] = 0.5f * src[p];", "dst[p] = 0.5f * src[p];\n      dst[p + 1] = 0.0f;",
     "is stored at more than one index"),
])
def test_what_cannot_be_shown_legal_is_refused_with_the_line(name: str, old: str, new: str,
                                                             why: str) -> None:
    source = CASES[name][0]
    assert old in source
    changed = source.replace(old, new)
    lifted = lift(name, changed)
    assert "Z_SPLIT" not in params(lifted)
    reasons = refusals(lifted)
    assert any(why in r for r in reasons), lifted.notes
    assert all("(line " in r for r in reasons), reasons


def test_a_conditional_store_without_a_read_at_the_point_is_refused() -> None:
    """The column is only known to be inside the grid where the walk touches the point on
    every path: here interior points alone are stored and the point read only there."""
    source = CASES["jacobi7"][0]
    changed = source.replace("      } else {\n        out[z * nx * ny + y * nx + x] = "
                             "in[z * nx * ny + y * nx + x];\n      }\n", "      }\n")
    assert changed != source
    lifted = lift("jacobi7", changed)
    assert "Z_SPLIT" not in params(lifted)
    at = next(i + 1 for i, t in enumerate(changed.splitlines()) if "for (int z" in t)
    assert any("not known to be inside the grid" in r and f"(line {at})" in r
               for r in refusals(lifted)), lifted.notes


# -- a 3-D grid (stencil.py's Z_ITEMS) with a z reach of 2: a queue of five planes -------------

GRID13 = """
#define HALO 2
extern "C" __global__ void k(float* res, const float* __restrict__ f, int nx, int ny, int nz) {
  const int i = blockIdx.x * 32 + threadIdx.x;
  const int j = blockIdx.y * 4 + threadIdx.y;
  const int l = blockIdx.z * 2 + threadIdx.z;
  if (i >= nx || j >= ny || l >= nz) return;
  const long long sl = (long long)nx * ny;
  const long long c = l * sl + (long long)j * nx + i;
  if (l < HALO || l >= nz - HALO || i == 0 || j == 0 || i == nx - 1 || j == ny - 1) {
    res[c] = f[c];
    return;
  }
  res[c] = -2.5f * f[c] + 0.3f * (f[c - 1] + f[c + 1] + f[c - nx] + f[c + nx]) +
           0.2f * (f[c - sl] + f[c + sl]) - 0.05f * (f[(l - 2) * sl + (long long)j * nx + i] +
                                                     f[c + 2 * sl]);
}
"""


def test_a_3d_grid_stencil_of_z_reach_2_marches_with_a_five_plane_queue(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    lifted = lift_kernel(GRID13, entry="k", grid=["ceil_div(nx, 32)", "ceil_div(ny, 4)",
                                                   "ceil_div(nz, 2)"],
                         block=["32", "4", "2"], scalars=SHAPE)
    knobs = params(lifted)
    assert "Z_ITEMS" in knobs and "Z_SPLIT" not in knobs, lifted.notes
    body = lifted.source[lifted.source.index('extern "C"'):]
    assert "float wb_zq[5];" in body and body.count("__ldg(") == 5  # 4 to fill, 1 a plane
    assert "f[c - 1]" in body and "f[c + 2 * sl]" not in body.split("wb_zq[4] =")[1]
    template = lifted_template(lifted)
    want = host(tmp_path, "as_written", GRID13, [-(-NX // 32), -(-NY // 4), -(-NZ // 2)],
                [32, 4, 2], host_flags)
    assert not np.isnan(want).any()
    base = template.default_config()
    configs = [base, {**base, "Z_ITEMS": 4, "BLOCK_Z": 1},
               {**base, "Z_ITEMS": 8, "BLOCK_X": 8, "BLOCK_Y": 2, "BLOCK_Z": 2}]
    space = template.space(dict(ENV))
    assert all(space.rejection(c) is None for c in configs)
    # eight planes a thread over a 3-D block of 8 x 2 x 2 on every run; the default and four
    # planes a thread too with WORKBENCH_FULL_MATRIX=1
    for i, config in enumerate(configs if FULL_MATRIX else configs[-1:]):
        launch = template.launch_for(config, ENV)
        got = host(tmp_path, f"grid{i}", template.render(config, "fp32").source, launch.grid,
                   launch.block, host_flags)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=str(config))
