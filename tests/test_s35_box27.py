"""Session 35 (box27): box27_aniso_dacc (set 28), a 27-point anisotropic box smoother read
through an ``AT(z, y, x)`` macro with ``size_t`` arithmetic on a 32 x 4 x 2 block, the taps
in three constant-bound loops, the sum in double.

What the z-march family reads, as found here:

- stencil.py's register march (Z_ITEMS) already reads a plane offset through the macro's
  ``size_t`` index and a 3-D block whose z is > 1 (the grid's z divided by
  ``BLOCK_Z * Z_ITEMS``) where each plane read is at a constant offset: the 7-point star
  respelling with the same macro and block lifts it (host-checked below).
- box27's taps read their plane through the loop counter ``k`` (``AT(z + k - 1, ..)``): the
  plane registers take constant plane offsets only, so Z_ITEMS stays refused; the note now
  says so with the read and its line (stencil._counter_plane_read) instead of "no input is
  read at the planes above or below". The planes of one thread are still marched through
  ITEMS_Z (consecutive block z's a block), bit for bit as written.
- stencil_zgrid's note for a 3-D block whose z is > 1 names the block's z threads.

Gaps (asserted): the box's loop-counter planes (no plane registers), and the pointer-walk
respelling (``p[dz * plane + ..]`` through a local pointer) reads no plane stencil.py sees.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen28
import pytest
from held_back_harness import default_and_mix, respelled, same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s35_box27"
SET = held_back_unseen28.SET
KERNEL = "box27_aniso_dacc"

_BOX = frozenset({"BLOCK_X", "BLOCK_Y", "BLOCK_Z", "ITEMS_X", "ITEMS_Y", "ITEMS_Z",
                  "MIN_BLOCKS_PER_SM"})

#: respelling -> (its knobs, a mix checked bit for bit over the default)
SPELLED: dict[str, tuple[frozenset[str], dict[str, int]]] = {
    # gap: the taps through a local pointer: no plane read is seen (no Z_ITEMS)
    "box27_aniso_dacc_helper_ptr": (
        frozenset({"BLOCK_X", "BLOCK_Y", "BLOCK_Z", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM",
                   "TABLE", "UNROLL"}),
        {"BLOCK_X": 16, "BLOCK_Y": 2, "BLOCK_Z": 4, "ITEMS_PER_THREAD": 2}),
    # the star through the same macro on the same 32 x 4 x 2 block: the register march
    "box27_aniso_dacc_star_macro": (
        frozenset({"BLOCK_X", "BLOCK_Y", "BLOCK_Z", "Z_ITEMS", "MIN_BLOCKS_PER_SM"}),
        {"BLOCK_X": 16, "BLOCK_Y": 2, "BLOCK_Z": 2, "Z_ITEMS": 2}),
}


def _spelled(spelling: str, root: Path) -> KernelFolder:
    return respelled(SET.root / KERNEL, root, (SPELLINGS / f"{spelling}.cu").read_text())


def test_the_corpus_kernel_marches_through_items_and_says_why_not_registers() -> None:
    lifted = offline_template(SET.folder(KERNEL)).lifted
    assert {p.name for p in lifted.params} == _BOX, lifted.notes
    z = [n for n in lifted.notes if n.startswith("Z_ITEMS: not applied")]
    assert any("loop counter `k` (0 .. 2" in n and n.endswith("(line 31)") for n in z), z
    assert any("counts blocks of 2 threads along z" in n and n.endswith("(line 18)")
               for n in z), z


@pytest.mark.parametrize("spelling", sorted(SPELLED))
def test_the_respelling_lifts_its_knobs(spelling: str, tmp_path: Path) -> None:
    lifted = offline_template(_spelled(spelling, tmp_path)).lifted
    assert {p.name for p in lifted.params} == SPELLED[spelling][0], lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_corpus_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = SET.folder(KERNEL)
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), [
        {"BLOCK_X": 32, "BLOCK_Y": 4, "BLOCK_Z": 1, "ITEMS_Z": 8},
        {"BLOCK_X": 16, "BLOCK_Y": 1, "BLOCK_Z": 2, "ITEMS_Y": 4, "ITEMS_Z": 2}])
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path,
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spelling", sorted(SPELLED))
def test_the_respelling_computes_as_written(spelling: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _spelled(spelling, tmp_path / "folder")
    template = offline_template(kf).template
    configs = default_and_mix(template, kf, SPELLED[spelling][1])
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_star_register_march_at_its_ends(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _spelled("box27_aniso_dacc_star_macro", tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), [
        {"BLOCK_X": 32, "BLOCK_Y": 4, "BLOCK_Z": 1, "Z_ITEMS": 8},
        {"BLOCK_Z": 4, "Z_ITEMS": 4}])
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags) == len(configs)


#: a box whose planes move with a loop counter, and the same taps at constant offsets
BOX = """extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz - 2) return;
  float s = 0.0f;
  for (int k = 0; k < 3; ++k)
    s += in[((z + k) * ny + y) * nx + x];
  out[(z * ny + y) * nx + x] = s;
}
"""


@pytest.mark.parametrize(("old", "new", "knob", "note"), [
    ("", "", False, "loop counter `k` (0 .. 2"),
    # the counter's trips not constant: no counter interval, the plain note
    ("k < 3;", "k < nz;", False, "no input is read at the planes above or below"),
    # the planes at constant offsets: the register march
    ("  for (int k = 0; k < 3; ++k)\n    s += in[((z + k) * ny + y) * nx + x];",
     "  s += in[(z * ny + y) * nx + x];\n  s += in[((z + 1) * ny + y) * nx + x];\n"
     "  s += in[((z + 2) * ny + y) * nx + x];", True, ""),
], ids=["counter", "unbounded_counter", "constant_offsets"])
def test_a_plane_moving_with_a_loop_counter_is_named(old: str, new: str, knob: bool,
                                                     note: str) -> None:
    source = BOX.replace(old, new)
    assert source != BOX or not old
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(nx, 32)", "ceil_div(ny, 4)",
                                                  "ceil_div(nz, 2)"],
                         block=["32", "4", "2"], scalars={"nx": "nx", "ny": "ny", "nz": "nz"})
    assert ("Z_ITEMS" in {p.name for p in lifted.params}) == knob, lifted.notes
    if note:
        assert any(n.startswith("Z_ITEMS: not applied") and note in n
                   for n in lifted.notes), lifted.notes
