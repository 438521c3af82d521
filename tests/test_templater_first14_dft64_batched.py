"""First contact with held-back set 14's batched DFT (issue 28): benchmarks/
corpus_compute_unseen14/dft64_batched builds 64 twiddles in a ``__shared__ float2 tw[64]``
under ``if (tid < 64)`` (``tid = threadIdx.y * 64 + threadIdx.x``), a barrier, then each
thread of a (64, 4) block sums one bin of the signal ``blockIdx.x * 4 + threadIdx.y``. The
lift found nothing (1.00x on the H100, the expert 1.43x): the tile family read the extent 64
as the block's x size and kept the whole block as written (line 21), and the 4 signals a block
(a literal offset of blockIdx.x by the y size) were a block size the block lift did not see.

workbench/templater/block_table.py reads such an array as a table its guard fills (every
entry written under ``i < E`` by the flat thread index, with a value of the index alone):
no tile, its extent no block-size use, covered at any block of ``E`` threads or more (a
constraint where the lift changes the block). The y threads numbering the grid's items
(``blockIdx.x * 4 + threadIdx.y``, the grid ``ceil_div(batch, 4)``) lift as BLOCK_Y (the
expert's BATCHES, {1, 2, 4, 8, 16}). The x size stays, with its reason: the x threads number a
row as long as the table and nothing offsets them by the block size. workbench/templater/
table_items.py then gives a thread ITEMS_X of the row's outputs (the expert's KT): the fill a
block-stride loop, the statements reading the output's place once an item in an unrolled
loop, the input's load in the sum shared by the items; UNROLL on that sum (the expert's).

Pure: the folder's lift; a second spelling (two float tables in one declaration filled under
a macro bound by ``lane + blockDim.x * threadIdx.y``, the row ``threadIdx.y + 4 *
blockIdx.x``, a ``while`` over the inputs, the work inside ``if (sig < batch)``); a third (a
fill guarded by threadIdx.x alone, a __device__ helper, a float2 accumulator stepped by its
fields); fills that are no table (an atomic, a value of the thread's row, a guard short of
the extent) keep the block as written; items refused with their reason (a store the items
share, blockDim.x after the barrier, a helper writing memory in a shared statement, the
fill's index read again). Host (g++): the three lifts at the default, the expert's pick in
the lift's knobs, mixes and the all-ends configs against the kernel as written, bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen14
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import LiftedSource, offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen14.ROOT / "dft64_batched"
#: The expert's H100 pick (BATCHES 4, KT 4, STAGE 1, UNROLL 4) in the lift's knobs; four
#: signals a block of two bins a thread, staged, the sum unrolled whole, at four blocks an SM
#: (the 7 signals uneven over the blocks); 16 signals of 8 bins a thread (one block, 9 rows
#: past the end: the all-ends configs stop at BLOCK_Y 1, the range's other end, 64, being
#: past 1024 threads); one signal of 8 threads, staged (the table's 64 entries in 8 trips).
MIXES = [{"BLOCK_Y": 4, "ITEMS_X": 4, "STAGE": 1, "UNROLL": 4},
         {"BLOCK_Y": 4, "ITEMS_X": 2, "STAGE": 1, "UNROLL": 64, "MIN_BLOCKS_PER_SM": 4},
         {"BLOCK_Y": 16, "ITEMS_X": 8, "UNROLL": 8}, {"BLOCK_Y": 1, "ITEMS_X": 8, "STAGE": 1}]

#: BLOCK_Y {1..16} x ITEMS_X {1, 2, 4, 8} x STAGE {0, 1} x UNROLL {0, 1, 2, 4, 8, 64} x
#: MIN_BLOCKS_PER_SM at the large shape (the expert's 5 x 3 x 2 x 3 = 90, less its rules).
SPACE = 660


#: The same pattern by another hand: cos and sin in two float tables of one declaration, a
#: macro bound, the flat index through blockDim.x, the row's offset written the other way
#: round, a while over the inputs, the work inside an if.
SPELLING = """// Direct 64-point DFT of each signal, four signals a block: twiddles as two tables.
#define PTS 64

extern "C" __global__ void dft64_batched(float* __restrict__ out, const float* __restrict__ in,
                                         int batch) {
  __shared__ float cs[PTS], sn[PTS];
  const unsigned lane = threadIdx.x;
  const unsigned flat = lane + blockDim.x * threadIdx.y;
  if (flat < PTS) {
    const float a = -6.28318530717958647f * (float)flat / 64.0f;
    cs[flat] = cosf(a);
    sn[flat] = sinf(a);
  }
  __syncthreads();
  const int sig = threadIdx.y + 4 * blockIdx.x;
  if (sig < batch) {
    const float* x = in + (size_t)sig * 2 * PTS;
    float re = 0.0f, im = 0.0f;
    int j = 0;
    while (j < PTS) {
      const int t = (j * lane) % PTS;
      const float xr = x[2 * j], xi = x[2 * j + 1];
      re += xr * cs[t] - xi * sn[t];
      im += xr * sn[t] + xi * cs[t];
      ++j;
    }
    out[((size_t)sig * PTS + lane) * 2] = re;
    out[((size_t)sig * PTS + lane) * 2 + 1] = im;
  }
}
"""

#: A third hand: a fill guarded by threadIdx.x alone (every row fills the same table), a
#: complex product through a __device__ helper, a float2 accumulator stepped by its fields.
FIELDS = """__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

extern "C" __global__ void dft64_batched(float* __restrict__ out, const float* __restrict__ in,
                                         int batch) {
  __shared__ float2 w64[64];
  if (threadIdx.x < 64) {
    const float ang = -6.28318530717958647f * (float)threadIdx.x / 64.0f;
    w64[threadIdx.x] = make_float2(cosf(ang), sinf(ang));
  }
  __syncthreads();
  const int row = 4 * blockIdx.x + threadIdx.y;
  if (row < batch) {
    const float2* src = (const float2*)in + row * 64;
    const int bin = threadIdx.x;
    float2 acc = make_float2(0.0f, 0.0f);
    for (int j = 0; j < 64; j++) {
      const float2 p = cmul(src[j], w64[(j * bin) % 64]);
      acc.x += p.x;
      acc.y += p.y;
    }
    ((float2*)out)[row * 64 + bin] = acc;
  }
}
"""

TIED = "is tied to the block size"
KEPT_X = ("BLOCK_X: not applied: the x threads number a row as long as the table {} (64 "
          "entries, filled under a guard on the thread index) and nothing offsets them by the "
          "block size")


def _lift(source: str) -> LiftedSource:
    return lift_kernel(source, entry="dft64_batched", grid=["ceil_div(batch, 4)"],
                       block=["64", "4"], scalars={"batch": "batch"})


def _the_rows_lift(lifted: LiftedSource, table: str) -> None:
    assert [p.name for p in lifted.params] == ["BLOCK_Y", "ITEMS_X", "STAGE", "UNROLL",
                                               "MIN_BLOCKS_PER_SM"]
    assert dict(lifted.params[0].spec)["default"] == 4
    assert dict(lifted.params[1].spec)["values"] == [1, 2, 4, 8]
    assert dict(lifted.params[3].spec)["values"] == [0, 1, 2, 4, 8, 64]  # the shared sum
    assert "#if UNROLL > 0\n#pragma unroll (wb_unroll_x)\n#endif\nfor (int j = 0;" in \
        lifted.source
    assert lifted.grid == ("ceil_div(batch, BLOCK_Y)",)
    assert lifted.block == ("64 / ITEMS_X", "BLOCK_Y")
    assert f"wb_f < {'64' if table == 'tw' else 'PTS'}; wb_f += (64 / ITEMS_X) * BLOCK_Y)" \
        in lifted.source  # the fill strides the block
    assert "64 * BLOCK_Y >= 64" in lifted.constraints  # the table stays covered
    assert any(n.startswith(KEPT_X.format(table)) for n in lifted.notes), lifted.notes
    assert not any(TIED in n for n in lifted.notes)


def test_the_folder_lifts_its_signals_a_block_past_its_twiddle_table() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    _the_rows_lift(result.lifted, "tw")
    source = result.lifted.source
    assert "const int b = blockIdx.x * BLOCK_Y + threadIdx.y;" in source
    assert "__shared__ float2 tw[64];" in source and "tid" not in source
    assert "k[wb_m] = (threadIdx.x + wb_m * (64 / ITEMS_X));" in source
    # the input's load, shared by the items, stays before their loop in the sum
    assert "const float2 v = (STAGE ? wb_st[threadIdx.y * 64 + (j)] : xb[j]);\n" \
        "    #pragma unroll\n    for (int wb_m = 0;" in source
    # STAGE: the block's rows copied before the barrier, rows past the batch left unread
    assert "if (wb_r < (batch)) wb_st[wb_e] = (reinterpret_cast<const float2*>(in) + " \
        "(size_t)wb_r * 64)[wb_e % 64];" in source
    assert "const float2 w = tw[(j * k[wb_m]) & (N - 1)];" in source  # an item's scalar
    space = result.template.space(load_kernel_folder(FOLDER).env("large", "fp32"))
    assert sorted({c["BLOCK_Y"] for c in space}) == [1, 2, 4, 8, 16]
    assert {"BLOCK_Y": 4, "ITEMS_X": 4, "STAGE": 1, "UNROLL": 4, "MIN_BLOCKS_PER_SM": 0} \
        in space
    assert len(space) == SPACE


def test_two_tables_of_one_declaration_lift_the_same_way() -> None:
    lifted = _lift(SPELLING)
    _the_rows_lift(lifted, "cs")
    assert "const int sig = threadIdx.y + BLOCK_Y * blockIdx.x;" in lifted.source


def test_an_accumulator_stepped_by_its_fields_is_each_items_own() -> None:
    lifted = _lift(FIELDS)
    assert [p.name for p in lifted.params] == ["BLOCK_Y", "ITEMS_X", "STAGE", "UNROLL",
                                               "MIN_BLOCKS_PER_SM"]
    assert "float2 acc[ITEMS_X];" in lifted.source and "acc[wb_m].x += p.x;" in lifted.source
    assert "w64[wb_f] = make_float2(cosf(ang), sinf(ang));" in lifted.source


@pytest.mark.parametrize("old, new", [
    # an atomic writes the array where no guard is seen: a tile as before
    ("    sn[flat] = sinf(a);\n", "    sn[flat] = sinf(a);\n    atomicAdd(&cs[0], 0.0f);\n"),
    # each row's threads would fill it with their own values
    ("(float)flat / 64.0f", "(float)(flat + threadIdx.y) / 64.0f"),
    # half the entries filled: the block's 64 x threads are the ones that fill it
    ("if (flat < PTS)", "if (flat < 32)"),
])
def test_a_fill_that_is_no_table_keeps_the_block(old: str, new: str) -> None:
    assert old in SPELLING
    notes = _lift(SPELLING.replace(old, new)).notes
    assert any(TIED in n and "line 6" in n for n in notes), notes


@pytest.mark.parametrize("old, new, why", [
    # a store every item makes at one place
    ("out[((size_t)sig * PTS + lane) * 2 + 1] = im;", "out[(size_t)sig * PTS * 2] += im;",
     "writes memory at a place shared by all items"),
    # the block's x size read after the barrier would shrink with the items
    ("const float* x = in + (size_t)sig * 2 * PTS;",
     "const float* x = in + (size_t)sig * 2 * blockDim.x;", "reads the block's x size"),
    # a helper that writes memory, in a statement the items would share
    ("    float re = 0.0f, im = 0.0f;\n",
     "    float re = 0.0f, im = 0.0f;\n    mark(out, sig);\n", "not pure"),
    # the fill's flat index read again past the fill
    ("re += xr * cs[t]", "re += (float)flat + xr * cs[t]", "the fill's index `flat` is read"),
])
def test_items_along_the_row_are_refused_naming_why(old: str, new: str, why: str) -> None:
    assert old in SPELLING
    helper = "__device__ void mark(float* o, int s) { o[s] = 1.0f; }\n"
    lifted = _lift(helper + SPELLING.replace(old, new))
    assert "ITEMS_X" not in [p.name for p in lifted.params]
    assert any(n.startswith("ITEMS_X: not applied") and why in n for n in lifted.notes), \
        lifted.notes


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...]) -> int:
    """Runs ``kf``'s lift at :func:`host_configs`' configs and its kernel as written on the
    host; asserts every output bit for bit; the configs run."""
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), MIXES)
    assert {1, 16} <= {c["BLOCK_Y"] for c in configs}
    assert {1, 8} <= {c["ITEMS_X"] for c in configs} and {0, 1} <= {c["STAGE"] for c in configs}
    return same_as_written(kf, template, configs, held_back_unseen14.host_source, tmp_path,
                           flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags) >= 6


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_spelling_computes_as_written(tmp_path: Path,
                                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", SPELLING)
    assert _same_outputs(kf, tmp_path / "runs", host_flags) >= 6


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_field_accumulator_computes_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", FIELDS)
    assert _same_outputs(kf, tmp_path / "runs", host_flags) >= 6
