"""TILE (workbench/templater/walk_rounds.py, issue 28): a walk every thread of the block reads
at the same index, staged in shared memory a round at a time. Held-back set 19's
coulomb_pot_tiles reads ``charges[j]`` (float4) in every thread straight from global memory;
its expert stages the charges in rounds of TILE (H200: 186.5 us at TILE 512 against 752.8 at
TILE 0, the lift without TILE at the expert's pick 751.9).
Pure: the folder's lift and three other spellings lift TILE (default 0) beside
ITEMS_PER_THREAD and UNROLL, the barriers in the round loop and the walk inside the round
split on the items' live flags (never a barrier under the split): raw float pointers read at
``4 * j + c``, ``++j``, the work under ``if (t < n) { .. }``; a ``while`` with its own
counter after a ``return`` guard, a local float4 pointer and a helper function computing the
term; the author's ``#pragma unroll 4`` on the walk (after the rounds' header). With STAGE
the tile joins its shared memory limit. Refusals with the line: a walked pointer written, an
index other than ``C * j + c``, two strides, a fill past what the walk reads, a pointer that
differs by thread, a bound assigned, a counter not an int, items that wrap the work (a
return before the index, an impure call); a write or a barrier in the walk and shared memory of the kernel's own stage
nothing (ilp refuses the items first). Host (g++), bit for bit against the kernel as written
at n = 300 probes over m = 200 charges (a multiple of no block, no block's items and no
TILE; below TILE 256 to 1024): the folder at the default and a mix, each other spelling at a
mix; under WORKBENCH_FULL_MATRIX=1 every all-ends config and every mix of each.
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
#: Two probes a thread over 96 threads, rounds of 128 (200 charges: a full round and a
#: partial one; 300 probes over 192 a block: the second block partly), unrolled by 2; the
#: expert's H200 pick (THREADS 128, ITEMS 1, TILE 512, UNROLL 4) spelled in the lift's knobs
#: (one round, partial); four items over 64 threads in rounds of 1024 unrolled by 8 (m <
#: TILE); 160 threads, a minimum of 2 blocks, rounds of 256, not unrolled.
MIXES = [{"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 2, "UNROLL": 2, "TILE": 128},
         {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "UNROLL": 4, "TILE": 512},
         {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 8, "TILE": 1024},
         {"BLOCK_THREADS": 160, "ITEMS_PER_THREAD": 1, "UNROLL": 1, "TILE": 256,
          "MIN_BLOCKS_PER_SM": 2}]

#: The same potential by another hand: the raw float pointers read at 4 * j + c, ++j, the
#: work under ``if (t < n) { .. }`` (no return), the distance written out, the softening a
#: literal.
RAW_FLOATS = """extern "C" __global__ void coulomb_pot_tiles(float* out, const float* pr,
    const float* q, int n, int m) {
  int t = threadIdx.x + blockIdx.x * blockDim.x;
  if (t < n) {
    float x = pr[3 * t], y = pr[3 * t + 1], z = pr[3 * t + 2];
    float acc = 0.0f;
    for (int j = 0; j < m; ++j) {
      float dx = x - q[4 * j], dy = y - q[4 * j + 1], dz = z - q[j * 4 + 2];
      acc += q[4 * j + 3] * rsqrtf(dx * dx + dy * dy + dz * dz + 0.01f);
    }
    out[t] = acc;
  }
}
"""

#: And by a third: a helper computing the term, a float4 pointer of the kernel's own after
#: the guard's return, a ``while`` with an explicit counter.
HELPER_WHILE = """__device__ float potential_term(float4 c, float x, float y, float z) {
  const float dx = x - c.x;
  const float dy = y - c.y;
  const float dz = z - c.z;
  return c.w * rsqrtf(dx * dx + dy * dy + dz * dz + 0.01f);
}

extern "C" __global__ void coulomb_pot_tiles(float* out, const float* probes,
                                             const float* charges, int n, int m) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float4* c4 = reinterpret_cast<const float4*>(charges);
  const float x = probes[3 * i], y = probes[3 * i + 1], z = probes[3 * i + 2];
  float sum = 0.0f;
  int j = 0;
  while (j < m) {
    sum += potential_term(c4[j], x, y, z);
    j++;
  }
  out[i] = sum;
}
"""


#: The folder's kernel with the author's unroll on the walk (its factor becomes UNROLL's
#: default): the rounds go before the pragma, which stays on the walk.
PRAGMA = load_kernel_folder(FOLDER).baseline.source.replace(
    "  for (int j = 0; j < m; j++)", "  #pragma unroll 4\n  for (int j = 0; j < m; j++)")


def _lift(source: str, entry: str = "k") -> tuple[dict[str, dict], list[str], str,
                                                   tuple[str, ...]]:
    lifted = lift_kernel(source, entry=entry, grid=["ceil_div(n, 128)"], block=["128"],
                         smem_bytes="0", scalars={"n": "n", "m": "m"})
    tile = [str(f) for f in lifted.notes if f.startswith("TILE")]
    return ({p.name: dict(p.spec) for p in lifted.params}, tile, lifted.source,
            lifted.constraints)


def _kernel(body: str, before: str = "") -> str:
    return ("extern \"C\" __global__ void k(float* out, float* q, int n, int m) {\n"
            f"{before}  int t = blockIdx.x * blockDim.x + threadIdx.x;\n  if (t >= n) return;\n"
            "  float x = out[t];\n  float acc = 0.0f;\n"
            f"  for (int j = 0; j < m; ++j) {{\n{body}\n  }}\n  out[t] = acc;\n}}\n")


def _barriers_outside_the_split(text: str) -> bool:
    """The round has two barriers, both before the walk's all-live split where it has one."""
    rounds = text[text.index("for (int wb_base"):text.index("}  // the round")]
    split = rounds.find("wb_all_live")
    return rounds.count("__syncthreads") == 2 and \
        (split < 0 or rounds.rindex("__syncthreads") < split)


def test_the_folder_and_two_spellings_lift_the_rounds() -> None:
    folder = load_kernel_folder(FOLDER).baseline.source
    for source in (folder, RAW_FLOATS, HELPER_WHILE):
        params, notes, text, constraints = _lift(source, "coulomb_pot_tiles")
        assert params["TILE"]["default"] == 0, notes
        assert {"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL"} <= set(params)
        assert notes[0].startswith("TILE: applied"), notes
        assert "for (int wb_base = 0; wb_base < (TILE > 0 ? m : 1); wb_base += wb_tile)" in text
        assert _barriers_outside_the_split(text), text
        # the items' live tests split the walk inside the round where a call is not shown
        # safe for an item that ended (the folder's Vec3 operators on references); the raw
        # floats' arithmetic and the helper of values (pure since 60c7761) run unguarded
        assert ("wb_all_live" in text) == (source is folder), text
        assert "TILE * (16 * 1) <= 49152" in constraints or \
            "TILE * (4 * 4) <= 49152" in constraints, constraints
    params, notes, text, _c = _lift(PRAGMA, "coulomb_pot_tiles")
    assert notes[0].startswith("TILE: applied") and params["UNROLL"]["default"] == 4, notes
    assert text.index("the round is staged") < text.index("#pragma unroll (wb_unroll)\n\n"
                                                          "  for (int j = wb_base;"), text
    # the spellings' probes are staged too (STAGE): the tile's bytes join their limit
    _params, _notes, _text, constraints = _lift(RAW_FLOATS, "coulomb_pot_tiles")
    assert "TILE == 0 or STAGE == 0 or ((BLOCK_THREADS * ITEMS_PER_THREAD) * (12)) + " \
        "TILE * (4 * 4) <= 49152" in constraints, constraints


def test_refusals_name_the_line_and_reason() -> None:
    work = " * rsqrtf(x * x + 1.0f);"
    params, notes, _text, _c = _lift(_kernel("acc += q[j]" + work))
    assert "TILE" in params and notes[0].startswith("TILE: applied"), notes
    refused = {
        "acc += q[j + 1]": "`q[j + 1]` reads the walk at an index other than `j` (C * j + c) "
                           "(line 7)",
        "acc += q[2 * j]": "the walk reads `q` at `2 * j + c` but never at c = 1 (the round's "
                           "fill would read past what the walk reads) (line 7)",
        "acc += q[j] + x * q[2 * j + 1]": "`q` is read at two strides of `j` (line 7)",
    }
    for body, reason in refused.items():
        params, notes, _text, _c = _lift(_kernel(body + work))
        assert "TILE" not in params and notes == [f"TILE: not applied: {reason}"], notes
    written = _kernel("acc += q[j]" + work).replace("float x = out[t];",
                                                    "float x = out[t];\n  q[t] = 0.0f;")
    params, notes, _text, _c = _lift(written)
    assert notes == ["TILE: not applied: the kernel writes through or to `q` (line 5)"], notes
    by_thread = _kernel("acc += row[j]" + work).replace(
        "float x = out[t];", "float x = out[t];\n  const float* row = q + t;")
    params, notes, _text, _c = _lift(by_thread)
    assert notes == ["TILE: not applied: `row` differs by thread (`q + t`): threads read "
                     "different elements at one index (line 8)"], notes
    # a return before the index, a call ilp cannot prove pure: the items wrap the work (an
    # ended item's `continue` skips the rest), so no barrier may sit in it
    early = _kernel("acc += q[j]" + work, before="  if (threadIdx.x == 7) return;\n")
    params, notes, _text, _c = _lift(early)
    assert notes == ["TILE: not applied: the items run the work one after another (a wrap), "
                     "where an item that ended skips the rest: it would skip the rounds' "
                     "barriers (line 7)"], notes
    impure = "__device__ int hits;\n__device__ float seen(float v) {\n  hits = 1;\n  " \
        "return v;\n}\n" + _kernel("acc += seen(q[j])" + work)
    params, notes, _text, _c = _lift(impure)
    assert notes == ["TILE: not applied: the items run the work one after another (a wrap), "
                     "where an item that ended skips the rest: it would skip the rounds' "
                     "barriers (line 11)"], notes
    params, notes, _text, _c = _lift(_kernel("acc += q[j]" + work + "\n    m = m - 1;"))
    assert notes == ["TILE: not applied: the walk's bound `m` is assigned (line 8)"], notes
    wide = _kernel("acc += q[j]" + work).replace("int j = 0", "size_t j = 0")
    params, notes, _text, _c = _lift(wide)
    assert notes == ["TILE: not applied: the walk counts in `int and size_t`, not `int` (the "
                     "rounds count in int) (line 6)"], notes
    # a write or a barrier in the walk, shared memory of the kernel's own: nothing staged
    # (ilp or the walk's own check refuses)
    for source in (_kernel("q[j] = x;\n    acc += q[j]" + work),
                   _kernel("acc += q[j]" + work + "\n    __syncthreads();"),
                   _kernel("acc += q[j] * s[0]" + work).replace(
                       "float x = out[t];", "float x = out[t];\n  __shared__ float s[1];")):
        params, notes, _text, _c = _lift(source)
        assert "TILE" not in params, (source, notes)


def _host(kf: KernelFolder, work: Path, flags: tuple[str, ...], default: bool) -> int:
    """The lift of ``kf`` on the host against the kernel as written: the default (where
    ``default``) and the first mix; every all-ends config and mix under FULL_MATRIX."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, MIXES)
    if not FULL_MATRIX:
        configs = configs[:2] if default else configs[1:2]
    return same_as_written(kf, template, configs, held_back_unseen19.host_source, work, flags)


def test_host_the_folder_bit_for_bit(tmp_path: Path,
                                     host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _host(load_kernel_folder(FOLDER), tmp_path / "folder", host_flags, True) >= 2


def test_host_three_spellings_bit_for_bit(tmp_path: Path,
                                        host_flags: tuple[str, ...]) -> None:  # noqa: F811
    for name, source in (("raw", RAW_FLOATS), ("while", HELPER_WHILE), ("pragma", PRAGMA)):
        kf = respelled(FOLDER, tmp_path / f"spelled_{name}", source)
        assert _host(kf, tmp_path / name, host_flags, False) >= 1
