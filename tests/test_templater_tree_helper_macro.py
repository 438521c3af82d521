"""A tree that halves the block inside a ``__device__`` helper, the block size a file-scope
macro the helper reads (``#define BLOCK 256`` .. ``for (int half = BLOCK / 2; ..)``), as set
12's softmax_lenmask writes it: the block-size lift offered every multiple of 32, and at 96
threads the tree never adds slot 2 of its 3-step. On the H100 (2026-11-28) the gate found
that and repaired the space with 26 one-value exclusions (``BLOCK_THREADS != 96``, ..);
reduce_tree now follows a helper that reads the size's name, so only powers of two are
offered. Beside it (this session's VEC at a bound of no known size), the kernel's row loops
to ``row.len`` lift VEC and ITEMS_PER_THREAD; its running maximum is exact in any order (no
note of a floating sum), its sum within the folder's tolerance on the host."""

from __future__ import annotations

from pathlib import Path

import held_back_unseen12
from held_back_harness import same_as_written
from helpers_templater import host_configs
from test_corpus_unseen3 import host_flags  # noqa: F401  (the session fixture)

from workbench.templater import lift_kernel
from workbench.templater.offline import offline_template

HELPER_TREE = """
#define BLOCK 256
__device__ float block_sum(float v, float* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int half = BLOCK / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) buf[threadIdx.x] += buf[threadIdx.x + half];
    __syncthreads();
  }
  return buf[0];
}
extern "C" __global__ void k(float* out, const float* x, int n) {
  __shared__ float buf[BLOCK];
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += BLOCK) s += x[blockIdx.x * n + i];
  s = block_sum(s, buf);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""

#: the helper reads BLOCK without halving it: any multiple of 32 stays
HELPER_NO_TREE = HELPER_TREE.replace(
    "for (int half = BLOCK / 2; half > 0; half >>= 1) {\n"
    "    if (threadIdx.x < half) buf[threadIdx.x] += buf[threadIdx.x + half];\n"
    "    __syncthreads();\n  }\n  return buf[0];",
    "float t = 0.0f;\n  if (threadIdx.x == 0) for (int j = 0; j < BLOCK; ++j) t += buf[j];\n"
    "  return t;")


def _block_kind(source: str) -> tuple[str, list[str]]:
    lifted = lift_kernel(source, entry="k", grid=["rows"], block=["256"],
                         scalars={"n": "n", "rows": "rows"})
    spec = {p.name: dict(p.spec) for p in lifted.params}
    return spec["BLOCK_THREADS"]["kind"], list(lifted.notes)


def test_a_tree_in_a_helper_reading_the_block_macro_keeps_powers_of_two() -> None:
    kind, notes = _block_kind(HELPER_TREE)
    assert kind == "pow2"
    assert any("the tree reduction at line 6 halves the block" in n for n in notes), notes


def test_a_helper_reading_the_macro_without_a_tree_keeps_multiples_of_32() -> None:
    assert HELPER_NO_TREE != HELPER_TREE
    kind, notes = _block_kind(HELPER_NO_TREE)
    assert kind != "pow2", notes


def test_softmax_lenmask_lifts_pow2_blocks_and_vectors_its_row_loops(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    held = held_back_unseen12
    kf = held.SET.folder("softmax_lenmask")
    result = offline_template(kf)
    spec = {p.name: dict(p.spec) for p in result.lifted.params}
    assert spec["BLOCK_THREADS"]["kind"] == "pow2"
    assert {"VEC", "ITEMS_PER_THREAD"} <= set(spec)
    vec_notes = [n for n in result.lifted.notes if n.startswith("VEC: applied")]
    assert any("floating sum sum " in n for n in vec_notes), vec_notes
    assert not any("floating sum m " in n for n in vec_notes), vec_notes  # a maximum
    template, env = result.template, kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, [
        {"BLOCK_THREADS": 64, "VEC": 4, "ITEMS_PER_THREAD": 2},
        {"BLOCK_THREADS": 128, "VEC": 2, "ITEMS_PER_THREAD": 4}])[:3]
    assert same_as_written(kf, template, configs, held.SET.host_source, tmp_path, host_flags,
                           within_tolerance=True) == len(configs)
