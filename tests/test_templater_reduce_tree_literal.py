"""A shared-memory tree whose start spells the block size as a number (issue 28): the
block-size lift rewrites ``for (int h = 128 / 2; ...)`` and ``for (s = 256/2; ...)`` with the
lifted size, or keeps the block size as written, naming the line, where a halving loop
starts from the literal in a shape it does not read as the tree.

Before, the literal stayed while the block size moved: at 64 threads the tree read slots
64 .. 127 that no thread wrote, at 256 it left half the block unadded. Three row sums of our
own (one block a row, a thread-stride walk whose step is the literal block size, no
``blockDim.x`` anywhere): the start declared in the loop as ``128 / 2``, assigned to an
``unsigned`` declared before as ``256/2`` with ``s /= 2``, and ``(64 >> 1)`` over a
``double`` buffer. Each runs on the host (every thread a coroutine, barriers as on the GPU) at
the default and both ends of the block sizes, the row sums within 1e-5 of numpy's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers_templater import COOPERATIVE_BLOCK, host_sample, lifted_template, run_merged_on_host

from workbench.templater import LiftedSource, lift_kernel

SPELLINGS: dict[str, tuple[int, str]] = {
    # the start declared in the loop, `128 / 2`, the thread index in a local
    "declared_div": (128, r"""
extern "C" __global__ void k(float* out, const float* x, int m) {
  __shared__ float part[128];
  const int t = threadIdx.x;
  const float* row = x + (size_t)blockIdx.x * m;
  float acc = 0.0f;
  for (int c = t; c < m; c += 128) acc += row[c];
  part[t] = acc;
  __syncthreads();
  for (int h = 128 / 2; h > 0; h >>= 1) {
    if (t < h) part[t] += part[t + h];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = part[0];
}
"""),
    # an unsigned counter declared before the loop and assigned `256/2`, halved by `/= 2`
    "assigned_unsigned": (256, r"""
extern "C" __global__ void k(float* out, const float* x, int m) {
  __shared__ float sh[256];
  unsigned s;
  float v = 0.0f;
  for (int col = threadIdx.x; col < m; col += 256) v = v + x[blockIdx.x * m + col];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (s = 256/2; s > 0; s /= 2) {
    if (threadIdx.x < s) sh[threadIdx.x] = sh[threadIdx.x] + sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}
"""),
    # `(64 >> 1)`, a double buffer, the row's start an int product
    "shift_double": (64, r"""
extern "C" __global__ void k(float* out, const float* x, int m) {
  __shared__ double red[64];
  const int lane = threadIdx.x;
  const int base = blockIdx.x * m;
  double a = 0.0;
  for (int j = lane; j < m; j += 64) a += x[base + j];
  red[lane] = a;
  __syncthreads();
  for (int w = (64 >> 1); w > 0; w >>= 1) {
    if (lane < w) red[lane] += red[lane + w];
    __syncthreads();
  }
  if (lane == 0) out[blockIdx.x] = (float)red[0];
}
"""),
}

# the tree a counted while from a literal half, halved by `>>= 1` (read as its for loop)
SPELLINGS["while_shift"] = (128, SPELLINGS["declared_div"][1].replace(
    "  for (int h = 128 / 2; h > 0; h >>= 1) {\n    if (t < h) part[t] += part[t + h];\n"
    "    __syncthreads();\n  }\n",
    "  int h = 64;\n  while (h > 0) {\n    if (t < h) part[t] += part[t + h];\n"
    "    __syncthreads();\n    h >>= 1;\n  }\n"))

_ROWS, _M = 3, 1000


def _lift(name: str) -> LiftedSource:
    block, source = SPELLINGS[name]
    return lift_kernel(source, entry="k", grid=["rows"], block=[str(block)],
                       scalars={"m": "m"})


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_tree_start_follows_the_lifted_block_size(name: str) -> None:
    lifted = _lift(name)
    assert lifted.block == ("BLOCK_THREADS",), lifted.notes
    spec = next(p.spec for p in lifted.params if p.name == "BLOCK_THREADS")
    assert spec["kind"] == "pow2", spec  # a halving tree: powers of two only
    block = SPELLINGS[name][0]
    assert not any(f"literal {block}" in n for n in lifted.notes), lifted.notes
    tree = next(line for line in lifted.source.splitlines() if "> 0;" in line)
    assert "BLOCK_THREADS" in tree and str(block) not in tree, tree


def test_a_halving_loop_it_cannot_read_keeps_the_block_size_with_the_line() -> None:
    # `h = h / 2` is no step a counted while takes: the while stays, the tree unread
    source = SPELLINGS["while_shift"][1].replace("    h >>= 1;\n", "    h = h / 2;\n")
    assert "while (h > 0)" in source and "h = h / 2;" in source
    lifted = lift_kernel(source, entry="k", grid=["rows"], block=["128"], scalars={"m": "m"})
    assert lifted.block == ("128",)
    found = [n for n in lifted.notes if n.startswith("BLOCK_THREADS: not applied")]
    assert found and "literal 64" in found[0] and "(line 10)" in found[0], lifted.notes


def _main(x: np.ndarray, block: int) -> str:
    values = ", ".join(float(v).hex() for v in x)
    return (f"\nstatic const float wb_x[] = {{{values}}};\n"
            "int main() {\n"
            f"  std::vector<float> out({_ROWS}, NAN);\n"
            f"  wb_launch({{{_ROWS}u, 1u, 1u}}, {{{block}u, 1u, 1u}}, [&] {{ "
            f"k(out.data(), wb_x, {_M}); }});\n"
            "  for (float v : out) std::printf(\"%a\\n\", (double)v);\n  return 0;\n}\n")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_lifted_tree_sums_rows_right_on_host(name: str, tmp_path: Path) -> None:
    template = lifted_template(_lift(name))
    rng = np.random.default_rng(11)
    x = (0.25 + rng.standard_normal(_ROWS * _M)).astype(np.float32)
    want = x.astype(np.float64).reshape(_ROWS, _M).sum(axis=1)
    env = {"rows": _ROWS, "m": _M}
    default = dict(template.default_config())
    ends = [{**default, "BLOCK_THREADS": 32}, {**default, "BLOCK_THREADS": 1024}]
    configs = [default, *host_sample(ends)]
    programs = []
    for config in configs:
        launch = template.launch_for(config, env)
        assert launch.block[0] == config["BLOCK_THREADS"]
        programs.append(COOPERATIVE_BLOCK + template.render(config, "fp32").source +
                        _main(x, launch.block[0]))
    printed = run_merged_on_host(tmp_path, name, COOPERATIVE_BLOCK, programs)
    for config, out in zip(configs, printed, strict=True):
        got = np.array([float.fromhex(v) for v in out.split()])
        assert np.allclose(got, want, rtol=1e-5, atol=1e-3), (config, got, want)
