"""TILE (workbench/templater/walk_tile.py, issue 28): a walk every thread of the block reads
at the same index, staged in shared memory. Held-back set 19's coulomb_pot_tiles reads
``charges[j]`` (float4) in every thread straight from global memory; its expert stages the
charges TILE at a time (4.03x at TILE 512 against 1.00x at TILE 0 on the H200; the lift at
the expert's pick 1.00x).
Pure: the folder's lift and a second spelling (plain float pointers read at ``4 * j + c``,
``++j``, no struct or helpers) lift TILE (default 0) beside ITEMS_PER_THREAD and UNROLL;
refusals with the line: a walked pointer written, a barrier in the walk, an index other than
``j``, shared memory already present. Host (g++): both lifts at the default and a mix bit
for bit against the kernel as written, m = 200 a multiple of no TILE (the ends of every
range under WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen19
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen19.SET.root / "coulomb_pot_tiles"
#: The expert's H200 pick (THREADS 128, ITEMS 1, TILE 512, UNROLL 4) spelled in the lift's
#: knobs, then two items over 96 threads staging 128 (200 charges: a full tile and a partial
#: one), a minimum of 2 blocks.
MIXES = [{"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "UNROLL": 4, "TILE": 512},
         {"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 2, "UNROLL": 2, "TILE": 128,
          "MIN_BLOCKS_PER_SM": 2}]

#: The same potential by another hand: the raw float pointers read at 4 * j + c, ++j, the
#: distance written out, the softening a literal.
SPELLING = """extern "C" __global__ void coulomb_pot_tiles(float* out, const float* pr,
    const float* q, int n, int m) {
  int t = threadIdx.x + blockIdx.x * blockDim.x;
  if (t >= n) return;
  float x = pr[3 * t], y = pr[3 * t + 1], z = pr[3 * t + 2];
  float acc = 0.0f;
  for (int j = 0; j < m; ++j) {
    float dx = x - q[4 * j], dy = y - q[4 * j + 1], dz = z - q[j * 4 + 2];
    acc += q[4 * j + 3] * rsqrtf(dx * dx + dy * dy + dz * dz + 0.01f);
  }
  out[t] = acc;
}
"""


def _lift(source: str) -> tuple[dict[str, dict], list[str], str]:
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         smem_bytes="0", scalars={"n": "n", "m": "m"})
    tile = [str(f) for f in lifted.notes if f.startswith("TILE")]
    return {p.name: dict(p.spec) for p in lifted.params}, tile, lifted.source


def _kernel(body: str) -> str:
    return ("extern \"C\" __global__ void k(float* out, float* q, int n, int m) {\n"
            "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n  if (t >= n) return;\n"
            "  float x = out[t];\n  float acc = 0.0f;\n"
            f"  for (int j = 0; j < m; ++j) {{\n{body}\n  }}\n  out[t] = acc;\n}}\n")


def test_the_folder_and_a_second_spelling_lift_the_tile() -> None:
    for source in (load_kernel_folder(FOLDER).baseline.source, SPELLING):
        params, notes, text = _lift(source.replace("coulomb_pot_tiles(", "k("))
        assert params["TILE"]["default"] == 0, notes
        assert {"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL"} <= set(params)
        assert notes[0].startswith("TILE: applied"), notes
        assert "__syncthreads" in text and "wb_all_live" not in text


def test_refusals_name_the_line_and_reason() -> None:
    work = " * rsqrtf(x * x + 1.0f);"
    params, notes, _text = _lift(_kernel("acc += q[j]" + work))
    assert "TILE" in params and notes[0].startswith("TILE: applied"), notes
    params, notes, _text = _lift(_kernel("acc += q[j + 1]" + work))
    assert "TILE" not in params and notes == [
        "TILE: not applied: `q[j + 1]` reads the walk at an index other than `j` (C * j + c) "
        "(line 7)"], notes
    written = _kernel("acc += q[j]" + work).replace("float x = out[t];",
                                                    "float x = out[t];\n  q[t] = 0.0f;")
    params, notes, _text = _lift(written)
    assert "TILE" not in params and notes == [
        "TILE: not applied: the kernel writes through or to `q` (line 5)"], notes
    params, notes, _text = _lift(_kernel("acc += q[j] + x * q[2 * j]" + work))
    assert "TILE" not in params and "two strides" in notes[0], notes
    # a write or a barrier in the walk, shared memory of the kernel's own: no items of the
    # interleaved kind (ilp refuses them first), so no walk staged
    for source in (_kernel("q[j] = x;\n    acc += q[j]" + work),
                   _kernel("acc += q[j]" + work + "\n    __syncthreads();"),
                   _kernel("acc += q[j] * s[0]" + work).replace(
                       "float x = out[t];", "float x = out[t];\n  __shared__ float s[1];")):
        params, notes, _text = _lift(source)
        assert "TILE" not in params, source


def _host(kf: KernelFolder, work: Path, flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    defaults = {p.name: p.default for p in template.params}
    configs = [defaults, *({**defaults, **m} for m in MIXES)]
    if FULL_MATRIX:
        configs += host_configs(template, kf.env(kf.check_shape, "fp32"))
    return same_as_written(kf, template, configs, held_back_unseen19.host_source, work, flags)


def test_host_the_folder_and_the_spelling_bit_for_bit(tmp_path: Path,
                                                      host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _host(load_kernel_folder(FOLDER), tmp_path / "folder", host_flags) >= 3
    kf = respelled(FOLDER, tmp_path / "spelled", SPELLING)
    assert _host(kf, tmp_path / "spelling", host_flags) >= 3
