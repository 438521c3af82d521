"""The staged walk (issue 28, nbody_accel): statement-bodied helpers written into their calls
(:mod:`workbench.templater.inline_bodies`) and rows of threads splitting the walk of a
staged tile (:mod:`workbench.templater.staged_walk`, JSPLIT).

Pure: the text a call becomes, the lifted knobs and constraints, and every refusal with its
line. Host (g++): spellings other hands write (a ``__device__`` function taking the sums by
reference, a plain inner loop, a tile loaded by a block-stride loop, float2 / float3
records, a potential, a kernel-density sum, a GEMV with x staged, an integer count) compute
at the default, the all-ends configs and mixes what they compute as written, at n = 300 (no
multiple of any tile) and at n below one tile.
"""

from __future__ import annotations

from workbench.templater.records import LiftedSource
from workbench.templater.semantic import lift_kernel

# -- statement-bodied helpers ----------------------------------------------------------------

#: A potential summed by a __device__ helper that takes the thread's sum by reference and its
#: own point under the kernel's name (bound under a fresh one).
HELPER = """\
__device__ void add_pair(float2 me, float2 other, float& phi) {
  const float dx = other.x - me.x;  // a comment the one-line block drops
  const float dy = other.y - me.y;
  phi -= rsqrtf(dx * dx + dy * dy + 0.01f);
}

extern "C" __global__ void k(float* out, const float2* pts, int n) {
  __shared__ float2 stage[128];
  const int p = blockIdx.x * 128 + threadIdx.x;
  const float2 me = p < n ? pts[p] : make_float2(0.0f, 0.0f);
  float phi = 0.0f;
  for (int base = 0; base < n; base += 128) {
    for (int t = threadIdx.x; t < 128; t += blockDim.x)
      stage[t] = base + t < n ? pts[base + t] : make_float2(1e9f, 1e9f);
    __syncthreads();
    for (int q = 0; q < 128; ++q) add_pair(me, stage[q], phi);
    __syncthreads();
  }
  if (p < n) out[p] = phi;
}
"""


def _lift(source: str, block: str = "128") -> LiftedSource:
    return lift_kernel(source, entry="k", grid=[f"ceil_div(n, {block})"], block=[block],
                       scalars={"n": "n"})


def test_a_helper_updating_a_sum_by_reference_is_written_into_its_call() -> None:
    lifted = _lift(HELPER)
    assert "for (int q = 0; q < 128; ++q) { float2 wb_me = me; float2 other = " \
        "stage[q]; const float dx = other.x - wb_me.x; const float dy = other.y - wb_me.y; " \
        "phi -= rsqrtf(dx * dx + dy * dy + 0.01f); }" in lifted.source, lifted.source
    assert "INLINE_BODY: applied: add_pair (a __device__ function) written into its calls " \
        "(lines 16): the analysis reads its statements (line 1)" in lifted.notes


def test_a_lambda_capturing_by_value_stays_a_call() -> None:
    source = HELPER.replace("add_pair(me, stage[q], phi);", "pull(stage[q]);").replace(
        "  for (int base", "  auto pull = [=](float2 o) mutable { phi -= o.x; };\n  for (int base")
    notes = [n for n in _lift(source).notes if n.startswith("INLINE_BODY")]
    assert notes == ["INLINE_BODY: not applied: pull (a lambda) is not written into its calls: "
                     "it captures `=`, not by reference only: a copy is taken where it is "
                     "defined (line 12)"]


def test_a_helper_with_a_return_or_a_local_named_like_the_kernels_stays_a_call() -> None:
    early = HELPER.replace("  phi -= rsqrtf", "  if (dx > 1.0f) return;\n  phi -= rsqrtf")
    assert "INLINE_BODY: not applied: add_pair (a __device__ function) is not written into its " \
        "calls: its body holds a return (`return;`) (line 4)" in _lift(early).notes
    shadow = HELPER.replace("const float dy", "const float p").replace("dy * dy", "p * p")
    assert "INLINE_BODY: not applied: add_pair (a __device__ function) is not written into its " \
        "calls: its body declares p, a name the kernel declares too: a read of it could mean " \
        "either (line 1)" in _lift(shadow).notes
