"""The offline templater's defaults are the kernel as written: a lift whose defaults launch
other blocks or grids than the baseline is refused before anything is written, with or
without a GPU (found on the H100 with an unseen kernel: a matmul on 1-D blocks of
BLOCKSIZE * BLOCKSIZE threads got `#define BLOCKSIZE BLOCK_THREADS` from the named-constant
lifter, a default block of 32 instead of 1024, wrong at every config the gate ran)."""

from __future__ import annotations

import io
from pathlib import Path

from helpers_stage1_folders import scalar_arg, toml_arg, toml_head, write_folder

from workbench.cli import main

# 1-D blocks of TS * TS threads, each thread one output of a TS x TS tile (an NT product)
SQUARE_1D = """#define TS 16
extern "C" __global__ void mm(const float* a, const float* b, float* c, int n) {
  __shared__ float sa[TS][TS];
  __shared__ float sb[TS][TS];
  int ty = threadIdx.x / TS, tx = threadIdx.x % TS;
  int row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
  float acc = 0.0f;
  for (int t = 0; t < n; t += TS) {
    sa[ty][tx] = (row < n && t + tx < n) ? a[row * n + t + tx] : 0.0f;
    sb[ty][tx] = (blockIdx.x * TS + ty < n && t + tx < n) ? b[(blockIdx.x * TS + ty) * n + t + tx] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TS; ++k) acc += sa[ty][k] * sb[tx][k];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = acc;
}
"""


def _folder(tmp_path: Path) -> Path:
    toml = (toml_head("mm", "n = 40", "rtol = 1e-4, atol = 1e-5")
            + toml_arg("a", "f32", "in", shape=("n", "n"))
            + toml_arg("b", "f32", "in", shape=("n", "n"))
            + toml_arg("c", "f32", "out", shape=("n", "n")) + scalar_arg("n")
            + '[baseline]\nsource = "baseline.cu"\nentry = "mm"\n'
            + 'grid = ["ceil_div(n, 16)", "ceil_div(n, 16)"]\nblock = ["256"]\n')
    return write_folder(tmp_path / "mm", {"kernel.toml": toml, "baseline.cu": SQUARE_1D})


def test_a_lift_never_writes_defaults_that_launch_other_blocks(tmp_path: Path) -> None:
    """Either the 1-D register tile lifts the kernel (its defaults launch the block and grid
    as written: 256 threads, checked at every shape and dtype) or the propose is refused and
    nothing is written; never a written template launching other blocks."""
    from workbench.core.hardware import DEVICES
    from workbench.core.kernel_folder import load_kernel_folder
    from workbench.templater.offline import defaults_launch_problem

    folder = _folder(tmp_path)
    before = (folder / "kernel.toml").read_text()
    out = io.StringIO()
    code = main(["propose", str(folder), "--write", "--store", str(tmp_path / "wb.sqlite")],
                stdout=out)
    text = out.getvalue()
    if code == 0:
        kf = load_kernel_folder(folder)
        assert kf.template is not None and (folder / "template.cu").exists(), text
        assert defaults_launch_problem(kf.template, kf) is None
        spec = next(iter(DEVICES.values()))
        for shape in kf.shapes:
            launch = kf.template.launch_for(kf.template.default_config(),
                                            kf.env(shape, "fp32", spec))
            assert launch.block[0] * launch.block[1] * launch.block[2] == 256, launch
        return
    assert (folder / "kernel.toml").read_text() == before
    assert not (folder / "template.cu").exists()
    if "[defaults]" in text:  # the lift changed the block at its defaults: refused, named
        assert "the defaults must reproduce the kernel as written" in text
        assert "block [256, 1, 1]" in text and "nothing written" in text


SCALE = """extern "C" __global__ void scale(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
"""


def test_defaults_that_launch_other_threads_are_named(tmp_path: Path) -> None:
    from workbench.core.kernel_folder import load_kernel_folder
    from workbench.core.params import parameter_from_dict
    from workbench.core.template import KernelTemplate
    from workbench.templater.offline import defaults_launch_problem

    toml = (toml_head("scale", "n = 1000", "rtol = 1e-6, atol = 0")
            + toml_arg("y", "f32", "out", shape=("n",)) + toml_arg("x", "f32", "in", shape=("n",))
            + scalar_arg("n") + '[baseline]\nsource = "baseline.cu"\nentry = "scale"\n'
            + 'grid = ["ceil_div(n, 256)"]\nblock = ["256"]\n')
    folder = load_kernel_folder(write_folder(tmp_path / "scale",
                                             {"kernel.toml": toml, "baseline.cu": SCALE}))
    src = "#ifndef B\n#define B 128\n#endif\n" + SCALE

    def template(default: int) -> KernelTemplate:
        spec = {"kind": "choice", "values": [128, 256, 512], "default": default}
        return KernelTemplate.build(
            name="scale", source=src, entry="scale", params=[parameter_from_dict("B", spec)],
            constraints=[], grid=["ceil_div(n, B)"], block=["B"], known_names=["n"])

    wrong = defaults_launch_problem(template(128), folder)
    assert wrong is not None and "block [128, 1, 1]" in wrong and "block [256, 1, 1]" in wrong
    assert defaults_launch_problem(template(256), folder) is None
