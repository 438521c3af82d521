"""A vector lane's quotient and remainder by a run-time size (workbench.templater.vector_lanes):
the helpers, and a quotient's own quotient and remainder through the carry, are exact for every base, divisor and lane the template's constraint admits (a
host program checks them exhaustively over a range, for int, unsigned and long long bases);
where the divisor is a literal, or a local the body changes, the lane's element stays
``var + wb_v``. The end-to-end host checks are the pixel shuffle's and max pool's
(tests/test_templater_first22_pixel_shuffle_r2.py), whose check shapes give carries."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers_templater import needs_gxx

from workbench.templater.semantic import lift_kernel
from workbench.templater.vector_lanes import LANE_DIVMOD

_PROGRAM = r"""
#include <cstdio>
#define __device__
#define __forceinline__ inline
%(helpers)s
template <typename B, typename E> int check() {
  int bad = 0;
  for (long long b0 = 0; b0 < 3000; ++b0)
    for (long long e0 = VEC; e0 < 70; ++e0)
      for (int k = 0; k < VEC; ++k) {
        const B b = (B)b0; const E e = (E)e0;
        if (wb_lane_div(b, k, e) != (b + k) / e || wb_lane_mod(b, k, e) != (b + k) %% e) {
          if (bad++ < 3) printf("base %%lld e %%lld k %%d\n", b0, e0, k);
        }
        // a quotient's own division and remainder: its shared quotient and the lane's carry
        for (long long f0 = 1; f0 < 9; ++f0) {
          const E f = (E)f0;
          const int c = wb_lane_carry(b, k, e);
          if (wb_lane_mod(b / e, c, f) != ((b + k) / e) %% f ||
              wb_lane_div(b / e, c, f) != ((b + k) / e) / f) {
            if (bad++ < 3) printf("base %%lld e %%lld f %%lld k %%d\n", b0, e0, f0, k);
          }
        }
      }
  return bad;
}
int main() {
  const int bad = check<int, int>() + check<unsigned, int>() + check<long long, int>() +
                  check<int, long long>() + check<unsigned, unsigned>();
  printf("%%d wrong\n", bad);
  return bad != 0;
}
"""


@needs_gxx
@pytest.mark.parametrize("vec", [1, 2, 4, 8])
def test_the_lane_helpers_are_exact_where_the_constraint_holds(vec: int, tmp_path: Path) -> None:
    src = tmp_path / "lanes.cpp"
    src.write_text(_PROGRAM % {"helpers": LANE_DIVMOD})
    exe = tmp_path / "lanes"
    subprocess.run(["g++", "-std=c++14", "-O1", f"-DVEC={vec}", "-o", str(exe), str(src)],
                   check=True, capture_output=True, timeout=120)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "0 wrong", run.stdout


_KERNEL = """
extern "C" __global__ void permute(float* __restrict__ out, const float* __restrict__ in,
                                   int rows, int cols) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < rows * cols) {
    int r = i / cols, c = i % cols, s = (i / cols) % 3, t = (i / cols) / rows;
    int step = cols;
    step += 1;
    out[i] = in[c * rows + r] + (float)(i % 64) + (float)(i / step) + (float)(s + t);
  }
}
"""


def test_run_time_divisors_share_the_quotient_and_the_rest_stay_per_lane() -> None:
    lifted = lift_kernel(_KERNEL, entry="permute", grid=["ceil_div(rows * cols, 256)"],
                         block=["256"], scalars={"rows": "rows", "cols": "cols"})
    assert "VEC" in [p.name for p in lifted.params], lifted.notes
    src = lifted.source
    # cols is a size: one quotient a vector, and the constraint that keeps the carry exact
    assert "int r = wb_lane_div(i, wb_v, (cols));" in src, src
    assert "int c = wb_lane_mod(i, wb_v, (cols));" in src, src
    assert "cols >= VEC" in lifted.constraints
    # a quotient's remainder and quotient: the shared quotient and the lane's carry
    assert "int s = wb_lane_mod(i / (cols), wb_lane_carry(i, wb_v, (cols)), (3));" in src, src
    assert "int t = wb_lane_div(i / (cols), wb_lane_carry(i, wb_v, (cols)), (rows));" in src
    assert "rows >= 1" in lifted.constraints
    # a literal divisor is the compiler's; a local the body changes is not one per thread
    assert "(float)((i + wb_v) % 64)" in src and "(float)((i + wb_v) / step)" in src, src
