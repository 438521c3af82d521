"""The row-scan family (issue 28), pure tier: per-row prefix scans as different people
write them (a ping-pong Hillis-Steele with a tile-index loop and a shared carry, a Blelloch
exclusive scan of a row that fits the block, warp shuffles over shared warp totals with a
running fmaxf, a Blelloch scan made inclusive by a register with a shared carry) lift to
BLOCK_THREADS / ITEMS_PER_THREAD / PAD with the operator, identity, mode, load and store
read from what the block computes; benchmarks/corpus_compute_unseen8/row_cumsum lifts the
expert's strong region; scans the analysis cannot follow (a non-associative operator, a
gathered load, a race, a store of a function of the scan) are refused with the line. The
host tier (every config's outputs against the answer): tests/test_templater_scan_host.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import LiftedSource, lift_kernel, offline_template

ROW_CUMSUM = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen8" / \
    "row_cumsum"


@dataclass(frozen=True)
class Spelling:
    """A scan kernel as written: its launch block, the C types it loads and stores, the
    answer's operator over (a, b) in C++, its identity, whether the scan is inclusive, the
    longest row the kernel as written takes (0: any), its extra arguments."""

    source: str
    block: int
    elem: str
    op: str
    identity: str
    inclusive: bool
    longest: int = 0
    extra: str = ""


SPELLINGS: dict[str, Spelling] = {
    # Hillis-Steele double-buffered (ping-pong), a tile-index loop, the carry in a shared word
    "pingpong_tile_index_shared_carry": Spelling(r"""#define NT 128
extern "C" __global__ void k(float* out, const float* in, int rows, int n) {
  __shared__ float ping[2][NT];
  __shared__ float running;
  const int row = blockIdx.x;
  if (threadIdx.x == 0) running = 0.0f;
  for (int tile = 0; tile * NT < n; ++tile) {
    int col = tile * NT + threadIdx.x;
    ping[0][threadIdx.x] = (col < n) ? in[(size_t)row * n + col] : 0.0f;
    __syncthreads();
    int src = 0;
    for (int d = 1; d < NT; d <<= 1) {
      float s = ping[src][threadIdx.x];
      if (threadIdx.x >= d) s = s + ping[src][threadIdx.x - d];
      ping[1 - src][threadIdx.x] = s;
      src = 1 - src;
      __syncthreads();
    }
    if (col < n) out[(size_t)row * n + col] = running + ping[src][threadIdx.x];
    __syncthreads();
    if (threadIdx.x == NT - 1) running += ping[src][NT - 1];
    __syncthreads();
  }
}
""", 128, "float", "a + b", "0.0f", True),
    # Blelloch up-sweep / down-sweep, exclusive, an int sum of a row that fits the block
    "blelloch_exclusive_one_block": Spelling(r"""extern "C" __global__ void k(int* offsets, const int* counts, int rows, int n) {
  __shared__ int temp[256];
  const unsigned tid = threadIdx.x;
  const int* src = counts + blockIdx.x * n;
  if (tid < n) temp[tid] = src[tid]; else temp[tid] = 0;
  int step = 1;
  for (int d = 256 >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (tid < d) {
      int ai = step * (2 * tid + 1) - 1;
      int bi = step * (2 * tid + 2) - 1;
      temp[bi] += temp[ai];
    }
    step *= 2;
  }
  if (tid == 0) temp[255] = 0;
  for (int d = 1; d < 256; d *= 2) {
    step >>= 1;
    __syncthreads();
    if (tid < d) {
      int ai = step * (2 * tid + 1) - 1;
      int bi = step * (2 * tid + 2) - 1;
      int keep = temp[ai];
      temp[ai] = temp[bi];
      temp[bi] += keep;
    }
  }
  __syncthreads();
  if (tid < n) offsets[blockIdx.x * n + tid] = temp[tid];
}
""", 256, "int", "a + b", "0", False,
                                             longest=256),
    # warp shuffles and a shared word per warp, a running fmaxf, the carry in a register
    "shuffle_warp_totals_fmaxf": Spelling(r"""// carry in a register
#include <cfloat>
constexpr int kThreads = 256;
extern "C" __global__ void k(float* peak, const float* v, int rows, int n) {
  __shared__ float warp_best[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float* row_in = v + (size_t)blockIdx.x * n;
  float best = -FLT_MAX;
  for (int base = 0; base < n; base += kThreads) {
    const int j = base + threadIdx.x;
    float x = -FLT_MAX;
    if (j < n) x = row_in[j];
    for (int o = 1; o < 32; o *= 2) {
      float up = __shfl_up_sync(0xffffffff, x, o);
      if (lane >= o) x = fmaxf(x, up);
    }
    if (lane == 31) warp_best[warp] = x;
    __syncthreads();
    float before = best;
    for (int w = 0; w < warp; ++w) before = fmaxf(before, warp_best[w]);
    if (j < n) peak[(size_t)blockIdx.x * n + j] = fmaxf(before, x);
    for (int w = 0; w < kThreads / 32; ++w) best = fmaxf(best, warp_best[w]);
    __syncthreads();
  }
}
""", 256, "float", "std::max(a, b)",
                                          "-FLT_MAX", True),
    # Blelloch made inclusive by the element kept in a register, the carry in a shared
    # word, a double sum of the input times a scalar argument
    "blelloch_inclusive_register_double": Spelling(r"""// through a pointer walk, the carry in shared memory, a double sum of a scaled input
#define B 128
extern "C" __global__ void k(double* cum, const double* w, int rows, int n, double scale) {
  __shared__ double s[B];
  __shared__ double carry;
  const int t = threadIdx.x;
  if (t == 0) carry = 0.0;
  for (int c0 = 0; c0 < n; c0 += B) {
    const double mine = (c0 + t < n) ? w[blockIdx.x * n + c0 + t] * scale : 0.0;
    s[t] = mine;
    for (int stride = 1; stride < B; stride *= 2) {
      __syncthreads();
      const int i = (t + 1) * stride * 2 - 1;
      if (i < B) s[i] += s[i - stride];
    }
    __syncthreads();
    if (t == 0) s[B - 1] = 0.0;
    for (int stride = B / 2; stride > 0; stride /= 2) {
      __syncthreads();
      const int i = (t + 1) * stride * 2 - 1;
      if (i < B) {
        const double left = s[i - stride];
        s[i - stride] = s[i];
        s[i] += left;
      }
    }
    __syncthreads();
    if (c0 + t < n) cum[blockIdx.x * n + c0 + t] = carry + s[t] + mine;
    __syncthreads();
    if (t == B - 1) carry += s[t] + mine;
    __syncthreads();
  }
}
""", 128, "double", "a + b", "0.0",
                                                   True, extra="1.5"),
}


def lift(spelling: Spelling, source: str | None = None) -> LiftedSource:
    scalars = {"n": "n", "rows": "rows"} | ({"scale": "scale"} if spelling.extra else {})
    return lift_kernel(spelling.source if source is None else source, entry="k",
                       grid=["rows"], block=[str(spelling.block)], scalars=scalars)


def knobs(lifted: LiftedSource) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in lifted.params}


def scan_note(lifted: LiftedSource) -> str:
    found = [n for n in lifted.notes if n.startswith("ROW_SCAN")]
    assert len(found) == 1, lifted.notes
    return found[0]


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_lifts_the_scan_knobs(name: str) -> None:
    spelling = SPELLINGS[name]
    lifted = lift(spelling)
    note = scan_note(lifted)
    assert note.startswith("ROW_SCAN: applied"), note
    mode = "inclusive" if spelling.inclusive else "exclusive"
    op = "fmaxf" if "max" in spelling.op else "+"
    assert f"an {mode} `{op}` scan" in note, note
    spec = knobs(lifted)
    assert spec["BLOCK_THREADS"] == {"kind": "int", "min": 32, "max": 1024, "step": 32,
                                     "default": spelling.block,
                                     "description": spec["BLOCK_THREADS"]["description"]}
    assert spec["ITEMS_PER_THREAD"]["default"] == 1 and spec["PAD"]["default"] == 0
    assert list(lifted.block) == ["BLOCK_THREADS"] and list(lifted.grid) == ["rows"]
    # the kernel's own identity, its element type and its operator are kept
    assert f"({spelling.elem})({spelling.identity})" in lifted.source, lifted.source
    assert ("fmaxf(a, b)" if op == "fmaxf" else "a + b") in lifted.source


def test_row_cumsum_lifts_the_expert_strong_region() -> None:
    result = offline_template(load_kernel_folder(ROW_CUMSUM))
    template, lifted = result.template, result.lifted
    note = scan_note(lifted)
    assert note.startswith("ROW_SCAN: applied: an inclusive `+` scan") and "(line 15)" in note
    assert "(float)(0.0f)" in lifted.source and "xr[((0) + wb_col)]" in lifted.source
    assert "yr[((0) + wb_col)] = wb_tile[" in lifted.source
    env = {"rows": 5, "cols": 1000}
    space = template.space(env)
    inside = [(t, i) for t in (128, 256, 384, 512, 768, 1024) for i in (1, 2, 4, 8, 16)
              if space.rejection({"BLOCK_THREADS": t, "ITEMS_PER_THREAD": i, "PAD": 1,
                                  "MIN_BLOCKS_PER_SM": 0}) is None]
    # every tile the expert's shared-memory bound allows (THREADS x ITEMS x 4 bytes, padded,
    # within 48 KB): all but 1024 x 16 and 768 x 16
    assert len(inside) == 28 and (1024, 16) not in inside and (512, 16) in inside, inside
    assert template.default_config()["BLOCK_THREADS"] == 256


@pytest.mark.parametrize(("name", "old", "new", "why"), [
    # a difference of a neighbour: `-` is not associative
    ("pingpong_tile_index_shared_carry", "s = s + ping[src][threadIdx.x - d];",
     "s = s - ping[src][threadIdx.x - d];", "(not associative)"),
    # a gathered load: the element's index reads memory
    ("shuffle_warp_totals_fmaxf", "if (j < n) x = row_in[j];",
     "if (j < n) x = row_in[(int)row_in[j]];", "reads global memory outside the element"),
    # one barrier a step: a thread reads the word its neighbour writes in the same step
    ("blelloch_inclusive_register_double", """      if (i < B) s[i] += s[i - stride];
    }
    __syncthreads();""", """      if (i < B) s[i] += s[i - stride];
      if (i < B) s[i] += s[i - stride];
    }
    __syncthreads();""", "combines element"),
    # the store of a function of the scan
    ("shuffle_warp_totals_fmaxf", "= fmaxf(before, x);", "= sqrtf(fmaxf(before, x));",
     "a call the scan analysis does not follow"),
    # the carry taken, not combined: the third chunk loses the first
    ("blelloch_inclusive_register_double", "if (t == B - 1) carry += s[t] + mine;",
     "if (t == B - 1) carry = s[t] + mine;", "not a prefix scan of the row"),
])
def test_scans_the_analysis_cannot_follow_are_refused_with_the_line(
        name: str, old: str, new: str, why: str) -> None:
    spelling = SPELLINGS[name]
    assert old in spelling.source
    lifted = lift(spelling, spelling.source.replace(old, new))
    note = scan_note(lifted)
    assert note.startswith("ROW_SCAN: not applied") and why in note and "(line " in note, note
    assert "ITEMS_PER_THREAD" not in knobs(lifted)


def test_a_race_between_threads_is_refused() -> None:
    """Hillis-Steele in place with one barrier a step (no barrier between the read of the
    neighbour and the write): the analysis refuses it rather than trust one order."""
    source = SPELLINGS["pingpong_tile_index_shared_carry"].source.replace(
        """      float s = ping[src][threadIdx.x];
      if (threadIdx.x >= d) s = s + ping[src][threadIdx.x - d];
      ping[1 - src][threadIdx.x] = s;
      src = 1 - src;""", """      if (threadIdx.x >= d) ping[src][threadIdx.x] += ping[src][threadIdx.x - d];""")
    note = scan_note(lift(SPELLINGS["pingpong_tile_index_shared_carry"], source))
    assert "with no barrier between" in note and "(line 13)" in note, note
