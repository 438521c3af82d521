"""First contact with held-back set 20's Gram matrix (issue 28):
benchmarks/corpus_compute_unseen20/gram_ata_ridge computes ``C = Aᵀ A / K + 0.01 I`` over
16 x 16 shared tiles, both read k-major from the same matrix (``As[k][ty] * Bs[k][tx]``),
and declares its loop counters before their loops, as C89 wants (``int k; ... for (k = 0;
k < TILE_WIDTH; k++)``). The register-tile family (:mod:`workbench.templater.regtile`)
read the product's loop over k only from a header that declares its counter
(``for (int k = 0; ...)``): the tiles' pairing along k looked depth-dependent and nothing
was lifted (templater/expert 0.38 on the H200). A header that starts a counter declared
before it is the same loop where nothing outside such loops reads the counter (its value
after the loop, the depth, is read nowhere); such a counter is the loop's own, not state the
threads carry. The family now lifts BM, BN, BK, TM, TN (and VEC).

Host (g++): the folder and a second hand's spelling (counters declared together, the tile
walk stepping k by the tile, padded tiles, loads through the conditional operator, the ridge
added in one expression, ``!=`` and ``+= 1`` in the inner header), each at the default, the
expert's H200 pick in the lift's knobs (BM 64, BN 64, BK 32, TM 4, TN 4) and a mix, bit for
bit against the kernel as written; under WORKBENCH_FULL_MATRIX=1 at every all-ends config
too. A counter read after its loop keeps the kernel as written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen20
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template

FOLDER = held_back_unseen20.SET.root / "gram_ata_ridge"
KNOBS = {"BM", "BN", "BK", "TM", "TN"}
#: The expert's H200 pick (BM 64, BN 64, BK 32, TM 4, TN 4, PAD 1) in the lift's knobs: the
#: lift has no padding knob; a 4 x 4 tile a thread asks for float4 loads where the tile's
#: sides are multiples of 4 (VEC 4, each vector checked aligned and in bounds).
EXPERT_PICK = {"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "VEC": 4}
#: 128 rows a block over 45 (one block, mostly past), 32 columns (two blocks, the last
#: partly), slices of 8 over 37 samples (four full and a partial one), 8 x 4 a thread
MIX = {"BM": 128, "BN": 32, "BK": 8, "TM": 8, "TN": 4, "VEC": 4}

#: Another hand: the counters declared together before anything, the tile walk stepping k
#: by the tile, padded tiles, the loads through ``?:``, the inner loop written with ``!=``
#: and ``+= 1``, the ridge added in one expression.
SECOND = """#define TS 16

extern "C" __global__ void gram_ata_ridge(float *C, float *A, int K, int N)
{
    __shared__ float left[TS][TS + 1];
    __shared__ float right[TS][TS + 1];
    int k0, j;
    int i = blockIdx.y * TS + threadIdx.y;
    int c = blockIdx.x * TS + threadIdx.x;
    float acc = 0.0f;

    for (k0 = 0; k0 < K; k0 += TS) {
        left[threadIdx.y][threadIdx.x] =
            (k0 + threadIdx.y < K && blockIdx.y * TS + threadIdx.x < N)
                ? A[(k0 + threadIdx.y) * N + blockIdx.y * TS + threadIdx.x] : 0.0f;
        right[threadIdx.y][threadIdx.x] =
            (k0 + threadIdx.y < K && blockIdx.x * TS + threadIdx.x < N)
                ? A[(k0 + threadIdx.y) * N + blockIdx.x * TS + threadIdx.x] : 0.0f;
        __syncthreads();
        for (j = 0; j != TS; j += 1)
            acc += left[j][threadIdx.y] * right[j][threadIdx.x];
        __syncthreads();
    }
    if (i < N && c < N)
        C[i * N + c] = acc / K + (i == c ? 0.01f : 0.0f);
}
"""


def _kernel(spelling: str, root: Path) -> KernelFolder:
    return load_kernel_folder(FOLDER) if spelling == "folder" else \
        respelled(FOLDER, root, SECOND)


def _configs(kf: KernelFolder) -> list[dict[str, Any]]:
    template = offline_template(kf).template
    default = dict(template.default_config())
    picked = [default, {**default, **EXPERT_PICK}, {**default, **MIX}]
    if FULL_MATRIX:
        picked += end_configs(template, kf.env(kf.check_shape, "fp32"))
    return picked


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_register_tile_lifted_over_counters_declared_before(spelling: str,
                                                              tmp_path: Path) -> None:
    kf = _kernel(spelling, tmp_path)
    result = offline_template(kf)
    assert {p.name for p in result.lifted.params} >= KNOBS, result.notes
    assert any(n.startswith("REGISTER_TILE: applied") for n in result.notes), result.notes
    # the inner counter is the loop's own: one int, not a register tile of counters
    assert "k[TM][TN]" not in result.lifted.source and \
        "j[TM][TN]" not in result.lifted.source
    space = result.template.space(kf.env(kf.check_shape, "fp32"))
    for config in (EXPERT_PICK, MIX):
        full = {**dict(result.template.default_config()), **config}
        assert space.rejection(full) is None, (config, space.rejection(full))


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_host_bit_for_bit(spelling: str, tmp_path: Path,
                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _kernel(spelling, tmp_path / "src")
    template = offline_template(kf).template
    configs = _configs(kf)
    ran = same_as_written(kf, template, configs, held_back_unseen20.host_source, tmp_path,
                          host_flags)
    assert ran == len(configs)


def test_a_counter_read_after_its_loop_is_not_the_loops_own(tmp_path: Path) -> None:
    """The epilogue reads ``k`` after the loop (16 as written: ``k - TILE_WIDTH`` is 0): a
    deeper slice would leave another value there, so no register tile is lifted, and the
    note names the read."""
    source = FOLDER.joinpath("baseline.cu").read_text().replace(
        "sum / K + RIDGE;", "(sum + (k - TILE_WIDTH)) / K + RIDGE;")
    assert "(k - TILE_WIDTH)" in source
    kf = respelled(FOLDER, tmp_path, source)
    try:
        result = offline_template(kf)
    except TemplateError as exc:  # nothing lifted at all: no register tile either
        notes = exc.details["findings"]
    else:
        assert not {p.name for p in result.lifted.params} >= KNOBS, result.notes
        notes = list(result.notes)
    assert any(n.startswith("REGISTER_TILE: not applied: the counter `k` of the loop over k")
               and "`k - TILE_WIDTH`" in n for n in notes), notes
