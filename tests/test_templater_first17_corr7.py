"""First contact with held-back set 17's 7 x 7 correlation bank (issue 28):
benchmarks/corpus_compute_unseen17/corr7x7_bank4 stages its 22 x 22 window in a flat shared
array read through a macro (``tile[(y) * WIN + (x)]``) and its four filters in a second shared
array filled by ``if (tid < NF * TAPS) taps[tid] = filt[tid];``. The apron family (outputs per
thread over a shared window, :mod:`workbench.templater.apron`) reads one 2-D tile, so it left
the kernel without a word; the expert's rows a thread (RY) and padding (PAD) were out of
reach and the lift had the block sizes only.

Pure: the refusal is now a note with the line, naming the hand-indexed tile and the other
shared array, for the folder and for a second spelling (constexpr sizes, a nest of loads, the
filters in a 2-D shared array, the tile read inline: the family's two-arrays refusal, which
now names both arrays and their lines).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen17
from held_back_harness import respelled

from workbench.templater import offline_template

FOLDER = held_back_unseen17.SET.root / "corr7x7_bank4"

#: The same correlation by another hand: constexpr sizes, the window loaded by two loops
#: strided by the block, the filters in a 2-D shared array, the taps read inline.
SPELLING = """constexpr int T = 16, HALO = 3, SW = T + 2 * HALO, NW = 4, K = 7;
extern "C" __global__ void corr7x7_bank4(float* __restrict__ out, const float* __restrict__ img,
                                         const float* __restrict__ filt, int H, int W) {
  __shared__ float win[SW * SW];
  __shared__ float wt[NW][K * K];
  for (int r = threadIdx.y; r < SW; r += T)
    for (int c = threadIdx.x; c < SW; c += T) {
      int gy = (int)blockIdx.y * T + r - HALO, gx = (int)blockIdx.x * T + c - HALO;
      float v = 0.0f;
      if (gy >= 0 && gy < H && gx >= 0 && gx < W) v = img[gy * W + gx];
      win[r * SW + c] = v;
    }
  for (int q = threadIdx.y * T + threadIdx.x; q < NW * K * K; q += T * T)
    wt[q / (K * K)][q % (K * K)] = filt[q];
  __syncthreads();
  int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
  if (x < W && y < H) {
    float s[NW] = {};
    for (int i = 0; i < K; i++)
      for (int j = 0; j < K; j++)
        for (int f = 0; f < NW; f++)
          s[f] += wt[f][i * K + j] * win[(threadIdx.y + i) * SW + threadIdx.x + j];
    for (int f = 0; f < NW; f++) out[(f * H + y) * W + x] = s[f];
  }
}
"""


def _apron_notes(notes: tuple[str, ...]) -> list[str]:
    return [n for n in notes if n.startswith("OUT_XY: ")]


def test_the_folders_flat_window_and_shared_filters_are_named_with_the_line() -> None:
    from workbench.core.kernel_folder import load_kernel_folder
    notes = _apron_notes(offline_template(load_kernel_folder(FOLDER)).notes)
    assert notes == [
        "OUT_XY: not applied: the shared tile tile[WIN * WIN] is one array indexed by hand "
        "(`tile[(threadIdx.y + dy) * WIN + (threadIdx.x + dx)]`): the apron tile is read as a "
        "2-D array [rows][columns]; the kernel also shares taps[NF * TAPS] (line 17): one "
        "apron tile is modelled (line 16)"], notes


def test_a_second_spelling_is_named_the_same_way(tmp_path: Path) -> None:
    kf = respelled(FOLDER, tmp_path, SPELLING)
    notes = _apron_notes(offline_template(kf).notes)
    assert notes == [
        "OUT_XY: not applied: 2 shared arrays (win[SW * SW] (line 4), wt[NW][K * K] (line 5)): "
        "one apron tile is modelled (line 5)"], notes
