"""First contact with held-back set 11's Walsh-Hadamard rows (issue 28): benchmarks/
corpus_compute_unseen11/wht1024_rows gives each 1024-float row a block of 512 threads that
never reads ``blockDim`` (each thread owns elements ``t`` and ``t + 512``; ten butterfly
stages in shared memory, ``__syncthreads()`` between them, ``h`` doubling in a ``while``).
Nothing lifted on the H100 (1.00x against the expert's 1.77x): every family refused, the
block-size lift because the block size is written nowhere. Now :mod:`.block_phases` reads
the barriers' level of the body (uniform locals such as ``h``, thread-derived locals such as
``t``, per-thread work in runs between barriers), turns each run into a block-stride loop
over the 512 work items (BLOCK_THREADS) and gives a block ROWS_PER_BLOCK rows on
``threadIdx.y`` (each its slice of the shared row; the row guard a per-row flag, so rows
past the end still meet every barrier).

Pure: the knobs, the launch, the per-row flag; a second spelling of the same pattern (a
bitonic sort of 1024 keys a row: two ``for`` stage loops, bit-twiddled pair indices, an
``unsigned`` thread alias declared before an ``if (row < rows) { .. }`` guard around all
the barriers, ``#define`` sizes); refusals with their lines (a per-thread value read past a
barrier, a warp shuffle, a barrier under a per-thread branch) and ROWS_PER_BLOCK alone
refused where a barrier loop's trip count reads the row. Host (g++): each lift at its
default, mixes and every all-ends config against the kernel as written (the transform
bit for bit; the check shape's 5 rows leave blocks partly past the end at 2, 4 and 8 rows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen11
import pytest
from helpers_templater import end_configs, needs_gxx
from test_corpus_unseen3 import (
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen11.ROOT / "wht1024_rows"
KNOBS = ("BLOCK_THREADS", "ROWS_PER_BLOCK", "REG_STAGES", "SHFL", "VEC", "MIN_BLOCKS_PER_SM")
#: The expert's H100 pick in the lift's knobs (V 4: 256 threads a row, the first two stages
#: in registers, the next five through warp shuffles, float4 copies), without shuffles, all
#: through shared memory; 128 threads of 4 items over 2 rows (the last block half past the
#: 5 rows), float2, three register stages; 32 threads of 16 items over 8 rows (one block, 3
#: rows dead) at the largest register cap, five register stages; 64 threads over 4 rows,
#: float4; 512 threads with the first stage in registers (two elements a thread, float2
#: copies) and five in shuffles.
MIXES = [{"BLOCK_THREADS": 256, "ROWS_PER_BLOCK": 1, "REG_STAGES": 1, "SHFL": 1, "VEC": 4},
         {"BLOCK_THREADS": 256, "ROWS_PER_BLOCK": 1, "REG_STAGES": 1, "VEC": 4},
         {"BLOCK_THREADS": 256, "ROWS_PER_BLOCK": 1, "VEC": 4},
         {"BLOCK_THREADS": 128, "ROWS_PER_BLOCK": 2, "REG_STAGES": 1, "VEC": 2},
         {"BLOCK_THREADS": 32, "ROWS_PER_BLOCK": 8, "REG_STAGES": 1, "VEC": 1,
          "MIN_BLOCKS_PER_SM": 4},
         {"BLOCK_THREADS": 64, "ROWS_PER_BLOCK": 4, "VEC": 4, "MIN_BLOCKS_PER_SM": 2},
         {"BLOCK_THREADS": 512, "REG_STAGES": 1, "SHFL": 1, "VEC": 2}]
#: The bitonic sort's: REG_STAGES refused (its compare-exchange's direction reads the item).
BITONIC_KNOBS = ("BLOCK_THREADS", "ROWS_PER_BLOCK", "VEC", "MIN_BLOCKS_PER_SM")

#: The same pattern by another hand: a bitonic sort of each 1024-key row, 512 threads a row
#: in shared memory (one compare-exchange a thread a stage), the thread an ``unsigned``
#: alias declared before the row guard, the guard a block around every barrier, the stages
#: two ``for`` loops with shifts, the pair's low index by masks.
BITONIC = """#define N_KEYS 1024
#define HALF (N_KEYS / 2)

extern "C" __global__ void bitonic_rows(float* __restrict__ y, const float* __restrict__ x,
                                        int rows) {
  __shared__ float keys[N_KEYS];
  unsigned tid = threadIdx.x;
  if (blockIdx.x < rows) {
    const float* in = x + (size_t)blockIdx.x * N_KEYS;
    keys[tid] = in[tid];
    keys[tid + HALF] = in[tid + HALF];
    __syncthreads();
    for (int k = 2; k <= N_KEYS; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        unsigned i = ((tid & ~(unsigned)(j - 1)) << 1) | (tid & (unsigned)(j - 1));
        bool up = (i & (unsigned)k) == 0;
        float a = keys[i], b = keys[i + j];
        if ((a > b) == up) {
          keys[i] = b;
          keys[i + j] = a;
        }
        __syncthreads();
      }
    }
    float* out = y + (size_t)blockIdx.x * N_KEYS;
    out[tid] = keys[tid];
    out[tid + HALF] = keys[tid + HALF];
  }
}
"""

#: The transform by a third hand: the stride's log the loop counter of a ``for`` (``h``
#: declared in the body from it), an ``unsigned`` thread, the pair by shifts and masks, the
#: row's offset inline, ``#define`` sizes.
FWHT = """#define N 1024
#define LOG_N 10

extern "C" __global__ void fwht_rows(float* __restrict__ y, const float* __restrict__ x,
                                     int rows) {
  __shared__ float s[N];
  const int row = blockIdx.x;
  if (row >= rows) return;
  const unsigned i = threadIdx.x;
  s[i] = x[(size_t)row * N + i];
  s[i + N / 2] = x[(size_t)row * N + i + N / 2];
  __syncthreads();
  for (int st = 0; st < LOG_N; ++st) {
    const int h = 1 << st;
    const unsigned p = ((i >> st) << (st + 1)) | (i & (unsigned)(h - 1));
    const unsigned q = p | (unsigned)h;
    float u = s[p], v = s[q];
    s[p] = u + v;
    s[q] = u - v;
    __syncthreads();
  }
  y[(size_t)row * N + i] = s[i] * 0.03125f;
  y[(size_t)row * N + i + N / 2] = s[i + N / 2] * 0.03125f;
}
"""


BITONIC_REFERENCE = '''"""numpy reference for bitonic_rows: each row sorted ascending."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"x": rng.uniform(-1.0, 1.0, size=(shape["rows"], 1024)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    return {"y": np.sort(np.asarray(inputs["x"]).reshape(shape["rows"], 1024), axis=1)}
'''


def _lift(source: str, entry: str = "bitonic_rows") -> Any:
    return lift_kernel(source, entry=entry, grid=["rows"], block=["512"],
                       scalars={"rows": "rows"})


def _notes(lifted: Any, transform: str) -> list[str]:
    return [n for n in lifted.notes if n.startswith(transform + ":")]


def test_wht_lifts_threads_and_rows_per_block() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    lifted = result.lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, result.notes
    threads = lifted.params[0].spec
    assert threads["values"] == [32, 64, 128, 256, 512] and threads["default"] == 512
    assert lifted.grid == ("ceil_div(rows, ROWS_PER_BLOCK)",)
    assert lifted.block == ("BLOCK_THREADS", "ROWS_PER_BLOCK")
    assert "BLOCK_THREADS * ROWS_PER_BLOCK <= 1024" in lifted.constraints
    assert "4096 * ROWS_PER_BLOCK <= 49152" in lifted.constraints
    source = lifted.source
    assert "__shared__ float buf[ROWS_PER_BLOCK][ROW];" in source
    # the row guard is the per-row flag every phase's loop tests; no thread returns
    assert "return" not in source.split("wb_live", 1)[1]
    # the butterflies: a block-stride loop over the 512 items, t recomputed from the item
    assert source.count("if (wb_live && (512 % BLOCK_THREADS == 0 || wb_t < 512))") == 1
    # and each register stage's (h = 1 .. 16); a shuffle stage computes no index
    assert source.count("const int t = wb_t;") == 1 + 5
    assert "const int t = threadIdx.x;" not in source
    # REG_STAGES: thread 0's items of the leading stages on the thread's own elements,
    # h a constant a stage; as many stages as keep every pair in one thread's chunk
    assert "constexpr int wb_lead = (SHFL ? (BLOCK_THREADS == 32 ? 10 : BLOCK_THREADS == 64 " \
        "? 9 : BLOCK_THREADS == 128 ? 8 : BLOCK_THREADS == 256 ? 7 : 6) : (BLOCK_THREADS == " \
        "32 ? 5 : BLOCK_THREADS == 64 ? 4 : BLOCK_THREADS == 128 ? 3 : BLOCK_THREADS == 256 " \
        "? 2 : 1));" in source
    assert "if (4 < wb_lead) {\n      if ((wb_in_regs >> 4) & 1u) {\n      const int h = 16;" \
        in source
    assert source.count("wb_r[lo + h] = a - b;") == 5
    # SHFL: the stages whose pairs are one element of two lanes (h / V < 32) exchange it;
    # both lanes compute the pair, each keeping its own
    assert "if (5 < wb_lead) {\n      constexpr int wb_d = (BLOCK_THREADS == 32 ? 1 : " \
        "BLOCK_THREADS == 64 ? 2 : BLOCK_THREADS == 128 ? 4 : BLOCK_THREADS == 256 ? 8 : 16);" \
        in source
    assert "const float a = wb_lo;" in source and "int lo" not in source.split("wb_up")[1] \
        .split("while (h < ROW)")[0]  # the pair's index locals left out of the shuffles
    assert source.count("wb_hi = a - b;") == 9  # h = 2 .. 512 (h = 1 in registers at any V)
    assert "SHFL <= REG_STAGES" in lifted.constraints
    # the loop goes on from the first stage through shared memory
    assert "  __syncthreads();\n  h = (SHFL ? (BLOCK_THREADS == 32 ? 1024 : BLOCK_THREADS == " \
        "64 ? 512 : BLOCK_THREADS == 128 ? 256 : BLOCK_THREADS == 256 ? 128 : 64) : " \
        "(BLOCK_THREADS == 32 ? 32 : BLOCK_THREADS == 64 ? 16 : BLOCK_THREADS == 128 ? 8 : " \
        "BLOCK_THREADS == 256 ? 4 : 2));\n#endif\n  while (h < ROW)" in source
    # the load and the store copy the row, VEC consecutive floats a thread an access
    assert "for (int wb_e = threadIdx.x * VEC; wb_live && wb_e < 1024; " \
        "wb_e += BLOCK_THREADS * VEC) {" in source
    assert "*reinterpret_cast<const WbVec<float, VEC>*>(src + wb_e);" in source
    assert "wb_v.v[wb_j] = buf[threadIdx.y][wb_at] * scale;" in source
    assert any("3 phases between barriers" in n for n in _notes(lifted, "BLOCK_THREADS"))
    assert any("2 phases move a row of 1024 elements" in n for n in _notes(lifted, "VEC"))


def test_a_bitonic_sort_guarded_by_a_block_lifts_the_same_knobs() -> None:
    lifted = _lift(BITONIC)
    assert tuple(p.name for p in lifted.params) == BITONIC_KNOBS, lifted.notes
    source = lifted.source
    # the guard block's header is the flag; its braces stay as a plain block
    assert "const bool wb_live = (blockIdx.x * ROWS_PER_BLOCK + threadIdx.y) < rows;\n  {" \
        in source
    assert "if (blockIdx.x" not in source
    assert source.count("unsigned tid = wb_t;") == 1  # the stages; the copies per VEC
    assert "*reinterpret_cast<WbVec<float, VEC>*>(out + wb_e) = wb_v;" in source
    assert "__shared__ float keys[ROWS_PER_BLOCK][N_KEYS];" in source


@pytest.mark.parametrize(("old", "new", "why"), [
    # a key read before the barrier and stored after it: the value lives across the barrier
    ("        if ((a > b) == up) {", "        __syncthreads();\n        if ((a > b) == up) {",
     "`a` (line 17), a per-thread value, is read at line 19 past a barrier"),
    # lanes of a warp exchange keys without a barrier
    ("bool up = (i & (unsigned)k) == 0;",
     "bool up = __shfl_xor_sync(0xffffffffu, (int)((i & (unsigned)k) == 0), 1);",
     "threads talk outside the barriers"),
    # a barrier only some threads reach
    ("        __syncthreads();\n      }\n    }",
     "        if (tid < 256) __syncthreads();\n      }\n    }",
     "a barrier under `if (tid < 256) __syncthreads();`"),
    # a thread's array declared among the uniform locals: its elements would be shared by
    # the thread's items
    ("    for (int k = 2; k <= N_KEYS; k <<= 1) {",
     "    int k = 2, seen[2];\n    for (; k <= N_KEYS; k <<= 1) {\n      seen[tid & 1u] = k;",
     "`seen` (line 13), a per-thread value, is read at line 15"),
    # the stage's stride changed through a pointer the analysis does not follow
    ("        bool up = (i & (unsigned)k) == 0;",
     "        int* jp = &j;\n        bool up = (i & (unsigned)k) == 0;",
     "reached through a reference or its address"),
], ids=["value-across-barrier", "warp-shuffle", "barrier-under-thread-branch",
        "array-among-uniforms", "address-of-a-uniform"])
def test_what_is_not_the_same_program_is_refused_with_its_line(old: str, new: str,
                                                              why: str) -> None:
    assert old in BITONIC
    lifted = _lift(BITONIC.replace(old, new))
    assert "BLOCK_THREADS" not in {p.name for p in lifted.params}
    assert any(why in n for n in _notes(lifted, "BLOCK_THREADS")), lifted.notes


def test_a_barrier_loop_counted_by_the_row_keeps_one_row_a_block() -> None:
    # rows of one block would leave the stage loop after different counts of barriers
    source = BITONIC.replace("for (int k = 2; k <= N_KEYS; k <<= 1)",
                             "for (int k = 2; k <= N_KEYS >> (blockIdx.x & 1); k <<= 1)")
    lifted = _lift(source)
    assert tuple(p.name for p in lifted.params) == ("BLOCK_THREADS", "VEC", "MIN_BLOCKS_PER_SM")
    assert any("runs as many times as its row says" in n
               for n in _notes(lifted, "ROWS_PER_BLOCK")), lifted.notes
    # one row a block: the guard stays as written
    assert "if (blockIdx.x < rows) {" in lifted.source


@pytest.mark.parametrize(("old", "new", "why"), [
    # the load moves each key to its neighbour's place: no longer a row copy
    ("keys[tid] = in[tid];", "keys[tid] = in[tid ^ 1u];", "are not the same element"),
    # a row whose length is an argument: its start's alignment is not known
    ("const float* in = x + (size_t)blockIdx.x * N_KEYS;",
     "const float* in = x + (size_t)blockIdx.x * (unsigned)rows;", "the alignment of in"),
], ids=["permuted-load", "row-offset-by-argument"])
def test_a_load_that_is_no_aligned_row_copy_keeps_its_items(old: str, new: str,
                                                           why: str) -> None:
    assert old in BITONIC
    # the store stays a row copy: VEC still lifts for it, the load keeps its item loop
    lifted = _lift(BITONIC.replace(old, new))
    assert "VEC" in {p.name for p in lifted.params}, lifted.notes
    assert lifted.source.count("unsigned tid = wb_t;") == 2
    only_load = BITONIC.replace(old, new).replace("out[tid] = keys[tid];",
                                                  "out[tid] = keys[tid ^ 1u];")
    refused = _lift(only_load)
    assert "VEC" not in {p.name for p in refused.params}
    assert any(why in n for n in _notes(refused, "VEC")), refused.notes


def test_a_stage_loop_by_its_log_stride_lifts_the_register_stages() -> None:
    lifted = _lift(FWHT, "fwht_rows")
    assert tuple(p.name for p in lifted.params) == (
        "BLOCK_THREADS", "ROWS_PER_BLOCK", "REG_STAGES", "SHFL", "MIN_BLOCKS_PER_SM"), \
        lifted.notes
    source = lifted.source
    # each stage's counter and stride constants; thread 0's pair by the same shifts
    assert "if (4 < wb_lead) {\n      if ((wb_in_regs >> 4) & 1u) {\n      const int st = 4; " \
        "const int h = 16;" in source
    assert source.count("wb_r[q] = u - v;") == 5
    # the loop resumes at the first stage through shared memory: its counter's start
    assert "for (int st = (REG_STAGES ? (SHFL ? (BLOCK_THREADS == 32 ? 10 : BLOCK_THREADS " \
        "== 64 ? 9 : BLOCK_THREADS == 128 ? 8 : BLOCK_THREADS == 256 ? 7 : 6) : (" \
        "BLOCK_THREADS == 32 ? 5 : BLOCK_THREADS == 64 ? 4 : BLOCK_THREADS == 128 ? 3 : " \
        "BLOCK_THREADS == 256 ? 2 : 1)) : (0)); st < LOG_N; ++st)" in source


@pytest.mark.parametrize(("source", "entry", "old", "new", "why"), [
    # the compare-exchange's direction reads the item's place: thread 0's items would sort
    # every chunk the first chunk's way
    (BITONIC, "bitonic_rows", "", "", "`up` at line 18 carries the item's place into what "
     "the stage computes"),
    # a butterfly reading its neighbour pair's element: the items overlap
    (FWHT, "fwht_rows", "float u = s[p], v = s[q];", "float u = s[p], v = s[q ^ 2u];",
     "items 0 and 1 both touch element 1 at {'st': 0, 'h': 1} (`s[q ^ 2u]`, line 17)"),
    # a stage reading a table in global memory
    (FWHT, "fwht_rows", "s[q] = u - v;", "s[q] = u - v * x[p];",
     "a stage reads memory beyond its shared row"),
    # a stride doubling by a value the loop cannot know
    (FWHT, "fwht_rows", "for (int st = 0; st < LOG_N; ++st)",
     "for (int st = 0; st < (LOG_N & rows); ++st)", "does not evaluate"),
], ids=["bitonic-direction", "overlapping-items", "global-table", "runtime-stage-count"])
def test_register_stages_are_refused_with_the_line(source: str, entry: str, old: str,
                                                  new: str, why: str) -> None:
    assert old in source
    lifted = _lift(source.replace(old, new), entry)
    assert "REG_STAGES" not in {p.name for p in lifted.params}
    assert any(why in n for n in _notes(lifted, "REG_STAGES")), lifted.notes


def _checked(template: Any, env: dict[str, Any]) -> list[dict[str, Any]]:
    """The default, the mixes (over the default; a knob the lift lacks dropped) and every
    all-ends config, each once."""
    space = template.space(env)
    default = dict(template.default_config())
    mixes = [{k: v for k, v in m.items() if k in template.param_names} for m in MIXES]
    out: list[dict[str, Any]] = []
    for config in [default, *({**default, **m} for m in mixes), *end_configs(template, env)]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return out


def _same_outputs(kf: KernelFolder, source: str, tmp_path: Path,
                  flags: tuple[str, ...]) -> int:
    """Runs ``kf``'s lift at :func:`_checked`'s configs and the kernel ``source`` as written
    on the host; asserts every output bit for bit; the configs run."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(template, env)
    inputs = _inputs(kf)
    host = held_back_unseen11.host_source
    want = _run(kf, host(source), kf.baseline.launch_for({}, env), inputs,
                tmp_path / "plain", flags)
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        for name, values in want.items():
            assert (got[name] == values).all(), f"{kf.name} at {config}: {name} differs"
    return len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_wht_lift_computes_as_written_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    ran = _same_outputs(kf, kf.baseline.render({}, "fp32").source, tmp_path, host_flags)
    # of the 64 all-ends configs 30 are valid (512 x 8 rows passes 1024 threads, 32 x 1 at 4
    # blocks an SM caps nothing 1 does not, SHFL 1 needs REG_STAGES 1); 512 x 1 x REG 0 x
    # SHFL 0 x VEC 1 x 0 is the default, 32 x 8 x REG 1 x SHFL 0 x VEC 1 x 4 a mix
    assert ran == 1 + len(MIXES) + 28


def _spelling_folder(root: Path, name: str, source: str, reference: str) -> KernelFolder:
    """wht1024_rows's folder (shapes, arguments, launch) with ``source`` as its kernel
    ``name`` and ``reference``."""
    folder = root / name
    folder.mkdir(parents=True)
    toml = (FOLDER / "kernel.toml").read_text().replace("wht1024_rows", name)
    (folder / "kernel.toml").write_text(toml)
    (folder / "reference.py").write_text(reference)
    for file in ("baseline.cu", f"{name}.cu"):
        (folder / file).write_text(source)
    return load_kernel_folder(folder)


def _bitonic_folder(root: Path) -> KernelFolder:
    return _spelling_folder(root, "bitonic_rows", BITONIC, BITONIC_REFERENCE)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_bitonic_lift_sorts_as_written_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _bitonic_folder(tmp_path / "spelling")
    ran = _same_outputs(kf, BITONIC, tmp_path / "runs", host_flags)
    # the wht's space without REG_STAGES and SHFL: the mixes' three 256 x 1 x VEC 4 are one;
    # of the 16 all-ends configs 10 are valid, the default and 32 x 8 x VEC 1 x 4 among them
    assert ran == 1 + (len(MIXES) - 2) + 8
    want = kf.load_reference().reference(_inputs(kf), kf.shape_values(kf.check_shape),
                                         "fp32")["y"]
    got = _run(kf, held_back_unseen11.host_source(BITONIC),
               kf.baseline.launch_for({}, kf.env(kf.check_shape, "fp32")), _inputs(kf),
               tmp_path / "as_written", host_flags)["y"]
    assert (got == want).all()  # the spelling sorts (the lift is checked against it)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_log_stride_lift_computes_as_written_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _spelling_folder(tmp_path / "spelling", "fwht_rows", FWHT,
                          (FOLDER / "reference.py").read_text())
    ran = _same_outputs(kf, FWHT, tmp_path / "runs", host_flags)
    # the default and 7 mixes (no VEC: the three 256 x 1 differ by REG_STAGES and SHFL); of
    # the 32 all-ends configs 15 are valid, the default, 512 x 1 x REG 1 x SHFL 1 x 0 and
    # 32 x 8 x REG 1 x SHFL 0 x 4 among them
    assert ran == 1 + 7 + 12
    want = kf.load_reference().reference(_inputs(kf), kf.shape_values(kf.check_shape),
                                         "fp32")["y"]
    got = _run(kf, held_back_unseen11.host_source(FWHT),
               kf.baseline.launch_for({}, kf.env(kf.check_shape, "fp32")), _inputs(kf),
               tmp_path / "as_written", host_flags)["y"]
    assert abs(got - want).max() < 1e-5  # it transforms (the lift is checked against it)
