"""First contact with held-back set 22's AdamW step (issue 28):
benchmarks/corpus_compute_unseen22/adamw_step is one element a thread, ``const auto i =
static_cast<int>(blockIdx.x) * kBlock + static_cast<int>(threadIdx.x); if (i >= n) return;``,
seven streams (p, g, m, v in; p', m', v' out, all ``__restrict__``). The vector family read
only ``if (i < n) { .. }``, so the lift had the block and items a thread (87 % of a copy on
the H200 against the expert's 102 % with float4s). The family's region model now reads
``if (i >= n) return; ..`` itself (:func:`~.vector_regions.flat_region`, the statements after
the exit): VEC elements a stream moved as one aligned vector, ITEMS_PER_THREAD vectors a thread
loaded before any is used (the expert's VEC and ITEMS). At a ragged n (the folder's own
3001) the thread whose vector would cross n takes the elements left one by one through the
kernel's statements (:mod:`.vector_tail`): no ``n % VEC == 0``, every VEC at every n. Where
the family refuses, the other families lift the kernel and the refusal is told (a written
output that is not ``__restrict__`` and may alias an input: the line).

Host (g++): the folder, a C89 hand (macros for the block and the moving average, a plain
``__device__`` helper, locals declared first) and a modern hand (a struct built before the
guard, ``unsigned`` thread index, the work under ``if (i < n)``), bit for bit against the
kernel as written at the default, two mixes and the all-ends configs' first and last, at
n = 3000 (a multiple of 8 and of no block: the last block partly) and, for the folder, at its
own n = 3001 too (VEC 2 and 4: the tail).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen22
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen22.SET.root / "adamw_step"
SCALARS = {"n": "n", "lr": "0.001", "beta1": "0.9", "beta2": "0.999", "eps": "0.00000001",
           "wd": "0.01", "bc1": "0.6513215", "bc2": "0.00995512"}
#: float4s, two a thread of 128 (the expert's pick spelled in the lift's knobs, ITEMS 2),
#: four blocks an SM; float2s, four a thread of 64 (3000 over 512 a block: six blocks, the
#: last partly).
MIXES = ({"BLOCK_THREADS": 128, "VEC": 4, "ITEMS_PER_THREAD": 2, "MIN_BLOCKS_PER_SM": 4},
         {"BLOCK_THREADS": 64, "VEC": 2, "ITEMS_PER_THREAD": 4})


#: C89: macros for the block and the moving average, a plain helper, locals declared first.
C89 = """/* C89 spelling: macros for the block and the moving average, plain float locals, the
 * hyper-parameters read directly. */
#define THREADS 256
#define EMA(old, x, b) ((b) * (old) + (1.0f - (b)) * (x))

__device__ float adamw_new_p(float p, float m, float v, float lr, float eps, float wd,
                             float bc1, float bc2)
{
    float m_hat = m / bc1;
    float v_hat = v / bc2;
    return p - lr * (m_hat / (sqrtf(v_hat) + eps) + wd * p);
}

extern "C" __global__ void adamw_step(float *__restrict__ p_out, float *__restrict__ m_out,
                                      float *__restrict__ v_out, const float *p, const float *g,
                                      const float *m, const float *v, int n,
                                      float lr, float beta1, float beta2, float eps, float wd,
                                      float bc1, float bc2)
{
    int i;
    float gi, mi, vi;
    i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n)
        return;
    gi = g[i];
    mi = EMA(m[i], gi, beta1);
    vi = EMA(v[i], gi * gi, beta2);
    p_out[i] = adamw_new_p(p[i], mi, vi, lr, eps, wd, bc1, bc2);
    m_out[i] = mi;
    v_out[i] = vi;
}
"""

#: Modern C++: the hyper-parameters a struct built before the guard, an unsigned thread index
#: cast once, the work under ``if (i < n)``, a static helper taking the struct.
MODERN = """// Modern C++ with the work under the guard's if and a lambda for the moving average.
struct Hyper {
  float lr, beta1, beta2, eps, wd, bc1, bc2;
};

static __device__ __forceinline__ float corrected_step(float m, float v, const Hyper& h) {
  return (m / h.bc1) / (sqrtf(v / h.bc2) + h.eps);
}

extern "C" __global__ void adamw_step(float* __restrict__ p_out, float* __restrict__ m_out,
                                      float* __restrict__ v_out, const float* __restrict__ p,
                                      const float* __restrict__ g, const float* __restrict__ m,
                                      const float* __restrict__ v, int n, float lr, float beta1,
                                      float beta2, float eps, float wd, float bc1, float bc2) {
  const Hyper h{lr, beta1, beta2, eps, wd, bc1, bc2};
  const unsigned tid = threadIdx.x;
  const int i = static_cast<int>(blockIdx.x * 256u + tid);
  if (i < n) {
    const float grad = g[i];
    const float m1 = h.beta1 * m[i] + (1.0f - h.beta1) * grad;
    const float v1 = h.beta2 * v[i] + (1.0f - h.beta2) * grad * grad;
    const float p0 = p[i];
    p_out[i] = p0 - h.lr * (corrected_step(m1, v1, h) + h.wd * p0);
    m_out[i] = m1;
    v_out[i] = v1;
  }
}
"""


def _lift(source: str) -> tuple[list[str], tuple[str, ...], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="adamw_step", grid=["ceil_div(n, 256)"], block=["256"],
                         scalars=SCALARS)
    return [p.name for p in lifted.params], lifted.constraints, lifted.notes, lifted.source


def test_the_folder_lift_vectorizes_every_stream() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    names = [p.name for p in lifted.params]
    assert {"BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"} <= set(names), \
        lifted.notes
    assert "VEC: applied: region over i vectorized (line 36)" in lifted.notes
    assert "VEC * 4 <= 16" in lifted.constraints
    assert not any("% VEC" in c for c in lifted.constraints), lifted.constraints
    assert "} else if (i < n) {  // the vector would cross n: one by one" in lifted.source
    assert lifted.grid == ("ceil_div(n, BLOCK_THREADS * VEC * ITEMS_PER_THREAD)",)
    for stream in ("p_out", "m_out", "v_out"):
        assert f"*reinterpret_cast<WbVec<float, VEC>*>(&{stream}[i]) = wb_{stream}[wb_i];" in \
            lifted.source
    assert "wb_v_arr[wb_i] = *reinterpret_cast<const WbVec<float, VEC>*>(&v[i]);" in \
        lifted.source


@pytest.mark.parametrize("source", [C89, MODERN], ids=["c89", "modern"])
def test_other_spellings_lift_the_same_knobs(source: str) -> None:
    names, constraints, notes, _text = _lift(source)
    assert {"BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD"} <= set(names), notes
    assert "n % VEC == 0" not in constraints
    assert any(n.startswith("VEC: applied: region over i vectorized") for n in notes), notes


def test_an_output_that_may_alias_an_input_keeps_one_element_a_thread() -> None:
    """The C89 hand without ``__restrict__``: m_out may be p or g (an in-place step), which
    the vector loads and stores would reorder; the kernel as written is lifted (items a
    thread with ``continue``) and the refusal names the line."""
    source = C89.replace("float *__restrict__ ", "float *")
    names, _constraints, notes, text = _lift(source)
    assert "VEC" not in names and "ITEMS_PER_THREAD" in names, notes
    assert "VEC: not applied: `m_out` is written, is not __restrict__ and may alias g, m, " \
        "p, v (line 23)" in notes, notes
    assert "if (i >= n)\n        continue;  // next item" in text


def test_an_exit_on_another_condition_is_left_as_written() -> None:
    """``if (i > n) return;`` (not the complement of ``i < n``): no region, no VEC."""
    names, _constraints, notes, _text = _lift(C89.replace("if (i >= n)", "if (i > n)"))
    assert "VEC" not in names, notes
    assert any(n.startswith("VEC: not applied: no unit-stride per-thread loop") for n in notes), \
        notes


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, [{k: v for k, v in mix.items()
                                            if k in template.param_names} for mix in MIXES])
    if not FULL_MATRIX:
        configs = configs[:5]
    assert any(c.get("VEC", 1) > 1 for c in configs), configs
    return same_as_written(kf, template, configs, held_back_unseen22.SET.host_source, tmp_path,
                           flags)


def _at_3000(kf: KernelFolder) -> KernelFolder:
    toml = kf.path / "kernel.toml"
    toml.write_text(toml.read_text().replace("small = { n = 3001 }", "small = { n = 3000 }"))
    out = load_kernel_folder(toml.parent)
    assert out.env(out.check_shape, "fp32")["n"] == 3000
    return out


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    own = load_kernel_folder(FOLDER)
    assert own.env(own.check_shape, "fp32")["n"] == 3001  # ragged: every VEC takes a tail
    assert _same_outputs(own, tmp_path / "own", host_flags) >= 4
    kf = _at_3000(respelled(FOLDER, tmp_path / "folders",
                            FOLDER.joinpath("adamw_step.cu").read_text()))
    assert _same_outputs(kf, tmp_path / "even", host_flags) >= 4


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("source", [C89, MODERN], ids=["c89", "modern"])
def test_other_spellings_compute_as_written(source: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _at_3000(respelled(FOLDER, tmp_path / "folders", source))
    assert _same_outputs(kf, tmp_path, host_flags) >= 4


#: A compute loop per element after two templated moving averages in ``auto`` locals: the
#: items a thread interleave the loop (ITEMS_PER_THREAD of the ilp family), each item's
#: ``mi`` and ``vi`` an array of the type ``ema``'s ``T`` is deduced as from ``m[i]``
#: (float), where before the type was not known and the items were refused.
HERON = """// A compute loop per element (Heron's square root, six steps) after two templated moving
// averages held in `auto` locals.
template <typename T>
__device__ __forceinline__ T ema(T old, const T& sample, T beta) {
  return beta * old + (T(1) - beta) * sample;
}

extern "C" __global__ void adamw_step(float* __restrict__ p_out, float* __restrict__ m_out,
                                      float* __restrict__ v_out, const float* __restrict__ p,
                                      const float* __restrict__ g, const float* __restrict__ m,
                                      const float* __restrict__ v, int n, float lr, float beta1,
                                      float beta2, float eps, float wd, float bc1, float bc2) {
  const int i = static_cast<int>(blockIdx.x) * 256 + static_cast<int>(threadIdx.x);
  if (i >= n) return;
  const auto mi = ema(m[i], g[i], beta1);
  const auto vi = ema(v[i], g[i] * g[i], beta2);
  float r = 1.0f;
  for (int k = 0; k < 6; ++k) r = 0.5f * (r + (vi / bc2 + eps) / r);
  p_out[i] = p[i] - lr * (mi / bc1 / (r + eps) + wd * p[i]);
  m_out[i] = mi;
  v_out[i] = vi;
}
"""


def test_a_templated_helper_types_its_auto_result() -> None:
    names, _constraints, notes, text = _lift(HERON)
    assert {"ITEMS_PER_THREAD", "UNROLL"} <= set(names), notes
    assert "ITEMS_PER_THREAD: applied: 4 item-dependent local(s) (i, mi, r, vi) get one copy " \
        "per item; 1 loop(s) of item-independent length interleave the items (line 13)" in notes
    assert "float mi[ITEMS_PER_THREAD]" in text and "float vi[ITEMS_PER_THREAD]" in text, text


def test_a_return_type_no_argument_deduces_stays_unknown() -> None:
    """``template <typename T, typename U = T> U ema(..)``: U is deduced from no argument,
    so ``mi``'s type stays unknown and the items that would copy it are refused; the vector
    family (lanes need no arrays of it) takes the region instead."""
    source = HERON.replace("template <typename T>", "template <typename T, typename U = T>") \
        .replace("__forceinline__ T ema(", "__forceinline__ U ema(")
    names, _constraints, notes, _text = _lift(source)
    assert "UNROLL" not in names and "VEC" in names, notes


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_templated_helper_items_compute_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _at_3000(respelled(FOLDER, tmp_path / "folders", HERON))
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    mixes = [{"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 2},
             {"BLOCK_THREADS": 160, "ITEMS_PER_THREAD": 8, "UNROLL": 0, "MIN_BLOCKS_PER_SM": 2}]
    configs = host_configs(template, env, mixes)
    if not FULL_MATRIX:
        configs = configs[:5]
    assert same_as_written(kf, template, configs, held_back_unseen22.SET.host_source, tmp_path,
                           host_flags) >= 4
