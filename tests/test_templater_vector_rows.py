"""VEC along x for 2-D blocks (:mod:`workbench.templater.vector_rows`): nv12_to_rgba (set 23)
and two kernels of this file's own (an int 2-D elementwise with a row pitch and a ragged
width: the scalar tail; a u8 blend through row pointers with no ``__restrict__``) lift VEC
beside BLOCK_X, BLOCK_Y, ITEMS_X and ITEMS_Y, and every config run on the host writes what
the kernel as written writes, bit for bit; near misses are refused with their line."""

from __future__ import annotations

import shutil
from pathlib import Path

import held_back_unseen23
import pytest
from held_back_harness import same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

pytestmark = pytest.mark.timeout(1200)
NV12 = held_back_unseen23.SET.root / "nv12_to_rgba"
ROW_KNOBS = {"BLOCK_X", "BLOCK_Y", "VEC", "ITEMS_X", "ITEMS_Y"}

PITCHED = """extern "C" __global__ void pitched(int* __restrict__ out,
    const int* __restrict__ x, const int* __restrict__ y, int w, int h, int pitch)
{
  int col = blockIdx.x * 16 + threadIdx.x;
  int row = blockIdx.y * 16 + threadIdx.y;
  if (col >= w || row >= h) return;
  out[row * pitch + col] = 3 * x[row * pitch + col] - y[row * pitch + col] + col * col;
}
"""

BLEND = """extern "C" __global__ void blend(unsigned char* dst, const unsigned char* a,
                                   const unsigned char* b, int w, int h, int pitch)
{
  unsigned x = blockIdx.x * 32u + threadIdx.x;
  unsigned y = blockIdx.y * 4u + threadIdx.y;
  if (y >= (unsigned)h || x >= (unsigned)w)
    return;
  const unsigned char* ra = a + y * pitch;
  const unsigned char* rb = b + y * pitch;
  unsigned char* rd = dst + y * pitch;
  rd[x] = (unsigned char)((ra[x] * 3 + rb[x] + (x & 1u)) >> 2);
}
"""

TOML = """name = "{name}"
description = "a 2-D kernel of tests/test_templater_vector_rows.py"
dtypes = ["fp32"]
check_shape = "small"
[shapes]
small = {{ w = {w}, h = {h}, pitch = {pitch} }}
[tolerances]
fp32 = {{ rtol = 0.0, atol = 0.0 }}
{args}
[[args]]
name = "w"
dtype = "i32"
role = "scalar"
value = "w"
[[args]]
name = "h"
dtype = "i32"
role = "scalar"
value = "h"
[[args]]
name = "pitch"
dtype = "i32"
role = "scalar"
value = "pitch"
[baseline]
source = "baseline.cu"
entry = "{name}"
grid = ["ceil_div(w, {bx})", "ceil_div(h, {by})"]
block = ["{bx}", "{by}"]
"""


def _arg(name: str, dtype: str, role: str) -> str:
    return f'[[args]]\nname = "{name}"\ndtype = "{dtype}"\nrole = "{role}"\n' \
           f'shape = ["h", "pitch"]\n'


def _folder(root: Path, name: str, source: str, args: str, bx: int, by: int,
            sizes: tuple[int, int, int]) -> KernelFolder:
    folder = root / name
    folder.mkdir(parents=True)
    w, h, pitch = sizes
    (folder / "kernel.toml").write_text(TOML.format(name=name, w=w, h=h, pitch=pitch,
                                                    args=args, bx=bx, by=by))
    (folder / "baseline.cu").write_text(source)
    (folder / f"{name}.cu").write_text(source)
    (folder / "reference.py").write_text(
        "def reference(inputs, shape, dtype):\n    raise NotImplementedError\n")
    return load_kernel_folder(folder)


def _pitched(root: Path) -> KernelFolder:
    # int: the pitch's padding no thread writes compares equal (a float's would be NaN)
    args = _arg("out", "i32", "out") + _arg("x", "i32", "in") + _arg("y", "i32", "in")
    return _folder(root, "pitched", PITCHED, args, 16, 16, (45, 13, 48))


def _blend(root: Path) -> KernelFolder:
    args = _arg("dst", "u8", "out") + _arg("a", "u8", "in") + _arg("b", "u8", "in")
    return _folder(root, "blend", BLEND, args, 32, 4, (45, 11, 64))


def _nv12(root: Path, sizes: str) -> KernelFolder:
    """nv12_to_rgba at another check shape (``w = 44``: every VEC its store allows)."""
    copy = root / "nv12_to_rgba"
    shutil.copytree(NV12, copy)
    toml = copy / "kernel.toml"
    toml.write_text(toml.read_text().replace("small = { w = 46, h = 38, pitch = 64 }",
                                             f"small = {{ {sizes} }}"))
    return load_kernel_folder(copy)


def test_nv12_lifts_vec_along_x_beside_its_items() -> None:
    result = offline_template(load_kernel_folder(NV12))
    knobs = {p.name for p in result.lifted.params}
    assert knobs >= ROW_KNOBS, result.notes
    assert {"pitch % VEC == 0", "w % VEC == 0", "VEC * 4 <= 16"} <= \
        set(result.lifted.constraints)
    assert result.lifted.grid[0] == "ceil_div(ceil_div(w, VEC), BLOCK_X * ITEMS_X)"
    source = result.template.source
    assert "WbVec<uchar4, VEC>" in source and "(luma + py * pitch)[px]" in source
    assert "((px + wb_v) & ~1u)" in source  # the chroma pair: the lane's own pixel's


def test_own_kernels_lift_the_same_way(tmp_path: Path) -> None:
    for kf in (_pitched(tmp_path), _blend(tmp_path)):
        result = offline_template(kf)
        assert {p.name for p in result.lifted.params} >= ROW_KNOBS, result.notes
        assert "one by one" in result.template.source
        assert "w % VEC == 0" not in result.lifted.constraints  # the ragged row: a tail


def test_an_exit_on_the_threads_place_along_x_is_refused() -> None:
    source = PITCHED.replace("if (col >= w || row >= h) return;",
                             "if (col >= w || row >= h || threadIdx.x == 3) return;")
    lifted = lift_kernel(source, entry="pitched", grid=["ceil_div(w, 16)", "ceil_div(h, 16)"],
                         block=["16", "16"], scalars={"w": "w", "h": "h", "pitch": "pitch"})
    assert "VEC" not in {p.name for p in lifted.params}
    assert any("read `threadIdx.x`" in n and "(line 6)" in n for n in lifted.notes), \
        lifted.notes


@pytest.mark.parametrize(("line", "why"), [
    ("out[row * pitch + col] = x[row * pitch + col] + (int)threadIdx.x;",
     "read `threadIdx.x`, the thread's place along x"),
    ("out[row * pitch + col] = x[row * pitch + col]; out[row * pitch + col] += y[row];",
     "reads memory after the store"),
    ("out[row * pitch + col] = x[row * pitch + col] + (int)gridDim.x;",
     "reads gridDim.x"),
    ("int r2 = row; out[r2 * pitch + col] = x[row * pitch + col];",
     "reads r2, declared after the row exit"),
    ("out[row * pitch + col] = x[row * pitch + col]; out[row * pitch + col] += __ldg(y + row);",
     "reads memory after the store"),
])
def test_a_near_miss_is_refused_with_its_line(line: str, why: str) -> None:
    source = PITCHED.replace(PITCHED.splitlines()[6], "  " + line)
    lifted = lift_kernel(source, entry="pitched", grid=["ceil_div(w, 16)", "ceil_div(h, 16)"],
                         block=["16", "16"], scalars={"w": "w", "h": "h", "pitch": "pitch"})
    assert "VEC" not in {p.name for p in lifted.params}
    refusal = next(n for n in lifted.notes if n.startswith("VEC: not applied"))
    assert why in refusal and "(line 7)" in refusal, refusal


@needs_gxx
@pytest.mark.parametrize("case", ["nv12", "nv12_w44", "pitched", "blend"])
def test_every_config_writes_what_the_kernel_writes(case: str, tmp_path: Path,
                                                    host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = {"nv12": lambda: load_kernel_folder(NV12),
          "nv12_w44": lambda: _nv12(tmp_path / "k", "w = 44, h = 37, pitch = 64"),
          "pitched": lambda: _pitched(tmp_path / "k"),
          "blend": lambda: _blend(tmp_path / "k")}[case]()
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    vec = 2 if case == "nv12" else 4
    mixes = [{"VEC": vec}, {"VEC": vec, "ITEMS_X": 2, "ITEMS_Y": 2, "BLOCK_X": 8},
             {"VEC": 2, "BLOCK_X": 64, "BLOCK_Y": 2, "ITEMS_X": 4}]
    configs = host_configs(template, env, mixes)
    if not FULL_MATRIX:
        configs = configs[:5]
    assert any(c["VEC"] > 1 for c in configs)
    assert same_as_written(kf, template, configs, held_back_unseen23.SET.host_source,
                           tmp_path / "run", host_flags) >= 4
