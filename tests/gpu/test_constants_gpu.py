"""GPU tier (issue 28, item 2): module globals are inputs uploaded before every run, and
outputs whose layout changes with the config are compared by their sum or by reference.py
verify(). Run on the GPU machine:

    python -m pytest -q -p no:cacheprovider tests/gpu/test_constants_gpu.py

Without the upload, a ``__constant__`` table stays zero and a config that reads the wrong
entry compares zeros with zeros (ok); these tests fail then.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers_stage1_folders import scalar_arg, toml_arg, toml_head, write_folder

from workbench.core.errors import WorkerError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, Config, Status, TrialResult
from workbench.engine.bench import BenchSettings
from workbench.engine.runner import LocalRunner

pytestmark = pytest.mark.gpu

FAST = BenchSettings(warmup_ms=0.5, min_reps=3, max_reps=10, max_time_s=0.02, timeout_s=4.0)
CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus_compute"

TABLE_CU = """\
#ifndef SHIFT
#define SHIFT 0
#endif
#define K 7
__constant__ float coef[K * 2];
extern "C" __global__ void table(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * coef[(i + SHIFT) % (K * 2)];
}
"""

TABLE_REFERENCE = """\
import numpy as np

def reference(inputs, shape, dtype):
    n = shape["n"]
    return {"y": inputs["x"] * inputs["coef"][np.arange(n) % 14]}
"""


def table_toml(declared: bool) -> str:
    constants = '[[constants]]\nname = "coef"\ndtype = "f32"\nshape = ["14"]\n' if declared else ""
    launch = 'source = "template.cu"\nentry = "table"\ngrid = ["ceil_div(n, 256)"]\nblock = ["256"]'
    return (toml_head("table", "n = 4000", "rtol = 1e-6, atol = 1e-6")
            + toml_arg("x", "f32", "in", shape=("n",)) + toml_arg("y", "f32", "out", shape=("n",))
            + scalar_arg("n") + f"""{constants}
[baseline]
{launch}
[template]
{launch}
[template.params.SHIFT]
kind = "choice"
values = [0, 1, 14]
default = 0
""")


PARTIAL_CU = """\
#ifndef BLOCKS
#define BLOCKS 64
#endif
#ifndef SKIP
#define SKIP 0
#endif
extern "C" __global__ void partial(float* partials, const float* x, int n) {
  __shared__ float buf[128];
  float s = 0.0f;
  for (int i = blockIdx.x * 128 + threadIdx.x; i < n - SKIP; i += 128 * BLOCKS) s += x[i];
  buf[threadIdx.x] = s;
  __syncthreads();
  for (int k = 64; k > 0; k >>= 1) {
    if (threadIdx.x < k) buf[threadIdx.x] += buf[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = buf[0];
}
"""

PARTIAL_REFERENCE = """\
import numpy as np

def make_inputs(shape, dtype, rng):
    n = shape["n"]
    return {"x": (rng.integers(1, 9, size=n) * rng.choice([-1, 1], size=n)).astype(np.float32)}

def verify(outputs, golden, shape):
    got = outputs["partials"][~np.isnan(outputs["partials"])].sum()
    want = golden["partials"][~np.isnan(golden["partials"])].sum()
    assert got == want, f"partials add up to {got}; expected {want}"
"""


def partial_toml() -> str:
    launch = 'source = "template.cu"\nentry = "partial"\ngrid = ["BLOCKS"]\nblock = ["128"]'
    base = 'source = "template.cu"\nentry = "partial"\ngrid = ["64"]\nblock = ["128"]'
    return (toml_head("partial", "n = 30011", "rtol = 0.0, atol = 0.01")
            + toml_arg("partials", "f32", "out", shape=("64",), compare="sum")
            + toml_arg("x", "f32", "in", shape=("n",)) + scalar_arg("n") + f"""\
[baseline]
{base}
[template]
{launch}
[template.params.BLOCKS]
kind = "choice"
values = [64, 32, 7]
default = 64
[template.params.SKIP]
kind = "choice"
values = [0, 1]
default = 0
""")


def _folder(tmp_path: Path, name: str, files: dict[str, str]) -> KernelFolder:
    return load_kernel_folder(write_folder(tmp_path / name, files))


def _measure(folder: KernelFolder, configs: list[Any]) -> dict[Config, TrialResult]:
    with LocalRunner(folder, settings=FAST) as runner:
        results = list(runner.measure([Candidate(Config(c), folder.check_shape, "fp32")
                                       for c in configs]))
    for r in results:
        print(f"[{folder.name}] {dict(r.config)}: {r.status.value} {r.reason}")
    return {r.config: r for r in results}


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "derived"])
def test_constant_table_is_uploaded_so_a_wrong_read_is_wrong(tmp_path: Path,
                                                             declared: bool) -> None:
    folder = _folder(tmp_path, "table", {"template.cu": TABLE_CU,
                                         "kernel.toml": table_toml(declared),
                                         "reference.py": TABLE_REFERENCE})
    got = _measure(folder, [{"SHIFT": 0}, {"SHIFT": 1}, {"SHIFT": 14}])
    assert got[Config(SHIFT=0)].status is Status.OK
    assert got[Config(SHIFT=14)].status is Status.OK  # the same entry: (i + 14) % 14
    assert got[Config(SHIFT=1)].status is Status.WRONG_RESULT  # zeros would compare equal


def test_partial_sums_compare_by_total_and_verify(tmp_path: Path) -> None:
    by_sum = _folder(tmp_path, "by_sum", {"template.cu": PARTIAL_CU,
                                          "kernel.toml": partial_toml()})
    by_verify = _folder(tmp_path, "by_verify", {"template.cu": PARTIAL_CU,
                                                "kernel.toml": partial_toml(),
                                                "reference.py": PARTIAL_REFERENCE})
    configs = [{"BLOCKS": 64, "SKIP": 0}, {"BLOCKS": 32, "SKIP": 0}, {"BLOCKS": 7, "SKIP": 0},
               {"BLOCKS": 32, "SKIP": 1}]
    for folder in (by_sum, by_verify):
        got = _measure(folder, configs)
        for blocks in (64, 32, 7):  # fewer blocks: unwritten slots, the same total
            assert got[Config(BLOCKS=blocks, SKIP=0)].status is Status.OK, folder.name
        wrong = got[Config(BLOCKS=32, SKIP=1)]
        assert wrong.status is Status.WRONG_RESULT
        assert ("verify()" in wrong.reason) == (folder is by_verify), wrong.reason


def test_a_verify_that_raises_another_exception_is_an_error(tmp_path: Path) -> None:
    broken = PARTIAL_REFERENCE.replace('    assert got == want', '    raise KeyError("oops")\n'
                                       '    assert got == want')
    folder = _folder(tmp_path, "broken", {"template.cu": PARTIAL_CU,
                                          "kernel.toml": partial_toml(),
                                          "reference.py": broken})
    with pytest.raises(WorkerError, match=r"verify\(\) raised KeyError"):
        _measure(folder, [{"BLOCKS": 64, "SKIP": 0}])


@pytest.mark.parametrize("name", ["conv2d_const", "percell_compute", "partial_sum"])
def test_corpus_expert_space_verifies_with_its_inputs(name: str) -> None:
    """The corpus folders with constants or partial sums: the expert's defaults and a few
    configs of its space are ok (each uploaded its table; partial sums by verify())."""
    folder = load_kernel_folder(CORPUS / name / "expert")
    space = list(folder.space(folder.check_shape, "fp32"))
    picks = [folder.template.default_config(), *space[:: max(1, len(space) // 4)][:4]]
    got = _measure(folder, [dict(c) for c in dict.fromkeys(picks)])
    assert all(r.status is Status.OK for r in got.values()), \
        {str(dict(c)): r.reason for c, r in got.items() if r.status is not Status.OK}
