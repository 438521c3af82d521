"""Function objects whose operator() holds statements, read as the lambdas they are
(:mod:`workbench.templater.functor_objects`; issue 28, set 20's crspline_rotmean).

Two spellings of the pattern: the corpus kernel as written (a Thrust-style ``orbit_mean``
aggregate holding a ``catmull_rom`` over the staged knots and a ``wrap_unit``, built by
``const orbit_mean op{catmull_rom{knots}, wrap_unit{}}`` and called in an 8-trip grid-stride
loop), and another hand's: a ``class`` with a constructor copying its private members (a
pointer to the staged cells and a scale built from an expression), held by a struct with a
step count, built by ``damped_sum op = {lerp_table(cells, KN - 1.0f), 24}`` and called once a
thread under ``if (i < n)``. Each lifts the items (ITEMS_PER_THREAD, UNROLL; the first also
SPAN) and prints on the host (g++) exactly what the kernel as written prints at the default
and a mix (all-ends under WORKBENCH_FULL_MATRIX=1). A member written in the operator, an
object passed to a function, a ``mutable`` member and a derived class stay as written, each
with its reason.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from held_back_harness import same_as_written
from held_back_unseen20 import SET
from helpers_templater import host_configs, lifted_template
from test_corpus_unseen3 import host_flags  # noqa: F401  (a fixture)
from test_templater_first20_crspline import run
from test_templater_ilp_spellings import ENV, N

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.offline import offline_template

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

#: Another hand's spelling: k(out, values, table, n), once a thread, a class with a
#: constructor and private members inside a struct aggregate with an int member.
CLASS_CTOR = """
#define KN 32
class lerp_table {
 public:
  __device__ lerp_table(const float* t, float s) : tab_(t), scale_(s) {}
  __device__ float operator()(float x) const {
    const float pos = x * scale_;  // the cell's place
    const int below = (int)pos;
    const int cell = below > KN - 2 ? KN - 2 : below;
    const float w = pos - cell;
    return tab_[cell] + w * (tab_[cell + 1] - tab_[cell]);
  }

 private:
  const float* tab_;
  float scale_;
};

struct damped_sum {
  lerp_table f;
  int steps;
  __device__ float operator()(float v) const {
    float acc = 0.0f;
    float x = fabsf(v) - floorf(fabsf(v));
    for (int s = 0; s < steps; ++s) {
      acc = 0.5f * acc + f(x);
      x = x * 0.75f + 0.125f;
    }
    return acc;
  }
};

extern "C" __global__ void k(float* out, const float* v, const float* table, int n) {
  __shared__ float cells[KN];
  for (int j = threadIdx.x; j < KN; j += blockDim.x) cells[j] = table[j];
  __syncthreads();
  damped_sum op = {lerp_table(cells, KN - 1.0f), 24};
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = op(v[i]);
}
"""


def lift(source: str) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                       scalars={"n": "n"})


def test_the_corpus_kernels_functor_objects_lift_the_experts_knobs(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(SET.root / "crspline_rotmean")
    lifted = offline_template(kf)
    template = lifted.template
    assert {"BLOCK_THREADS", "SPAN", "ITEMS_PER_THREAD", "UNROLL"} <= \
        set(template.param_names), lifted.lifted.notes
    assert "VEC" not in template.param_names
    assert any(f.transform == "INLINE_FUNCTOR" and f.applied and "orbit_mean" in f.reason
               for f in lifted.lifted.findings)
    env = kf.env(kf.check_shape, "fp32")
    pick = {"BLOCK_THREADS": 512, "SPAN": 4, "ITEMS_PER_THREAD": 4, "UNROLL": 4}
    configs = host_configs(template, env, [pick])
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags) == len(configs)


def test_a_class_with_a_constructor_inside_an_aggregate_lifts_the_items() -> None:
    lifted = lift(CLASS_CTOR)
    names = [p.name for p in lifted.params]
    assert "ITEMS_PER_THREAD" in names and "UNROLL" in names, lifted.notes
    applied = [f.reason for f in lifted.findings if f.transform == "INLINE_FUNCTOR"]
    assert applied == ["op (an object of damped_sum) read as the lambdas its operator() and "
                       "its member functors are"], lifted.notes
    # the scale the object copied once, under a fresh name, the pointer read as the cells
    assert "const float op_f_scale_ = KN - 1.0f;" in lifted.source
    assert "cells[" in lifted.source and "tab_" not in lifted.source.split("__global__")[1]
    template = lifted_template(lifted)
    written = KernelTemplate.build(name="k", source=CLASS_CTOR, entry="k",
                                   grid=["ceil_div(n, 128)"], block=["128"])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        want = run(written, {}, work, "written")
        assert len(want) == N and "-7" not in want and len(set(want)) > N // 5
        mix = {"ITEMS_PER_THREAD": 4, "UNROLL": 8, "BLOCK_THREADS": 64}
        for k, config in enumerate(host_configs(template, ENV, [mix])):
            assert run(template, config, work, f"c{k}") == want, config


@pytest.mark.parametrize(("old", "new", "reason"), [
    ("  int steps;\n  __device__ float operator()(float v) const {",
     "  int steps;\n  __device__ float operator()(float v) {\n    steps += 0;",
     "writes member steps"),
    ("  if (i < n) out[i] = op(v[i]);", "  if (i < n) out[i] = apply(op, v[i]);",
     "uses op other than as a call"),
    ("  int steps;\n", "  mutable int steps;\n", "is virtual, mutable or static"),
    ("struct damped_sum {", "struct damped_sum : base {", "derives from another class"),
])
def test_an_object_the_rewrite_cannot_read_stays_as_written(old: str, new: str,
                                                            reason: str) -> None:
    source = CLASS_CTOR.replace(old, new)
    assert source != CLASS_CTOR
    source = source.replace("extern", "struct base {};\ntemplate <class F> __device__ float "
                            "apply(const F& f, float x) { return f(x); }\nextern")
    lifted = lift(source)
    refused = [f.reason for f in lifted.findings if f.transform == "INLINE_FUNCTOR" and
               not f.applied and "as a lambda" in f.reason]
    assert len(refused) == 1 and reason in refused[0], lifted.notes
    assert "damped_sum op = {" in lifted.source  # left as written
