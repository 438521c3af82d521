"""Block-per-row kernels whose block sum is a tree in a ``__device__`` helper (issue 28).

rmsnorm_f16w (benchmarks/corpus_compute_unseen5, spent) sums a row's squares with
``block_sum<ROW_THREADS>(ss, partial)``: a shared-memory tree in a template helper, halving
from the block size. The lift offered every multiple of 32 threads and the gate found 96,
160, ... wrong; the block lift now follows calls into helpers (:mod:`.reduce_tree`) and
offers powers of two only. Three spellings of the same RMSNorm check each shape of tree the
analysis reads: the block size as a call argument with ``s = s / 2`` in a ``while``, a
recursive template ``fold<W / 2>``, an unrolled ``if (T >= 512)`` ladder; a helper that adds
with a shared atomic instead keeps any multiple of 32.

Each kernel, lifted, runs on the host (every thread a coroutine) at its default, its last
all-ends config and a sampled one, against the kernel as written on the folder's inputs; a
block of 96 threads (outside the space) is shown to go wrong, so the check can fail.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from held_back_unseen5 import host_source
from helpers_templater import end_configs, host_sample
from test_corpus_unseen3 import (
    _assert_same,
    _inputs,
    _run,
    host_flags,  # noqa: F401  (session fixture)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.params import parameter_from_dict
from workbench.core.template import KernelTemplate
from workbench.templater import offline_template
from workbench.templater.offline import TemplaterResult

RMS = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen5" / \
    "rmsnorm_f16w"

#: The same RMSNorm, other spellings (the entry name and arguments of the folder's).
SPELLINGS: dict[str, str] = {
    # blockDim.x read, passed to the helper as its count, a while walk halving with
    # s = s / 2, the shared buffer sized for the largest block, a constexpr epsilon
    "arg_while": r"""
#include <cuda_fp16.h>
constexpr float kEps = 1e-5f;
__device__ float tree_add(float* red, float v, int count) {
  red[threadIdx.x] = v;
  __syncthreads();
  int s = count / 2;
  while (s > 0) {
    if (threadIdx.x < s) red[threadIdx.x] = red[threadIdx.x] + red[threadIdx.x + s];
    __syncthreads();
    s = s / 2;
  }
  return red[0];
}
extern "C" __global__ void rmsnorm_f16w(__half* y, const __half* x, const __half* w,
                                        int rows, int cols) {
  __shared__ float red[1024];
  const size_t base = (size_t)blockIdx.x * cols;
  float acc = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float a = __half2float(x[base + j]);
    acc = acc + a * a;
  }
  const float scale = rsqrtf(tree_add(red, acc, blockDim.x) / cols + kEps);
  for (int j = threadIdx.x; j < cols; j += blockDim.x)
    y[base + j] = __float2half(__half2float(x[base + j]) * scale * __half2float(w[j]));
}
""",
    # #ifndef default, a recursive template tree (if constexpr ends it), the sum read back
    # by every thread after a barrier
    "recursive_template": r"""
#include <cuda_fp16.h>
#ifndef NT
#define NT 256
#endif
template <int W>
__device__ void fold(float* buf) {
  if constexpr (W > 1) {
    if (threadIdx.x < W / 2) buf[threadIdx.x] += buf[threadIdx.x + W / 2];
    __syncthreads();
    fold<W / 2>(buf);
  }
}
extern "C" __global__ void rmsnorm_f16w(__half* y, const __half* x, const __half* w,
                                        int rows, int cols) {
  __shared__ float sq[NT];
  const __half* in = x + (size_t)blockIdx.x * cols;
  __half* out = y + (size_t)blockIdx.x * cols;
  float mine = 0.0f;
  for (int c = threadIdx.x; c < cols; c += NT) mine += __half2float(in[c]) * __half2float(in[c]);
  sq[threadIdx.x] = mine;
  __syncthreads();
  fold<NT>(sq);
  const float k = rsqrtf(sq[0] / cols + 1e-5f);
  for (int c = threadIdx.x; c < cols; c += NT)
    out[c] = __float2half(__half2float(in[c]) * k * __half2float(w[c]));
}
""",
    # a macro block, an unrolled ladder over a template size, the thread index in a local
    "ladder": r"""
#include <cuda_fp16.h>
#define THREADS 128
template <int T>
__device__ float ladder_sum(float* s, float v) {
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  if (T >= 1024) { if (t < 512) s[t] += s[t + 512]; __syncthreads(); }
  if (T >= 512) { if (t < 256) s[t] += s[t + 256]; __syncthreads(); }
  if (T >= 256) { if (t < 128) s[t] += s[t + 128]; __syncthreads(); }
  if (T >= 128) { if (t < 64) s[t] += s[t + 64]; __syncthreads(); }
  if (T >= 64) { if (t < 32) s[t] += s[t + 32]; __syncthreads(); }
  if (t == 0) for (int i = 1; i < 32 && i < T; ++i) s[0] += s[i];
  __syncthreads();
  return s[0];
}
extern "C" __global__ void rmsnorm_f16w(__half* y, const __half* x, const __half* w,
                                        int rows, int cols) {
  __shared__ float part[THREADS];
  const int r = blockIdx.x;
  float q = 0.0f;
  for (int c = threadIdx.x; c < cols; c += THREADS) {
    float v = __half2float(x[r * cols + c]);
    q = fmaf(v, v, q);
  }
  const float inv = rsqrtf(ladder_sum<THREADS>(part, q) / cols + 1e-5f);
  for (int c = threadIdx.x; c < cols; c += THREADS)
    y[r * cols + c] = __float2half(__half2float(x[r * cols + c]) * inv * __half2float(w[c]));
}
""",
}

#: A helper that adds with a shared atomic: no tree, any multiple of 32 stays offered.
ATOMIC_HELPER = r"""
#include <cuda_fp16.h>
#define TB 128
__device__ float atomic_sum(float* cell, float v) {
  atomicAdd(cell, v);
  __syncthreads();
  return *cell;
}
extern "C" __global__ void rmsnorm_f16w(__half* y, const __half* x, const __half* w,
                                        int rows, int cols) {
  __shared__ float total;
  if (threadIdx.x == 0) total = 0.0f;
  __syncthreads();
  float q = 0.0f;
  for (int c = threadIdx.x; c < cols; c += TB) {
    float v = __half2float(x[(size_t)blockIdx.x * cols + c]);
    q += v * v;
  }
  const float inv = rsqrtf(atomic_sum(&total, q) / cols + 1e-5f);
  for (int c = threadIdx.x; c < cols; c += TB)
    y[(size_t)blockIdx.x * cols + c] = __float2half(
        __half2float(x[(size_t)blockIdx.x * cols + c]) * inv * __half2float(w[c]));
}
"""


def _spelled(tmp_path: Path, source: str, block: int) -> KernelFolder:
    """rmsnorm_f16w's folder with ``source`` as its kernel, launched with ``block`` threads."""
    folder = tmp_path / "rmsnorm_f16w"
    shutil.copytree(RMS, folder, ignore=shutil.ignore_patterns("expert"))
    (folder / "baseline.cu").write_text(source)
    toml = folder / "kernel.toml"
    toml.write_text(toml.read_text().replace('block = ["256"]', f'block = ["{block}"]'))
    return load_kernel_folder(folder)


_BLOCKS = {"arg_while": 128, "recursive_template": 256, "ladder": 128}


def _threads(result: TemplaterResult) -> dict[str, Any]:
    return next(dict(p.spec) for p in result.lifted.params if p.name == "BLOCK_THREADS")


def test_the_folder_offers_powers_of_two_naming_the_helpers_tree() -> None:
    result = offline_template(load_kernel_folder(RMS))
    spec = _threads(result)
    assert spec["kind"] == "pow2" and spec["default"] == 256, spec
    # line 18: the for loop of block_sum<N>, the helper the kernel calls at line 36
    assert any("the tree reduction at line 18 halves the block" in n for n in result.notes), \
        result.notes


def test_the_write_loop_is_vectorized_behind_a_run_time_alias_test() -> None:
    """The second loop reads x[c] and w[c] after the barrier, in the loop that writes y[c]:
    not read-all-then-write. With y a few halves past x, a vector store by one thread
    overwrites halves another thread has yet to read, so its vector path runs only where y's
    row and each range it reads are the same elements or disjoint (compared at run time),
    the loop as written otherwise (tests/test_templater_memgap_blockvec.py runs both paths
    on overlapping buffers). The first loop, which only reads, needs no test."""
    result = offline_template(load_kernel_folder(RMS))
    assert any("`y` may alias w, x (not __restrict__): the vector path runs only where" in n
               and n.endswith("(line 37)") for n in result.notes), result.notes
    # the first loop's sum of squares adds each thread's elements in another order (noted)
    assert any(n.startswith("VEC: applied: loop over c vectorized (the floating sum ") and
               n.endswith("(line 32)") for n in result.notes), result.notes
    assert any("VEC: applied: loop over c vectorized (line 37)" in n for n in result.notes)


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_of_the_tree_restricts_the_block(name: str, tmp_path: Path) -> None:
    result = offline_template(_spelled(tmp_path, SPELLINGS[name], _BLOCKS[name]))
    spec = _threads(result)
    assert spec["kind"] == "pow2" and spec["default"] == _BLOCKS[name], (spec, result.notes)
    assert any("halves the block" in n for n in result.notes), result.notes


def test_a_helper_without_a_tree_keeps_multiples_of_32(tmp_path: Path) -> None:
    result = offline_template(_spelled(tmp_path, ATOMIC_HELPER, 128))
    spec = _threads(result)
    assert spec["kind"] == "int" and spec["step"] == 32, spec


_AS_WRITTEN: dict[str, dict[str, np.ndarray]] = {}


def _as_written(kf: KernelFolder, work: Path, flags: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The kernel as written, run on the host once per source in a session."""
    source = host_source(kf.baseline.render({}, "fp32").source)
    if source not in _AS_WRITTEN:
        env = kf.env(kf.check_shape, "fp32")
        _AS_WRITTEN[source] = _run(kf, source, kf.baseline.launch_for({}, env), _inputs(kf),
                                   work / "plain", flags)
    return _AS_WRITTEN[source]


def _host_check(kf: KernelFolder, template: KernelTemplate, configs: list[dict[str, Any]],
                work: Path, flags: tuple[str, ...]) -> None:
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = _as_written(kf, work, flags)
    for i, config in enumerate(configs):
        assert template.space(env).rejection(config) is None, config
        got = _run(kf, host_source(template.render(config, "fp32").source),
                   template.launch_for(config, env), inputs, work / f"c{i}", flags)
        _assert_same(kf, got, want, f"{kf.name} lifted at {config}")


def _configs(template: KernelTemplate, kf: KernelFolder) -> list[dict[str, Any]]:
    """The default, then the all-ends configs (first and last of them by default)."""
    env = kf.env(kf.check_shape, "fp32")
    return [dict(template.default_config()), *host_sample(end_configs(template, env))]


@pytest.mark.timeout(120)
def test_the_folder_lifted_matches_the_kernel_as_written_on_host(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(RMS)
    template = offline_template(kf).template
    # a sampled middle: 64 threads, 4 halves a load, two loads in flight
    sampled = {**template.default_config(), "BLOCK_THREADS": 64, "VEC": 4,
               "ITEMS_PER_THREAD": 2}
    _host_check(kf, template, [*_configs(template, kf)[1:], sampled], tmp_path, host_flags)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_lifted_matches_as_written_on_host(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _spelled(tmp_path, SPELLINGS[name], _BLOCKS[name])
    template = offline_template(kf).template
    _host_check(kf, template, _configs(template, kf)[-1:], tmp_path, host_flags)


@pytest.mark.timeout(120)
def test_a_block_of_96_breaks_the_tree_so_the_check_can_fail(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """Outside the space: the tree drops slots at 96 threads and the row sums go wrong."""
    kf = load_kernel_folder(RMS)
    lifted = offline_template(kf).lifted
    config = {**offline_template(kf).template.default_config(), "BLOCK_THREADS": 96}
    # the space as lifted before the helper was followed: every multiple of 32
    old = {"kind": "int", "min": 32, "max": 1024, "step": 32, "default": 256}
    template = KernelTemplate.build(
        name=kf.name, source=lifted.source, entry=kf.baseline.entry,
        params=[parameter_from_dict(p.name, old if p.name == "BLOCK_THREADS" else dict(p.spec))
                for p in lifted.params],
        constraints=list(lifted.constraints), grid=list(lifted.grid), block=list(lifted.block))
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = _as_written(kf, tmp_path, host_flags)
    got = _run(kf, host_source(template.render(config, "fp32").source),
               template.launch_for(config, env), inputs, tmp_path / "c96", host_flags)
    assert not np.allclose(got["y"].astype(np.float64), want["y"].astype(np.float64),
                           rtol=2e-3, atol=1e-3)
