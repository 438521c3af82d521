"""The vector family's scalar tail (:mod:`.vector_tail`): at a bound that is no multiple of
VEC, the thread whose vector would cross it takes the elements left one by one through the
kernel's own statements, so the space keeps every VEC at every n (no ``n % VEC == 0``).

Spellings: a guarded one-element region (``if (i < n) {..}``, float: VEC 1, 2, 4), the exit
form (``if (i >= n) return; ..``, unsigned short: VEC up to 8), a grid-stride loop (float, a
fixed grid of 3 blocks: several rounds; and with no ``__restrict__``: the vector path behind
the run-time overlap test), a block-stride loop dealt over ROW_SPLIT blocks,
the index also read as a value and an input read at another place, and 64-bit integers
(VEC 1, 2). Each lift runs on the host (g++, every thread of the launch in turn) at every
VEC its space allows, one and four items a thread, at sizes n from 1 to 1029 that leave
every tail length (n below VEC included), and must write bit for bit what the kernel as
written writes, and nothing past n. A lift whose tail is broken on purpose (one element
short) must fail the same comparison.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import lifted_template, run_merged_on_host
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

SIZES = (1, 2, 3, 5, 6, 7, 9, 31, 257, 1029)
PAD = 16  # output elements past n, each left at the sentinel

#: name -> (source, element type, grid rule)
KERNELS: dict[str, tuple[str, str, str]] = {
    "guarded_f32": ("""
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ a,
                             const float* __restrict__ b, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) {
    const float p = a[i] * b[i];
    y[i] = p + 0.5f * a[i];
  }
}
""", "float", "ceil_div(n, 256)"),
    "exit_u16": ("""
extern "C" __global__ void k(unsigned short* __restrict__ y, const unsigned short* __restrict__ a,
                             const unsigned short* __restrict__ b, int n) {
  const int i = static_cast<int>(blockIdx.x) * 128 + static_cast<int>(threadIdx.x);
  if (i >= n) return;
  const unsigned int s = a[i] * 3u + b[i];
  y[i] = static_cast<unsigned short>(s ^ (s >> 5));
}
""", "unsigned short", "ceil_div(n, 128)"),
    "gridstride_f32": ("""
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ a,
                             const float* __restrict__ b, int n) {
  for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += 256 * gridDim.x)
    y[i] = a[i] * 2.0f - b[i];
}
""", "float", "3"),
    "aliased_gridstride_f32": ("""
extern "C" __global__ void k(float* y, const float* a, const float* b, int n) {
  for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += 256 * gridDim.x)
    y[i] = a[i] - 0.25f * b[i];
}
""", "float", "3"),
    "rowsplit_f32": ("""
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ a,
                             const float* __restrict__ b, int n) {
  for (int i = threadIdx.x; i < n; i += 256) y[i] = a[i] * 0.5f + b[i];
}
""", "float", "1"),
    "value_read_f32": ("""
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ a,
                             const float* __restrict__ b, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  y[i] = a[i] + b[(i * 7) % n] + (float)(i % 5);
}
""", "float", "ceil_div(n, 256)"),
    "exit_i64": ("""
extern "C" __global__ void k(long long* __restrict__ y, const long long* __restrict__ a,
                             const long long* __restrict__ b, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  y[i] = a[i] * 3 - b[i] * (long long)i;
}
""", "long long", "ceil_div(n, 256)"),
}

PREFIX = r"""#include <cstdio>
#include <cstring>
#include <vector>
struct wb_dim3 { unsigned x, y, z; };
static wb_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __restrict__
#define __forceinline__ inline
#define __launch_bounds__(...)
"""


def _lift(name: str) -> LiftedSource:
    source, _elem, grid = KERNELS[name]
    block = "128" if name == "exit_u16" else "256"
    return lift_kernel(source, entry="k", grid=[grid], block=[block], scalars={"n": "n"})


Launch = tuple[int, int, int, int]  # n, grid x, grid y, block


def _program(source: str, elem: str, launches: list[Launch]) -> str:
    """Runs ``source``'s k at each (n, grid x, grid y, block) of ``launches`` on inputs of n
    elements and prints the n + PAD output elements' bytes (the output starts at a
    sentinel)."""
    runs = "".join(f"  run({n}, {gx}, {gy}, {block});\n" for n, gx, gy, block in launches)
    return (PREFIX + source + f"""
static void run(int n, unsigned grid, unsigned rows, unsigned block) {{
  std::vector<{elem}> a(n), b(n), y(n + {PAD});
  for (int j = 0; j < n; ++j) {{
    a[j] = ({elem})((j * 37 + 11) % 251) / ({elem})4;
    b[j] = ({elem})((j * 53 + 7) % 241) / ({elem})8;
  }}
  std::memset(y.data(), 0x5a, y.size() * sizeof({elem}));
  gridDim = {{grid, rows, 1}}; blockDim = {{block, 1, 1}};
  for (unsigned r = 0; r < rows; ++r)
    for (unsigned g = 0; g < grid; ++g) for (unsigned t = 0; t < block; ++t) {{
      blockIdx = {{g, r, 0}}; threadIdx = {{t, 0, 0}};
      k(y.data(), a.data(), b.data(), n);
    }}
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(y.data());
  std::printf("n=%d ", n);
  for (size_t j = 0; j < y.size() * sizeof({elem}); ++j) std::printf("%02x", bytes[j]);
  std::printf("\\n");
}}

int main() {{
{runs}  return 0;
}}
""")


def _configs(template: KernelTemplate, sizes: tuple[int, ...] = SIZES) -> list[dict[str, Any]]:
    """Every VEC the space allows at one and four items a thread (a block of 64: several
    blocks; a row split over 3 blocks where the lift has one), each valid at every size."""
    default = dict(template.default_config())
    vecs = next(p.values() for p in template.params if p.name == "VEC")
    out = []
    for vec in vecs:
        for items in (1, 4):
            config = {**default, "VEC": vec, "ITEMS_PER_THREAD": items, "BLOCK_THREADS": 64,
                      **({"ROW_SPLIT": 4} if "ROW_SPLIT" in default else {})}
            if all(template.space({"n": n}).rejection(config) is None for n in sizes):
                out.append(config)
    return out


def _launches(template: KernelTemplate, config: dict[str, Any]) -> list[Launch]:
    out = []
    for n in SIZES:
        launch = template.launch_for(config, {"n": n})
        rows = launch.grid[1] if len(launch.grid) > 1 else 1
        out.append((n, launch.grid[0], rows, launch.block[0]))
    return out


def _outputs(name: str, sources: list[tuple[str, list[Launch]]],
             work: Path) -> list[str]:
    elem = KERNELS[name][1]
    programs = [_program(source, elem, launches) for source, launches in sources]
    return run_merged_on_host(work, name, PREFIX, programs)


def _written(name: str) -> KernelTemplate:
    source, _elem, grid = KERNELS[name]
    block = "128" if name == "exit_u16" else "256"
    return KernelTemplate.build(name="k", source=source, entry="k", grid=[grid], block=[block])


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_vec_is_kept_at_a_ragged_bound(name: str) -> None:
    lifted = _lift(name)
    assert "VEC" in {p.name for p in lifted.params}, lifted.notes
    assert not any(c.startswith(("n % VEC", "(n) % VEC")) for c in lifted.constraints), \
        lifted.constraints
    assert "the vector would cross n: one by one" in lifted.source
    template = lifted_template(lifted)
    vecs = {c["VEC"] for c in _configs(template)}
    widest = {"unsigned short": 8, "long long": 2}.get(KERNELS[name][1], 4)
    assert vecs == {v for v in (1, 2, 4, 8) if v <= widest}, vecs


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_vec_writes_what_the_kernel_writes_at_every_size(name: str) -> None:
    template = lifted_template(_lift(name))
    written = _written(name)
    configs = _configs(template)
    sources = [(written.source, _launches(written, {}))]
    sources += [(template.render(c, "fp32").source, _launches(template, c)) for c in configs]
    with tempfile.TemporaryDirectory() as tmp:
        want, *got = _outputs(name, sources, Path(tmp))
        assert want.count("n=") == len(SIZES) and "5a5a" in want  # the pad stays unwritten
        for config, printed in zip(configs, got, strict=True):
            assert printed == want, f"{name} at {config}"


def test_a_broken_tail_is_caught() -> None:
    """The comparison above sees a tail one element short: the lift's tail rewritten to stop
    before the bound's last element writes a different output at a ragged n."""
    name = "guarded_f32"
    template = lifted_template(_lift(name))
    config = next(c for c in _configs(template) if c["VEC"] == 4)
    source = template.render(config, "fp32").source
    broken = source.replace("wb_tail < n;", "wb_tail < n - 1;")
    assert broken != source
    written = _written(name)
    with tempfile.TemporaryDirectory() as tmp:
        want, good, bad = _outputs(name, [(written.source, _launches(written, {})),
                                          (source, _launches(template, config)),
                                          (broken, _launches(template, config))], Path(tmp))
    assert good == want
    assert bad != want


#: Corpus folders whose lift now takes a tail, each at a ragged n of its check shape (gelu's
#: own 1032 is a multiple of 8, where the tail never runs). (dequant_int8's int8 input is
#: not one the folder harness fills; sum_reduce's total is compared by a tolerance, its
#: order of sums being VEC's own.)
RAGGED = {"corpus/gelu": ("small = { n = 1032 }", "small = { n = 1029 }")}


@pytest.mark.parametrize("folder", sorted(RAGGED))
def test_corpus_lifts_write_what_the_kernel_writes_at_a_ragged_n(
        folder: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    from held_back_harness import BENCHMARKS, same_as_written

    from workbench.core.kernel_folder import load_kernel_folder
    from workbench.templater import offline_template

    copy = tmp_path / Path(folder).name
    shutil.copytree(BENCHMARKS / folder, copy)
    toml = copy / "kernel.toml"
    was, ragged = RAGGED[folder]
    assert was in toml.read_text()
    toml.write_text(toml.read_text().replace(was, ragged))
    kf = load_kernel_folder(copy)
    template = offline_template(kf).template
    configs = _configs(template, (kf.env(kf.check_shape, "fp32")["n"],))
    assert {c["VEC"] for c in configs} == {1, 2, 4}, configs
    assert same_as_written(kf, template, configs, lambda source: source, tmp_path / "runs",
                           host_flags) == len(configs)
