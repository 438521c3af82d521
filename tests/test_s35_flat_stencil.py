"""Session 35 (issue 28): jacobi7_poisson_flat (held-back set 27), a Jacobi sweep of the
3-D Poisson problem on a flat 1-D launch (one thread a point, the index split into i, j, k
by / and %), lifted only BLOCK_THREADS / ITEMS_PER_THREAD: the templater's pick ran at
0.74x of the expert's (54 % of a copy against 73 %), whose pick marches 16 z planes a
thread with two x points (THREADS 512, XV 2, ZITEMS 16).

stencil_flat.py reads the flat index as the 3-D point it is (flat_split.py: the split by
value, whatever its spelling) and lifts stencil.py's z-march on the flat launch:
BLOCK_THREADS, OUT_X (adjacent x points a thread, the shared x neighbours from registers),
Z_ITEMS (the planes below / at / above each column in registers), MIN_BLOCKS_PER_SM; the
defaults are the kernel as written (launch included). Two respellings
(tests/spellings_s35_flat/): a heat step in double over int indices split by repeated
division and `idx - k * plane`, guarded; a helper function for each coordinate over size_t;
a grid-stride loop (once a thread as launched) split by subtraction.
Host (g++): each bit for bit against the kernel as written at the default, the ends and
mixes, and at a taller, narrower box (Z_ITEMS past the planes, x groups past the row).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen27
import pytest
from held_back_harness import default_and_mix, respelled, same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s35_flat"
SET = held_back_unseen27.SET
KERNEL = "jacobi7_poisson_flat"
KNOBS = frozenset({"BLOCK_THREADS", "OUT_X", "Z_ITEMS", "MIN_BLOCKS_PER_SM"})

#: mixes over the default (29 x 23 x 13): 8 x groups of 4 a row (the last 1 wide) marching
#: 8 planes (13 = 8 + 5) on 64 threads; 15 groups of 2 (the last 1 wide) marching 4 (13 =
#: 4 + 4 + 4 + 1) on 512, two blocks an SM; the expert's H200 pick (16 planes: one run)
MIXES = [{"BLOCK_THREADS": 64, "OUT_X": 4, "Z_ITEMS": 8},
         {"BLOCK_THREADS": 512, "OUT_X": 2, "Z_ITEMS": 4, "MIN_BLOCKS_PER_SM": 2},
         {"BLOCK_THREADS": 512, "OUT_X": 2, "Z_ITEMS": 16, "MIN_BLOCKS_PER_SM": 1},
         {"BLOCK_THREADS": 128, "OUT_X": 1, "Z_ITEMS": 2}]

#: respelling -> a mix checked bit for bit
SPELLED = {
    "heat7_flat_int_guarded": {"BLOCK_THREADS": 128, "OUT_X": 4, "Z_ITEMS": 4},
    "jacobi7_flat_helper": {"BLOCK_THREADS": 64, "OUT_X": 2, "Z_ITEMS": 8,
                            "MIN_BLOCKS_PER_SM": 1},
    "jacobi7_flat_gridstride": {"BLOCK_THREADS": 1024, "OUT_X": 4, "Z_ITEMS": 2},
}


def _spelled(spelling: str, root: Path) -> KernelFolder:
    return respelled(SET.root / KERNEL, root, (SPELLINGS / f"{spelling}.cu").read_text())


def _tall(root: Path) -> KernelFolder:
    """The kernel on a 7 x 5 x 41 box: a row narrower than a 4-point group's pair, 41
    planes (Z_ITEMS 32: a run of 32 and one of 9)."""
    folder = SET.root / KERNEL
    copy = respelled(folder, root, (folder / "baseline.cu").read_text())
    toml = copy.path / "kernel.toml"
    toml.write_text(toml.read_text().replace("small = { nx = 29, ny = 23, nz = 13 }",
                                             "small = { nx = 7, ny = 5, nz = 41 }"))
    return load_kernel_folder(copy.path)


def test_the_corpus_kernel_lifts_the_z_march() -> None:
    lifted = offline_template(SET.folder(KERNEL)).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    assert any(n.startswith("Z_ITEMS: applied: the flat index idx is the point (x, y, z)")
               for n in lifted.notes), lifted.notes
    assert lifted.grid == ("ceil_div(ceil_div(nx, OUT_X) * (ny) * ceil_div(nz, Z_ITEMS), "
                           "BLOCK_THREADS)",)


@pytest.mark.parametrize("spelling", sorted(SPELLED))
def test_the_respelling_lifts_the_same_knobs(spelling: str, tmp_path: Path) -> None:
    lifted = offline_template(_spelled(spelling, tmp_path)).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_corpus_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = SET.folder(KERNEL)
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), MIXES)
    assert len(configs) >= 5
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path,
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_lift_computes_as_written_over_a_tall_narrow_box(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _tall(tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"),
                           [{"Z_ITEMS": 32, "OUT_X": 4}, {"Z_ITEMS": 8, "OUT_X": 2,
                                                          "BLOCK_THREADS": 64}])
    assert kf.env(kf.check_shape, "fp32")["nz"] == 41
    assert {c["Z_ITEMS"] for c in configs} >= {1, 8, 32}
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spelling", sorted(SPELLED))
def test_the_respelling_computes_as_written(spelling: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _spelled(spelling, tmp_path / "folder")
    template = offline_template(kf).template
    configs = default_and_mix(template, kf, SPELLED[spelling])
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags) == len(configs)


def _lift(source: str, grid: str = "ceil_div(nx * ny * nz, 256)"
          ) -> tuple[set[str], tuple[str, ...]]:
    lifted = lift_kernel(source, entry="k", grid=[grid], block=["256"],
                         scalars={"nx": "nx", "ny": "ny", "nz": "nz"})
    return {p.name for p in lifted.params}, lifted.notes


def _kernel(body: str, params: str = "float* out, const float* u") -> str:
    return (f'extern "C" __global__ void k({params}, int nx, int ny, int nz) {{\n'
            "  const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"{body}}}\n")


#: a 3-point z sum on a flat launch, the split as the corpus kernel writes it
SUM3 = """  if (idx >= (size_t)nx * ny * nz) return;
  const int k = idx / ((size_t)nx * ny);
  const int i = idx % nx;
  if (k == 0 || k == nz - 1) { out[idx] = u[idx]; return; }
  out[idx] = u[idx - (size_t)nx * ny] + u[idx] + u[idx + (size_t)nx * ny] + (float)i;
"""


def test_a_flat_z_sum_lifts_the_march() -> None:
    knobs, notes = _lift(_kernel(SUM3))
    assert knobs == KNOBS, notes


def test_a_split_that_names_no_x_extent_is_refused() -> None:
    # k = idx / (nx * ny) alone reads alike with nx and ny swapped: the x extent is unknown
    knobs, notes = _lift(_kernel(SUM3.replace("  const int i = idx % nx;\n", "")
                                 .replace("(float)i", "1.0f")))
    assert "Z_ITEMS" not in knobs
    assert any(n.startswith("Z_ITEMS: not applied: the flat index idx (bounded by nx * ny * "
                            "nz) is not split into x, y, z") and "(line 2)" in n
               for n in notes), notes


def test_an_output_read_back_is_refused() -> None:
    knobs, notes = _lift(_kernel(SUM3.replace("u[idx] +", "out[idx] +"), "float* out, "
                                 "const float* u"))
    assert "Z_ITEMS" not in knobs
    assert any("reads out, which the kernel writes" in n for n in notes), notes


def test_a_grid_of_another_count_is_refused() -> None:
    knobs, notes = _lift(_kernel(SUM3), grid="ceil_div(nx * ny, 256)")
    assert "Z_ITEMS" not in knobs
    assert any("the grid `ceil_div(nx * ny, 256)` is not" in n for n in notes), notes


def test_a_store_at_another_point_is_refused() -> None:
    knobs, notes = _lift(_kernel(SUM3.replace("out[idx] = u[idx - (size_t)", "out[idx + 1] = "
                                              "u[idx - (size_t)")))
    assert "Z_ITEMS" not in knobs
    assert any("stores at another place than the point's own" in n for n in notes), notes


def test_two_inputs_read_at_neighbour_planes_are_both_marched() -> None:
    body = SUM3.replace("+ (float)i;", "+ (float)i * (w[idx - (size_t)nx * ny] + w[idx]);")
    source = _kernel(body, "float* out, const float* u, const float* w")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(nx * ny * nz, 256)"],
                         block=["256"], scalars={"nx": "nx", "ny": "ny", "nz": "nz"})
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    assert "wb_u[3][OUT_X]" in lifted.source and "wb_w[3][OUT_X]" in lifted.source


#: the split in a helper returning an int3: a documented gap (the vector local is read as
#: its components only where its values are pure, and a division by an argument may trap)
INT3_HELPER = """__device__ int3 box_point(size_t idx, int nx, int ny) {
  return make_int3((int)(idx % nx), (int)((idx / nx) % ny), (int)(idx / ((size_t)nx * ny)));
}
""" + _kernel("""  if (idx >= (size_t)nx * ny * nz) return;
  const int3 p = box_point(idx, nx, ny);
  if (p.z == 0 || p.z == nz - 1 || p.x == 0) { out[idx] = u[idx]; return; }
  out[idx] = u[idx - (size_t)nx * ny] + u[idx + (size_t)nx * ny];
""")


def test_a_flat_kernel_of_no_box_gets_no_z_note() -> None:
    # one bound of one argument (an elementwise kernel with a channel index): not a box
    source = """extern "C" __global__ void k(float* out, const float* u, int n, int c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int ch = i % c;
  out[i] = u[i] * (float)ch;
}
"""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 256)"], block=["256"],
                         scalars={"n": "n", "c": "c"})
    assert not any(n.startswith(("Z_ITEMS", "OUT_X")) for n in lifted.notes), lifted.notes


def test_a_split_in_an_int3_helper_is_a_documented_gap() -> None:
    knobs, notes = _lift(INT3_HELPER)
    assert "Z_ITEMS" not in knobs
    assert any(n.startswith("Z_ITEMS: not applied: the flat index idx") for n in notes), notes


def test_a_store_through_a_pointer_is_refused() -> None:
    knobs, notes = _lift(_kernel(SUM3.replace("out[idx] = u[idx - (size_t)",
                                              "*(out + idx) = u[idx - (size_t)")))
    assert "Z_ITEMS" not in knobs
    assert any("writes through `*(out + idx)`" in n and "(line 7)" in n for n in notes), notes
