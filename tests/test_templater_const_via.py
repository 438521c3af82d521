"""CONST_VIA and the items per thread and OUTER_THREADS (workbench/templater/const_via.py,
const_lanes.py, const_items.py; issue 28): ``__constant__`` arrays that the lanes of a warp
read at different indices, copied to shared memory once per block, and several outer
elements per thread of a lane-inner layout.

Spellings, each a kernel folder lifted by ``offline_template`` (the route ``propose`` takes):
held-back set 6's dwconv3_nhwc (a 1-D block of 32 channels x 8 pixels, ``% CHANNELS`` and
``/ CHANNELS``, #define sizes, early return), a per-channel scale and shift over a 2-D
block (threadIdx.x the channel, threadIdx.y the pixel, a ``constexpr`` channel count, the
work under an ``if``), and a 3-tap depthwise filter along a row over a 1-D block of 16 lanes
(two pixels a warp) x 8 written with ``& 15`` and ``>> 4``, its taps a 2-D constant array
indexed ``[tap][lane]``, a while loop over the taps. Each lifted template runs on the host
(g++, the cooperative block: shared memory and barriers as on the GPU) at its default, its
all-ends corners and a mixed config and prints what the kernel as written prints, bit for
bit; ptxas -v reports no spills at the default and the last corner. Refusals: a table read
at a warp-uniform index (no knob: constant memory broadcasts); an index read from memory
(the analysis cannot tell: offered, the note says so); a thread index read outside the layout (OUTER_THREADS refused with
the line, CONST_VIA still offered).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import corner_configs, end_configs, host_sample
from test_corpus_unseen3 import _SPILLS, _inputs, _ptxas_log, folder_runs

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.write_policy import write_file
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult

DWCONV = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen6" / \
    "dwconv3_nhwc"

SCALE_SHIFT = """
// y[p][c] = x[p][c] * scale[c] + shift[c] over an [npix, 32] channels-last tensor
constexpr int kChannels = 32;
__constant__ float scale[kChannels];
__constant__ float shift[kChannels];

extern "C" __global__ void k(float* y, const float* x, int npix) {
  const int ch = threadIdx.x;
  const int px = 4 * blockIdx.x + threadIdx.y;
  if (px < npix) {
    const size_t at = (size_t)px * kChannels + ch;
    y[at] = x[at] * scale[ch] + shift[ch];
  }
}
"""

ROW3 = """
// out[r][i][c] = bias + sum over t of w3[t][c] * in[r][i + t - 1][c], zero outside the row;
// 16 channels a pixel: a warp covers two pixels
#ifndef NCH
#define NCH 16
#endif
__constant__ float w3[3][NCH];

extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  int lane = threadIdx.x & 15;
  int pix = blockIdx.x * 8 + (threadIdx.x >> 4);
  int r = blockIdx.y;
  if (pix >= cols) return;
  float acc = 0.25f;
  int t = 0;
  while (t < 3) {
    int q = pix + t - 1;
    if (q >= 0 && q < cols) acc += w3[t][lane] * in[((size_t)r * cols + q) * NCH + lane];
    t++;
  }
  out[((size_t)r * cols + pix) * NCH + lane] = acc;
}
"""

UNIFORM = """
#define TERMS 6
__constant__ float coef[TERMS];

extern "C" __global__ void k(float* y, const float* x, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float v = x[i], acc = 0.0f;
  for (int j = TERMS - 1; j >= 0; --j) acc = acc * v + coef[j];
  y[i] = acc;
}
"""

FROM_MEMORY = """
__constant__ float lut[16];

extern "C" __global__ void k(float* y, const int* code, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) y[i] = lut[code[i] & 15];
}
"""

STRAY_LANE = """
#define C 32
__constant__ float gain[C];

extern "C" __global__ void k(float* y, const float* x, int npix) {
  const int c = threadIdx.x % C;
  const int p = blockIdx.x * 4 + threadIdx.x / C;
  if (p >= npix || threadIdx.x == 5) return;
  y[p * C + c] = gain[c] * x[p * C + c];
}
"""


def _toml(entry: str, grid: list[str], block: list[str], args: list[tuple[str, str, str, Any]],
          shapes: dict[str, int], constants: list[tuple[str, list[int]]]) -> str:
    lines = [f'name = "{entry}"', 'dtypes = ["fp32"]', 'check_shape = "small"', "[shapes]",
             "small = { " + ", ".join(f"{k} = {v}" for k, v in shapes.items()) + " }",
             "[tolerances]", "fp32 = { rtol = 0, atol = 0 }"]
    for name, dtype, role, extra in args:
        lines += ["[[args]]", f'name = "{name}"', f'dtype = "{dtype}"', f'role = "{role}"']
        lines.append(f'value = "{extra}"' if role == "scalar" else f"shape = {extra}")
    for name, shape in constants:
        lines += ["[[constants]]", f'name = "{name}"', 'dtype = "f32"', f"shape = {shape}"]
    lines += ["[baseline]", 'source = "baseline.cu"', 'entry = "k"', f"grid = {grid}",
              f"block = {block}"]
    return "\n".join(lines).replace("'", '"') + "\n"


#: name -> (source, grid, block, args, check-shape sizes, constants)
FOLDERS: dict[str, tuple[str, list[str], list[str], list[tuple[str, str, str, Any]],
                         dict[str, int], list[tuple[str, list[int]]]]] = {
    "scale_shift": (SCALE_SHIFT, ["ceil_div(npix, 4)"], ["32", "4"],
                    [("y", "f32", "out", ["npix", 32]), ("x", "f32", "in", ["npix", 32]),
                     ("npix", "i32", "scalar", "npix")], {"npix": 37},
                    [("scale", [32]), ("shift", [32])]),
    "row3": (ROW3, ["ceil_div(cols, 8)", "rows"], ["128"],
             [("out", "f32", "out", ["rows", "cols", 16]),
              ("in", "f32", "in", ["rows", "cols", 16]),
              ("rows", "i32", "scalar", "rows"), ("cols", "i32", "scalar", "cols")],
             {"rows": 3, "cols": 21}, [("w3", [3, 16])]),
    "uniform": (UNIFORM, ["ceil_div(n, 128)"], ["128"],
                [("y", "f32", "out", ["n"]), ("x", "f32", "in", ["n"]),
                 ("n", "i32", "scalar", "n")], {"n": 300}, []),
    "from_memory": (FROM_MEMORY, ["ceil_div(n, 128)"], ["128"],
                    [("y", "f32", "out", ["n"]), ("code", "i32", "in", ["n"]),
                     ("n", "i32", "scalar", "n")], {"n": 300}, []),
    "stray_lane": (STRAY_LANE, ["ceil_div(npix, 4)"], ["128"],
                   [("y", "f32", "out", ["npix", 32]), ("x", "f32", "in", ["npix", 32]),
                    ("npix", "i32", "scalar", "npix")], {"npix": 11}, []),
}


def _folder(name: str, root: Path, source: str | None = None,
            constants: list[tuple[str, list[int]]] | None = None) -> KernelFolder:
    """The spelling ``name`` as a kernel folder under ``root`` (dwconv3_nhwc: the corpus's)."""
    if name == "dwconv3_nhwc":
        return load_kernel_folder(DWCONV)
    written, grid, block, args, shapes, declared = FOLDERS[name]
    return write_folder(root / name, written if source is None else source, grid, block,
                        args, shapes, declared if constants is None else constants)


def write_folder(folder: Path, source: str, grid: list[str], block: list[str],
                 args: list[tuple[str, str, str, Any]], shapes: dict[str, int],
                 constants: list[tuple[str, list[int]]]) -> KernelFolder:
    """A kernel folder (entry ``k``, fp32, bit-exact tolerance) written and loaded."""
    folder.mkdir(parents=True, exist_ok=True)
    write_file(folder, folder / "baseline.cu", source, overwrite=True)
    write_file(folder, folder / "kernel.toml",
               _toml("k", grid, block, args, shapes, constants), overwrite=True)
    return load_kernel_folder(folder)


def _lift(name: str, root: Path) -> tuple[KernelFolder, TemplaterResult]:
    kf = _folder(name, root)
    return kf, offline_template(kf)


def _knobs(result: TemplaterResult) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in result.lifted.params}


LIFTED = ["dwconv3_nhwc", "scale_shift", "row3"]


@pytest.mark.parametrize("name", LIFTED)
def test_lane_indexed_constant_arrays_get_the_shared_copy_knob(name: str,
                                                               tmp_path: Path) -> None:
    _kf, result = _lift(name, tmp_path)
    knobs = _knobs(result)
    assert knobs["CONST_VIA"]["values"] == [0, 1] and knobs["CONST_VIA"]["default"] == 0
    source = result.lifted.source
    body = source[source.index('extern "C"'):]
    # the copy is the body's first statement, one barrier, before any return
    assert body.index("#if CONST_VIA == 1") < body.index("__syncthreads();") < \
        min(body.index(w) for w in ("return", "continue", "if (") if w in body)
    assert body.count("__syncthreads();") == 1
    applied = [n for n in result.notes if n.startswith("CONST_VIA: applied")]
    assert applied and all("varies over a warp's lanes" in n for n in applied)
    # the module globals stay the inputs the runner uploads
    for name_ in ("taps", "bias", "scale", "shift", "w3"):
        if f"__constant__ float {name_}[" in _folder(name, tmp_path).baseline.source:
            assert f"__constant__ float {name_}[" in source


def test_a_warp_uniform_index_keeps_constant_memory(tmp_path: Path) -> None:
    _kf, result = _lift("uniform", tmp_path)
    assert "CONST_VIA" not in _knobs(result)
    assert any(n.startswith("CONST_VIA: not applied: coef is read at a warp-uniform index")
               and "(line 9)" in n for n in result.notes), result.notes


def test_an_index_read_from_memory_is_offered_with_the_line(tmp_path: Path) -> None:
    """The analysis cannot tell whether the lanes agree: the copy is correctness-neutral, so
    the knob is offered (default: constant memory, as written) for the search to decide, the
    note naming the line and the value not followed."""
    _kf, result = _lift("from_memory", tmp_path)
    knobs = _knobs(result)
    assert knobs["CONST_VIA"]["values"] == [0, 1] and knobs["CONST_VIA"]["default"] == 0
    note = next(n for n in result.notes if n.startswith("CONST_VIA"))
    assert note.startswith("CONST_VIA: applied: cannot tell whether the lanes of a warp "
                           "read lut")
    assert "a value read from memory" in note and "(line 6)" in note


def test_a_shared_copy_past_48_kib_is_refused(tmp_path: Path) -> None:
    """A 13,000-float table (52,000 bytes) fits constant memory, not static shared memory."""
    source = FOLDERS["stray_lane"][0].replace("gain[C]", "gain[13000]")
    kf = _folder("stray_lane", tmp_path, source=source, constants=[("gain", [13000])])
    result = offline_template(kf)
    assert "CONST_VIA" not in _knobs(result)
    note = next(n for n in result.notes if n.startswith("CONST_VIA"))
    assert "(52000 bytes)" in note and "passes 49152" in note


# -- the host: bit for bit --------------------------------------------------------------


def assert_prints_as_written(kf: KernelFolder, result: TemplaterResult,
                             configs: list[dict[str, Any]], work: Path) -> None:
    """Each config of ``result``'s template prints, bit for bit, what ``kf``'s kernel as
    written prints on the check shape's inputs (g++, the cooperative block; all of them
    from one merged host program)."""
    env = kf.env(kf.check_shape, "fp32")
    template = result.template
    for config in configs:
        assert template.space(env).rejection(config) is None, config
    runs = [(kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            *((template.render(c, "fp32").source, template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), work)
    assert all(not np.isnan(v).any() for v in want.values())
    for config, outputs in zip(configs, got, strict=True):
        for arg, values in want.items():
            assert np.array_equal(outputs[arg].view(np.uint32), values.view(np.uint32)), \
                f"{kf.name} {arg} at {config}"


@pytest.mark.timeout(240)
def test_dwconv3_prints_what_the_kernel_as_written_prints(tmp_path: Path) -> None:
    """At the default, the last all-ends corner and the constant read as written with the
    taps in registers over two pixels a thread and 64 threads a block."""
    kf, result = _lift("dwconv3_nhwc", tmp_path)
    template = result.template
    env = kf.env(kf.check_shape, "fp32")
    mixed = {**template.default_config(), "CONST_VIA": 0, "LANE_REGS": 1,
             "ITEMS_PER_THREAD": 2, "OUTER_THREADS": 2}
    configs = [*host_sample(corner_configs(template, env)), mixed]
    assert_prints_as_written(kf, result, configs, tmp_path)


def test_the_all_ends_corners_flip_every_knob(tmp_path: Path) -> None:
    """The host check's last corner differs from the default in every lifted knob."""
    kf, result = _lift("dwconv3_nhwc", tmp_path)
    ends = end_configs(result.template, kf.env(kf.check_shape, "fp32"))
    default = result.template.default_config()
    assert {k for k in default if default[k] != ends[-1][k]} >= {
        "CONST_VIA", "ITEMS_PER_THREAD", "OUTER_THREADS", "LANE_REGS"}


# -- ptxas -------------------------------------------------------------------------------


def assert_corners_do_not_spill(kf: KernelFolder, result: TemplaterResult,
                                work: Path) -> None:
    template = result.template
    corners = corner_configs(template, kf.env(kf.check_shape, "fp32"))
    for i, config in enumerate([corners[0], corners[-1]]):
        log = _ptxas_log(template.render(config, "fp32").source, work, f"c{i}")
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{config}:\n{log}"
        assert re.search(r"\b0 bytes stack frame", log), f"{config}:\n{log}"


@needs_nvcc
@pytest.mark.timeout(300)
def test_dwconv3_corners_compile_without_spills(tmp_path: Path) -> None:
    kf, result = _lift("dwconv3_nhwc", tmp_path)
    assert_corners_do_not_spill(kf, result, tmp_path)
