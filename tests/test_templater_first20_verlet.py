"""First contact with held-back set 20's Verlet orbits (issue 28):
benchmarks/corpus_compute_unseen20/verlet_orbit_tpl integrates each particle in a template
``verlet_orbits<Steps, Block, T>`` calling ``gravity(const Vec2<T>& r)``, whose inverse
distance is ``T(1) / sqrt(r.x * r.x + r.y * r.y)``. At first contact the interleaved items
refused: workbench/templater/purity.py read the const reference parameter as not a value and
``T(1)`` (a conversion to the template's type parameter) as a call of an unknown ``T``, and
workbench/templater/ilp_calls.py read ``T(1)`` as a call with effects; FAST_MATH found no
``1.0f / sqrtf(x)``. Now a const reference to a value is a value, a member of a value is a
value (``r.x``, a class value only where the file's operators are pure), a conversion
(``T(1)``, ``float(x)``, ``static_cast<T>(x)``) is no call, and FAST_MATH rewrites a
reciprocal root of any spelled type (workbench/templater/ilp_recip_root.py), leaving the
choice of ``rsqrtf`` to the compiler's overload resolution.
Pure: the folder's lift and a second spelling (a ``static_cast`` one, the root's argument a
local, ``if (t < n)``, a macro step count) lift ITEMS_PER_THREAD interleaved, UNROLL and
FAST_MATH (the expert's ITEMS, UNROLL, RSQRT), and so does a third whose helper loops over
its own local object (free of effects, not pure: workbench/templater/ilp_calls.py reads its
member writes as its own); an impure operator of the file keeps a helper of class values
impure, with the line; ``int(a) / int(b)`` still divides integers. nvcc: the lift at the expert's pick in its knobs has
``rsqrt.approx`` and no IEEE square root in its PTX, and the written roots at FAST_MATH 0.
Host (g++): the three lifts at the default and a mix bit for bit against the kernel as written
(the all-ends corners too under WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import held_back_unseen20
import pytest
from held_back_harness import respelled, same_as_written
from helpers_nvcc import needs_nvcc
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.cuda_source import parse_cuda
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.purity import device_purity
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen20.SET.root / "verlet_orbit_tpl"
#: The expert's H200 pick (THREADS 512, ITEMS 2, UNROLL 8, RSQRT 1) spelled in the lift's
#: knobs, then four items over 160 threads (two blocks at the check shape's 1000, the last
#: partly), unrolled by 2, staged, a minimum of 2 blocks.
PICK = {"BLOCK_THREADS": 512, "ITEMS_PER_THREAD": 2, "UNROLL": 8, "FAST_MATH": 1, "STAGE": 0}
MIX = {"BLOCK_THREADS": 160, "ITEMS_PER_THREAD": 4, "UNROLL": 2, "FAST_MATH": 1, "STAGE": 1,
       "MIN_BLOCKS_PER_SM": 2}
KNOBS = {"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "FAST_MATH"}


#: The same integrator by another hand: a struct of two named members, the inverse distance
#: a ``static_cast`` one over the root of a local, cubed inline, the work under ``if (t <
#: n)``, the step count and step macros, ``k++``.
SPELLING = """template <typename Real>
struct P2 {
  Real x;
  Real y;
};

template <typename Real>
__device__ __forceinline__ P2<Real> pull(const P2<Real>& p) {
  const Real d2 = p.x * p.x + p.y * p.y;
  const Real k = static_cast<Real>(1) / sqrt(d2);
  return P2<Real>{-p.x * (k * k * k), -p.y * (k * k * k)};
}

#define NSTEPS 400
#define H 0.01f

extern "C" __global__ void verlet_orbit_tpl(float* out, const float* state, int n) {
  int t = threadIdx.x + blockIdx.x * blockDim.x;
  if (t < n) {
    P2<float> pos = {state[4 * t], state[4 * t + 1]};
    P2<float> vel = {state[4 * t + 2], state[4 * t + 3]};
    P2<float> acc = pull(pos);
    for (int k = 0; k < NSTEPS; k++) {
      vel.x += 0.5f * H * acc.x;
      vel.y += 0.5f * H * acc.y;
      pos.x += H * vel.x;
      pos.y += H * vel.y;
      acc = pull(pos);
      vel.x += 0.5f * H * acc.x;
      vel.y += 0.5f * H * acc.y;
    }
    out[4 * t] = pos.x;
    out[4 * t + 1] = pos.y;
    out[4 * t + 2] = vel.x;
    out[4 * t + 3] = vel.y;
  }
}
"""


#: The second spelling with a helper that loops, writing the members of its own local:
#: free of effects, not pure.
LOOP_SPELLING = SPELLING.replace(
    """  const Real d2 = p.x * p.x + p.y * p.y;
  const Real k = static_cast<Real>(1) / sqrt(d2);
  return P2<Real>{-p.x * (k * k * k), -p.y * (k * k * k)};""",
    """  P2<Real> g;
  g.x = Real(0);
  g.y = Real(0);
  for (int m = 0; m < 1; ++m) {
    const Real k = Real(1) / sqrt(p.x * p.x + p.y * p.y);
    g.x -= p.x * k * k * k;
    g.y -= p.y * k * k * k;
  }
  return g;""")


def _lift(source: str) -> tuple[list[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="verlet_orbit_tpl", grid=["ceil_div(n, 128)"],
                         block=["128"], scalars={"n": "n"})
    return [p.name for p in lifted.params], lifted.notes, lifted.source


def test_the_folder_lift_interleaves_the_items_with_fast_roots() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    assert {p.name for p in lifted.params} >= KNOBS, lifted.notes
    assert any(n.startswith("ITEMS_PER_THREAD: applied: 4 item-dependent local(s) (a, i, r, v)")
               for n in lifted.notes), lifted.notes
    assert "const T inv = WB_RECIP_ROOT(T(1), sqrt(r.x * r.x + r.y * r.y), " \
        "r.x * r.x + r.y * r.y);" in lifted.source


def test_the_spelling_interleaves_the_items_with_fast_roots() -> None:
    names, notes, source = _lift(SPELLING)
    assert set(names) >= KNOBS, notes
    assert "WB_RECIP_ROOT(static_cast<Real>(1), sqrt(d2), d2)" in source
    assert "acc[wb_it] = pull(pos[wb_it]);" in source


def test_a_helper_with_a_loop_writing_its_own_object_runs_per_item() -> None:
    """Not pure (a loop), but it changes nothing but its local ``g`` (members written):
    the items interleave, the call under each item's test."""
    source = LOOP_SPELLING
    names, notes, text = _lift(source)
    assert set(names) >= KNOBS, notes
    assert device_purity(parse_cuda(source))["pull"] == "a loop: `for (int m = 0; m < 1; ++m) {" \
        "\n    const ` (line 12)"
    assert "WB_RECIP_ROOT(Real(1), sqrt(p.x * p.x + p.y * p.y), p.x * p.x + p.y * p.y)" in text
    assert "acc[wb_it] = pull(pos[wb_it]);" in text


def test_const_references_members_and_conversions_are_values() -> None:
    verdict = device_purity(parse_cuda(FOLDER.joinpath("verlet_orbit_tpl.cu").read_text()))
    assert verdict["gravity"] is None and verdict["half_of"] is None
    assert verdict["verlet_orbits"] == "parameter `T* out` is not a value (line 23)"
    assert device_purity(parse_cuda(SPELLING))["pull"] is None


def test_an_impure_operator_keeps_class_values_impure() -> None:
    """``a + b`` of two ``P2`` may run the file's ``operator+``, which writes memory."""
    source = SPELLING.replace("template <typename Real>\n__device__ __forceinline__ P2",
                              "__device__ float* g_log;\n__device__ P2<float> operator+("
                              "P2<float> a, P2<float> b) { g_log[0] = a.x; "
                              "return P2<float>{a.x + b.x, a.y + b.y}; }\n"
                              "template <typename Real>\n__device__ __forceinline__ P2", 1)
    verdict = device_purity(parse_cuda(source))
    assert verdict["pull"] == "`p` is a class value and the file's `operator+` is not " \
        "shown pure (line 10)", verdict


def test_a_conversion_to_an_integer_divides_as_an_integer() -> None:
    """``int(a)`` converts, it is no call: ``int(a) / int(b)`` divides integers (by zero,
    it may); ``a / int(b)`` a float by a float."""
    verdict = device_purity(parse_cuda(
        "__device__ float f(float a, float b) { return int(a) / int(b); }\n"
        "__device__ float g(float a, float b) { return a / int(b); }\n"))
    assert verdict == {"f": "`int(a) / int(b)` may divide an integer by zero (line 1)",
                       "g": None}, verdict


@needs_nvcc
def test_the_pick_takes_rsqrt_only_under_fast_math(tmp_path: Path) -> None:
    template = offline_template(load_kernel_folder(FOLDER)).template
    for fast in (0, 1):
        cu = tmp_path / f"k{fast}.cu"
        cu.write_text(template.render({**template.default_config(), **PICK, "FAST_MATH": fast},
                                      "fp32").source)
        ptx = tmp_path / f"k{fast}.ptx"
        subprocess.run(["nvcc", "-ptx", "-arch=sm_90", "-o", str(ptx), str(cu)], check=True,
                       capture_output=True)
        code = ptx.read_text()
        assert ("rsqrt.approx.f32" in code, "sqrt.rn.f32" in code) == (fast == 1, fast == 0)


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    assert set(template.param_names) >= KNOBS
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, [PICK, MIX])
    if not FULL_MATRIX:  # the default and the mix (the all-ends corners: slow)
        configs = [configs[0], configs[2]]
    return same_as_written(kf, template, configs, held_back_unseen20.SET.host_source,
                           tmp_path, flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags) >= 2


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_spelling_computes_as_written(tmp_path: Path,
                                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", SPELLING)
    assert _same_outputs(kf, tmp_path, host_flags) >= 2


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_looping_helper_computes_as_written(tmp_path: Path,
                                                host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", LOOP_SPELLING)
    assert _same_outputs(kf, tmp_path, host_flags) >= 2


# -- a one spelled as a double divides as a double at every FAST_MATH: no knob -----------------

_RECIP = """
extern "C" __global__ void k(float* y, const float* x, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float v = x[i]; float a = 0.0f;
  for (int r = 0; r < 64; ++r) a += ONE / sqrtf(v * v + r);
  y[i] = a;
}
"""


@pytest.mark.parametrize("one, lifted", [
    ("1.0", False), ("1e0", False), ("(double)1", False), ("double(1)", False),
    ("static_cast<double>(1)", False), ("1", True), ("(float)1", True), ("float(1)", True)])
def test_fast_math_is_lifted_only_for_a_one_that_may_be_a_float(one: str, lifted: bool) -> None:
    got = lift_kernel(_RECIP.replace("ONE", one), entry="k", grid=["ceil_div(n, 128)"],
                      block=["128"], scalars={"n": "n"})
    assert ("FAST_MATH" in {p.name for p in got.params}) is lifted, got.notes
