"""GEMM-family kernels as different people write them, and one host check of a lifted one.

Each :class:`Spelling` is a kernel as written (batched or not), its launch as written, the
C++ call of it from the simulation's ``main`` and where it keeps element (b, r, k) of A,
(b, k, c) of B and (b, r, c) of C. :func:`worst_error` runs a rendered config of its lifted
template on the host (every CUDA thread a coroutine, see helpers_templater) and answers the
worst absolute error against ``alpha * A.B + beta * C`` computed in double.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers_templater import COOPERATIVE_BLOCK, run_on_host

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel


@dataclass(frozen=True)
class Spelling:
    """One author's GEMM: source, launch as written (over batch, M, N, K) and its layout."""

    source: str
    grid: tuple[str, ...]
    block: tuple[str, ...]
    scalars: Mapping[str, str]  # the kernel's scalar args -> the shape expression passed
    call: str  # C++: the kernel called with C, A, B (pointers) and batch, M, N, K
    a_index: str = "(size_t)bt * M * K + (size_t)r * K + k"
    b_index: str = "(size_t)bt * K * N + (size_t)k * N + c"
    c_index: str = "(size_t)bt * M * N + (size_t)r * N + c"
    alpha: str = "1.0"
    beta: str = "0.0"
    entry: str = "k"
    notes: tuple[str, ...] = field(default=())


def lift(s: Spelling) -> LiftedSource:
    """The offline templater's lift of ``s`` at its launch as written."""
    return lift_kernel(s.source, entry=s.entry, grid=list(s.grid), block=list(s.block),
                       scalars=dict(s.scalars))


_MAIN = r"""
int main() {
  const int batch = %(batch)d, M = %(M)d, N = %(N)d, K = %(K)d;
  // one spare element at the front: A + 1, B + 1 are 4-byte but not 16-byte aligned
  std::vector<float> Ab(batch * M * K + 4), Bb(batch * K * N + 4), Cb(batch * M * N + 4);
  float* A = Ab.data() + %(offset)d; float* B = Bb.data() + %(offset)d;
  float* C = Cb.data() + %(offset)d;
  for (int i = 0; i < batch * M * K; ++i) A[i] = (float)((i * 37) %% 17 - 8) / 8.0f;
  for (int i = 0; i < batch * K * N; ++i) B[i] = (float)((i * 29) %% 13 - 6) / 4.0f;
  for (int i = 0; i < batch * M * N; ++i) C[i] = (float)((i * 11) %% 7 - 3) / 2.0f;
  std::vector<float> C0(C, C + batch * M * N);
  wb_launch({%(gx)d, %(gy)d, %(gz)d}, {%(bx)d, %(by)d, 1}, [&] { %(call)s; });
  double worst = 0.0;
  for (int bt = 0; bt < batch; ++bt)
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) {
        double ref = 0.0;
        for (int k = 0; k < K; ++k) ref += (double)A[%(a_index)s] * B[%(b_index)s];
        const double want = %(alpha)s * ref + %(beta)s * C0[%(c_index)s];
        worst = std::max(worst, std::fabs(want - C[%(c_index)s]));
      }
  std::printf("%%.9g %%ld\n", worst, wb_vector_loads);
  return 0;
}
"""

# float4 for the host: the vector path's loads are 16-byte loads of four floats
HOST_VECTOR = "struct alignas(16) float4 { float x, y, z, w; };\n"
_VECTOR_LOAD = "const float4 wb_v = *reinterpret_cast<const float4*>(wb_p);"
_COUNTED_LOAD = ("const float4 wb_v = (++wb_vector_loads, "
                 "*reinterpret_cast<const float4*>(wb_p));")


def worst_error(s: Spelling, template: KernelTemplate, config: Mapping[str, Any],
                env: Mapping[str, int], work: Path, *, offset: int = 0) -> float:
    """Worst absolute error of ``config`` of ``template`` (the lift of ``s``) at ``env``
    (batch, M, N, K), the matrices starting ``offset`` floats into their buffers."""
    return simulate(s, template, config, env, work, offset=offset)[0]


def simulate(s: Spelling, template: KernelTemplate, config: Mapping[str, Any],
             env: Mapping[str, int], work: Path, *, offset: int = 0) -> tuple[float, int]:
    """(worst absolute error, 16-byte loads the vector path took) of one host run."""
    launch = template.launch_for(dict(config), {**env, "elem_bytes": 4})
    grid = [*launch.grid, 1, 1][:3]
    source = template.render(dict(config), "fp32").source.replace(_VECTOR_LOAD, _COUNTED_LOAD)
    main = _MAIN % {**env, "gx": grid[0], "gy": grid[1], "gz": grid[2], "bx": launch.block[0],
                    "by": launch.block[1], "call": s.call, "a_index": s.a_index,
                    "b_index": s.b_index, "c_index": s.c_index, "alpha": s.alpha,
                    "beta": s.beta, "offset": offset}
    out = run_on_host(work, "sim", COOPERATIVE_BLOCK + HOST_VECTOR +
                      "static long wb_vector_loads = 0;\n" + source + main).split()
    return float(out[0]), int(out[1])
