"""Session 34 (issue 28): varcoef7_zmarch (held-back set 26), a variable-coefficient 7-point
diffusion step whose threads march z with the planes below, at and above in registers the
author rotates by hand, lifted no z split: the templater's pick ran at 0.85x of the
expert's (57 % of a copy against 66 %), whose pick splits z over the grid (ZSPLIT = 8).

stencil_zmarch's queue refused the walk (two inputs read at neighbour planes) and would
duplicate the author's registers anyway; stencil_zrotate.py splits the walk as written: a
chunk past the first reloads each carried register with the plane it holds there, the
statements after the walk run in the block whose chunk ends it (the registers hold there
what they hold as written), those before it in every block (stores only at planes outside
the walk: the same value from each block).

Lifts BLOCK_X, BLOCK_Y, Z_SPLIT, MIN_BLOCKS_PER_SM (the expert's BX, BY, ZSPLIT; its
USE_SMEM, a shared plane, is not lifted: its picks never use it). Two respellings
(tests/spellings_s34_stencil/): a face helper over size_t column / plane locals, and an int
index with the registers declared two a line. Host (g++): each bit for bit against the
kernel as written at the default, mixes and the ends, and at a taller z (41 planes: Z_SPLIT
up to 16, empty last chunks).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen26
import pytest
from held_back_harness import default_and_mix, respelled, same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s34_stencil"
SET = held_back_unseen26.SET
KERNEL = "varcoef7_zmarch"
KNOBS = frozenset({"BLOCK_X", "BLOCK_Y", "Z_SPLIT", "MIN_BLOCKS_PER_SM"})

#: mixes over the default (11 planes: a walk of 9): three chunks of 3 on a 128 x 2 block;
#: four chunks of 3, the last empty (its block stores nothing), on 16 x 8
MIXES = [{"BLOCK_X": 128, "BLOCK_Y": 2, "Z_SPLIT": 2},
         {"BLOCK_X": 16, "BLOCK_Y": 8, "Z_SPLIT": 4},
         {"BLOCK_X": 64, "BLOCK_Y": 4, "Z_SPLIT": 4, "MIN_BLOCKS_PER_SM": 4}]

#: respelling -> a mix checked bit for bit
SPELLED = {
    "varcoef7_zmarch_face_helper": {"BLOCK_X": 64, "BLOCK_Y": 2, "Z_SPLIT": 4},
    "varcoef7_zmarch_int_planes": {"BLOCK_X": 8, "BLOCK_Y": 16, "Z_SPLIT": 2},
}


def _spelled(spelling: str, root: Path) -> KernelFolder:
    return respelled(SET.root / KERNEL, root, (SPELLINGS / f"{spelling}.cu").read_text())


def _tall(root: Path) -> KernelFolder:
    """The kernel with its check shape 41 planes tall (a walk of 39: Z_SPLIT 16, chunks of
    3, the last three empty)."""
    folder = SET.root / KERNEL
    copy = respelled(folder, root, (folder / "baseline.cu").read_text())
    toml = copy.path / "kernel.toml"
    toml.write_text(toml.read_text().replace("small = { nx = 37, ny = 21, nz = 11 }",
                                             "small = { nx = 37, ny = 21, nz = 41 }"))
    return load_kernel_folder(copy.path)


def test_the_corpus_kernel_lifts_the_z_split() -> None:
    lifted = offline_template(SET.folder(KERNEL)).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    assert any(n.startswith("Z_SPLIT: applied: the walk carries u_dn, k_dn, u_c, k_c")
               for n in lifted.notes), lifted.notes


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
def test_the_lift_computes_as_written_over_a_tall_z(tmp_path: Path,
                                                    host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _tall(tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"),
                           [{"Z_SPLIT": 16}, {"Z_SPLIT": 8, "BLOCK_X": 32, "BLOCK_Y": 2}])
    assert kf.env(kf.check_shape, "fp32")["nz"] == 41
    assert {c["Z_SPLIT"] for c in configs} >= {1, 8, 16}
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


def _lift(source: str) -> tuple[set[str], tuple[str, ...]]:
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(nx, 32)", "ceil_div(ny, 4)"],
                         block=["32", "4"], scalars={"nx": "nx", "ny": "ny", "nz": "nz"})
    return {p.name for p in lifted.params}, lifted.notes


#: a 3-point z walk with the planes below and at the point carried by hand
ROTATED = """extern "C" __global__ void k(float* out, const float* u, int nx, int ny, int nz) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const size_t plane = (size_t)nx * ny, col = (size_t)y * nx + x;
  float lo = u[col];
  float mid = u[col + plane];
  for (int z = 1; z < nz - 1; ++z) {
    float hi = u[col + (size_t)(z + 1) * plane];
    out[col + (size_t)z * plane] = lo + mid + hi;
    lo = mid;
    mid = hi;
  }
}
"""


def test_a_hand_rotated_walk_lifts_the_split() -> None:
    knobs, notes = _lift(ROTATED)
    assert "Z_SPLIT" in knobs, notes


def test_copies_in_the_wrong_order_are_refused() -> None:
    # mid = hi first: lo then holds the plane above too
    knobs, notes = _lift(ROTATED.replace("    lo = mid;\n    mid = hi;\n",
                                         "    mid = hi;\n    lo = mid;\n"))
    assert "Z_SPLIT" not in knobs
    assert any(n.startswith("Z_SPLIT: not applied: the copies leave in lo another plane")
               for n in notes), notes


def test_a_register_written_before_the_copies_is_refused() -> None:
    knobs, notes = _lift(ROTATED.replace("    out[col", "    mid *= 0.5f;\n    out[col"))
    assert "Z_SPLIT" not in knobs
    assert any(n.startswith("Z_SPLIT: not applied: `mid *= 0.5f` writes the carried mid")
               for n in notes), notes


def test_a_store_inside_the_walk_from_outside_it_is_refused() -> None:
    # the prologue stores plane 1, which the walk's first chunk stores too
    knobs, notes = _lift(ROTATED.replace("  float mid = u[col + plane];\n",
                                         "  float mid = u[col + plane];\n"
                                         "  out[col + plane] = mid;\n"))
    assert "Z_SPLIT" not in knobs
    assert any("stores outside the walk at a plane not known" in n for n in notes), notes


def test_an_accumulator_across_planes_is_no_rotation() -> None:
    source = ROTATED.replace("  float lo = u[col];\n", "  float lo = 0.0f;\n")
    knobs, notes = _lift(source)
    assert "Z_SPLIT" not in knobs
    assert not any(n.startswith("Z_SPLIT: applied") for n in notes), notes


def test_a_call_before_the_walk_is_refused() -> None:
    # every block would run it: an atomic sum counted Z_SPLIT times
    knobs, notes = _lift(ROTATED.replace("(float* out,", "(float* out, float* total,").replace(
        "  float mid = u[col + plane];\n",
        "  float mid = u[col + plane];\n  atomicAdd(total, lo);\n"))
    assert "Z_SPLIT" not in knobs
    assert any("is called outside the walk" in n for n in notes), notes


def test_a_read_of_the_output_after_the_walk_is_refused() -> None:
    # the plane the walk stored last, read back: another block's chunk may not be done
    knobs, notes = _lift(ROTATED.replace("    mid = hi;\n  }\n", "    mid = hi;\n  }\n"
                                         "  out[col] = out[col + plane];\n"))
    assert "Z_SPLIT" not in knobs
    assert any("which the walk stores, outside it" in n for n in notes), notes


def test_a_sum_into_memory_before_the_walk_is_refused() -> None:
    knobs, notes = _lift(ROTATED.replace("  float mid = u[col + plane];\n",
                                         "  float mid = u[col + plane];\n  out[col] += lo;\n"))
    assert "Z_SPLIT" not in knobs
    assert any("reads and writes memory outside the walk" in n for n in notes), notes
