"""GPU tier for issue 16: integer and fp8 outputs compared on the device (|Δq| <= atol as
integers, never through float32; fp8 host rounding == the device's conversions), a folder
with no reference.py or [template], and the space-wide gate with the offline repair round
on a kernel scaffolded by ``workbench init``. Run on the GPU machine: ``pytest -m gpu``."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, Config, Status
from workbench.engine.bench import BenchSettings
from workbench.engine.runner import LocalRunner

pytestmark = pytest.mark.gpu

FAST = BenchSettings(warmup_ms=0.5, min_reps=3, max_reps=10, max_time_s=0.02, timeout_s=4.0)

SHIFT_CU = """\
#ifndef DELTA
#define DELTA 0
#endif
#ifndef WIDE_DELTA
#define WIDE_DELTA 0
#endif
extern "C" __global__ void shift(const signed char* x, signed char* q, const int* w,
                                 long long* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    q[i] = (signed char)(min((int)x[i], 125) + DELTA);
    wide[i] = (long long)w[i] * (1LL << 40) + WIDE_DELTA;  // float32 cannot see +1 here
  }
}
"""



def elementwise_toml(name: str, buffers: list[tuple[str, str, str, str]], n: int,
                     params: dict[str, list[int]]) -> str:
    """kernel.toml of a one-thread-per-element kernel over n elements: buffers are
    (name, dtype, role, extra line), then the scalar n; the template is the same source
    with ``params`` (the first value of each is its default, the baseline's behaviour)."""
    parts = [f'name = "{name}"', 'dtypes = ["fp32"]', 'check_shape = "small"',
             f"[shapes]\nsmall = {{ n = {n} }}", "[tolerances]\nfp32 = { rtol = 0.0, atol = 0.0 }"]
    for arg, dtype, role, extra in buffers:
        parts.append(f'[[args]]\nname = "{arg}"\ndtype = "{dtype}"\nrole = "{role}"\n'
                     f'shape = ["n"]\n{extra}')
    parts.append('[[args]]\nname = "n"\ndtype = "i32"\nrole = "scalar"\nvalue = "n"')
    launch = f'source = "template.cu"\nentry = "{name}"\ngrid = ["ceil_div(n, 256)"]\nblock = ["256"]'
    parts += [f"[baseline]\n{launch}", f"[template]\n{launch}"]
    for param, values in params.items():
        parts.append(f'[template.params.{param}]\nkind = "choice"\nvalues = {values}\n'
                     f"default = {values[0]}")
    return "\n".join(parts) + "\n"


def shift_toml(q_tolerance: str) -> str:
    return elementwise_toml("shift", [("x", "i8", "in", ""), ("q", "i8", "out", q_tolerance),
                                      ("w", "i32", "in", ""), ("wide", "i64", "out", "")],
                            1000, {"DELTA": [0, 1, 2], "WIDE_DELTA": [0, 1]})


FP8_CU = """\
#include <cuda_fp8.h>
#ifndef SCALE
#define SCALE 1
#endif
extern "C" __global__ void fp8_scale(const __nv_fp8_e5m2* x, __nv_fp8_e4m3* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __nv_fp8_e4m3(float(x[i]) * SCALE);
}
"""

FP8_TOML = elementwise_toml("fp8_scale", [("x", "fp8_e5m2", "in", ""),
                                          ("y", "fp8_e4m3", "out", "")], 4096, {"SCALE": [1, 2]})

# e5m2 inputs up to ~1000 (exactly representable), e4m3 outputs saturate at 448: the
# reference rounds on the host with core.dtypes; the baseline must agree bit for bit.
FP8_REFERENCE = """\
import numpy as np

def make_inputs(shape, dtype, rng):
    return {"x": (rng.standard_normal(shape["n"]) * 300).astype(np.float32)}

def reference(inputs, shape, dtype):
    from workbench.core.dtypes import round_to_arg
    return {"y": round_to_arg(inputs["x"].astype(np.float32), "fp8_e4m3")}
"""


def _folder(tmp_path: Path, name: str, files: dict[str, str]) -> KernelFolder:
    path = tmp_path / name
    path.mkdir()
    for file, text in files.items():
        (path / file).write_text(text)
    return load_kernel_folder(path)


def _measure(folder: KernelFolder, configs: list[dict[str, int]]) -> dict[Config, object]:
    with LocalRunner(folder, settings=FAST) as runner:
        results = list(runner.measure([Candidate(Config(c), "small", "fp32") for c in configs]))
    return {r.config: r for r in results}


def test_integer_outputs_compare_as_integers_with_their_tolerance(tmp_path: Path) -> None:
    exact = _folder(tmp_path, "exact", {"template.cu": SHIFT_CU,
                                        "kernel.toml": shift_toml("")})
    within1 = _folder(tmp_path, "within1", {
        "template.cu": SHIFT_CU,
        "kernel.toml": shift_toml("tolerance = { atol = 1 }")})
    configs = [{"DELTA": 0, "WIDE_DELTA": 0}, {"DELTA": 1, "WIDE_DELTA": 0},
               {"DELTA": 2, "WIDE_DELTA": 0}, {"DELTA": 0, "WIDE_DELTA": 1}]
    got_exact = _measure(exact, configs)
    got_within1 = _measure(within1, configs)
    for label, got in (("exact", got_exact), ("atol=1", got_within1)):
        for c, r in got.items():
            print(f"[int] q {label:<6} {dict(c)}: {r.status.value} {r.reason}")  # type: ignore[attr-defined]
    s = {tuple(c.values()): r.status for c, r in got_exact.items()}  # type: ignore[attr-defined]
    s1 = {tuple(c.values()): r.status for c, r in got_within1.items()}  # type: ignore[attr-defined]
    assert s[(0, 0)] is Status.OK and s1[(0, 0)] is Status.OK
    assert s[(1, 0)] is Status.WRONG_RESULT and s1[(1, 0)] is Status.OK  # |Δq| = 1
    assert s[(2, 0)] is Status.WRONG_RESULT and s1[(2, 0)] is Status.WRONG_RESULT
    # 2**40 * w + 1 is the same float32 as 2**40 * w: only an integer compare sees it
    assert s[(0, 1)] is Status.WRONG_RESULT and s1[(0, 1)] is Status.WRONG_RESULT
    wide = got_exact[Config(DELTA=0, WIDE_DELTA=1)]
    assert "wide:" in wide.reason and "(integers)" in wide.reason  # type: ignore[attr-defined]


def test_fp8_inputs_and_outputs_match_host_rounding(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "fp8", {"template.cu": FP8_CU, "kernel.toml": FP8_TOML,
                                       "reference.py": FP8_REFERENCE})
    got = _measure(folder, [{"SCALE": 1}, {"SCALE": 2}])
    for c, r in got.items():
        print(f"[fp8] {dict(c)}: {r.status.value} {r.reason}")  # type: ignore[attr-defined]
    # the baseline passed reference.py's check (else measure raises BaselineError)
    assert got[Config(SCALE=1)].status is Status.OK  # type: ignore[attr-defined]
    assert got[Config(SCALE=2)].status is Status.WRONG_RESULT  # type: ignore[attr-defined]


QUANT = (Path(__file__).parents[1] / "kernels" / "quant.cu").read_text()


def test_gate_on_an_init_folder_repairs_until_correct(tmp_path: Path) -> None:
    from workbench.agent import propose_only
    from workbench.core.kernel_folder.scaffold import scaffold
    from workbench.llm.validation import gpu_correctness

    plan = scaffold(QUANT, "quant.cu", grid="rows")
    path = tmp_path / "quant"
    path.mkdir()
    (path / "baseline.cu").write_text(plan.baseline_source)
    toml = plan.kernel_toml()
    for old, new in (('small = { rows = "FILL_IN", cols = "FILL_IN" }', "small = { rows = 7, cols = 1000 }"),
                     ('large = { rows = "FILL_IN", cols = "FILL_IN" }', "large = { rows = 64, cols = 4096 }"),
                     ('shape = ["FILL_IN"]  # const float*', 'shape = ["rows", "cols"]  #'),
                     ('shape = ["FILL_IN"]  # int8_t*', 'shape = ["rows", "cols"]\ntolerance = { atol = 1 }  #'),
                     ('shape = ["FILL_IN"]  # float*', 'shape = ["rows"]  #')):
        toml = toml.replace(old, new)
    (path / "kernel.toml").write_text(toml)
    folder = load_kernel_folder(path)
    assert not folder.has_template
    proposed = propose_only(folder, None, correctness=gpu_correctness(folder))
    report = proposed.report
    assert report is not None and report.gate is not None and report.gate.on_gpu
    print(f"[gate] quant: {report.status}; {report.gate.verdict}")
    for line in report.messages():
        print(f"[gate]   {line}")
    template = proposed.template
    constraints = [c.text for c in template.constraints] if hasattr(template, "constraints") else []
    print(f"[gate]   constraints: {constraints}")
    assert report.status == "ok", report.messages()
    assert report.gate.verdict.startswith(
        f"correct at {report.gate.checked}/{report.gate.checked} configs checked")
