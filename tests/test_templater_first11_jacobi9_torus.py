"""First contact with held-back set 11's periodic 9-point Jacobi sweep (issue 28): benchmarks/
corpus_compute_unseen11/jacobi9_torus wraps every neighbour around the torus through an index
class (``const Torus at(H, W);`` then ``U[at(r - 1, c + 1)]``, whose ``operator()`` returns
``((r + rows_) % rows_) * cols_ + (c + cols_) % cols_``): eighteen integer divisions by a
runtime value a point. The lift tuned to 1.21x on the H100 (58 % of a copy) against the
expert's 1.71x (82 %), whose pick wraps by compare (WRAP 1).

workbench/templater/functor_calls.py reads the object as the lambda its ``operator()`` is
(members bound to ``H``, ``W``), which inline_lambda expands at its calls;
workbench/templater/periodic_index.py writes each ``E % N`` (and ``E / N``) whose dividend the
guards bound to ``[0, 3N)`` as compares and selects (``(r - 1 + H) % H`` with ``0 <= r < H``:
``(r - 1) >= 0 ? (r - 1) : (r - 1) + H``; ``(c + W) % W``: ``c``).

Pure: the folder's lift keeps its knobs and holds no ``%``; a second spelling of the
pattern (a 1-D periodic three-point smoother with ``% n`` inline in a grid-stride loop, and
a 3-D seven-point periodic Laplacian through a helper ``wrap(i, n)`` under an ``if (x < nx
&& ..) { }`` guard) loses its divisions too; what is not provably one period stays a
division, with the line and the bound that is missing. Host (g++): the folder's lift at its
default, the expert's pick in the lift's knobs, two mixes and every all-ends config against
the kernel as written, bit for bit; the two spellings the same way at their corners.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen11
import pytest
from held_back_harness import same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.inline_lambda import expand_lambdas
from workbench.templater.periodic_index import reduce_periodic
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen11.ROOT / "jacobi9_torus"
KNOBS = ("BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "MIN_BLOCKS_PER_SM")
#: The expert's H100 pick (BX 128, BY 1, ITEMS_Y 2) in the lift's knobs: two consecutive
#: rows a thread sharing their rows in the register window (stencil_rows); a 32 x 4 block
#: of 2 columns x 4 rows (the 19 rows uneven over it); a 128 x 2 block walking 8 rows at
#: two blocks an SM.
MIXES = [{"BLOCK_X": 128, "BLOCK_Y": 1, "OUT_Y": 2},
         {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 4},
         {"BLOCK_X": 128, "BLOCK_Y": 2, "OUT_Y": 8, "MIN_BLOCKS_PER_SM": 2}]


#: The same pattern by other hands: a periodic 1-D smoother in a grid-stride loop, its left
#: neighbour wrapped by ``% n`` written inline, its right one by subtracting the periods a
#: division counts.
RING = """extern "C" __global__ void ring_smooth(float* __restrict__ y, const float* __restrict__ x,
                                       int n, float a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    const float left = x[(i + n - 1) % n];
    const float right = x[i + 1 - n * ((i + 1) / n)];
    y[i] = a * left + (1.0f - 2.0f * a) * x[i] + a * right;
  }
}
"""

#: A periodic 7-point Laplacian on a 3-D block, through a helper ``wrap(i, n)`` and a guard
#: around the work (no early return).
CUBE = """__device__ __forceinline__ int wrap(int i, int n) { return (i + n) % n; }

extern "C" __global__ void lap7_periodic(float* out, const float* in, int nx, int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < nx && y < ny && z < nz) {
    const int sy = nx, sz = nx * ny;
    float s = in[z * sz + y * sy + wrap(x - 1, nx)] + in[z * sz + y * sy + wrap(x + 1, nx)];
    s += in[z * sz + wrap(y - 1, ny) * sy + x] + in[z * sz + wrap(y + 1, ny) * sy + x];
    s += in[wrap(z - 1, nz) * sz + y * sy + x] + in[wrap(z + 1, nz) * sz + y * sy + x];
    out[z * sz + y * sy + x] = s - 6.0f * in[z * sz + y * sy + x];
  }
}
"""

#: 96 threads of float4 over two items (the 300 points end mid-block); 64 threads, one
#: point apiece.
RING_MIXES = [{"BLOCK_THREADS": 96, "VEC": 4, "ITEMS_PER_THREAD": 2},
              {"BLOCK_THREADS": 64, "VEC": 1, "ITEMS_PER_THREAD": 1, "MIN_BLOCKS_PER_SM": 1}]
#: A 16 x 2 x 4 block of 2 items along y; a 4 x 4 x 4 block of 2 x 1 x 2.
CUBE_MIXES = [{"BLOCK_X": 16, "BLOCK_Y": 2, "BLOCK_Z": 4, "ITEMS_Y": 2},
              {"BLOCK_X": 4, "BLOCK_Y": 4, "BLOCK_Z": 4, "ITEMS_X": 2, "ITEMS_Z": 2}]

RING_TOML = """name = "ring_smooth"
dtypes = ["fp32"]
check_shape = "small"
[shapes]
small = { n = 300 }
[tolerances]
fp32 = { rtol = 1e-5, atol = 1e-6 }
[[args]]
name = "y"
dtype = "f32"
role = "out"
shape = ["n"]
[[args]]
name = "x"
dtype = "f32"
role = "in"
shape = ["n"]
[[args]]
name = "n"
dtype = "i32"
role = "scalar"
value = "n"
[[args]]
name = "a"
dtype = "f32"
role = "scalar"
value = "0.25"
[baseline]
source = "baseline.cu"
entry = "ring_smooth"
grid = ["ceil_div(n, 256)"]
block = ["256"]
"""

RING_REFERENCE = '''"""numpy reference for ring_smooth."""
from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"x": rng.uniform(-1.0, 1.0, size=shape["n"]).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"], dtype=np.float64)
    return {"y": 0.25 * np.roll(x, 1) + 0.5 * x + 0.25 * np.roll(x, -1)}
'''

CUBE_TOML = """name = "lap7_periodic"
dtypes = ["fp32"]
check_shape = "small"
[shapes]
small = { nx = 13, ny = 7, nz = 5 }
[tolerances]
fp32 = { rtol = 1e-5, atol = 1e-5 }
[[args]]
name = "out"
dtype = "f32"
role = "out"
shape = ["nz", "ny", "nx"]
[[args]]
name = "in"
dtype = "f32"
role = "in"
shape = ["nz", "ny", "nx"]
[[args]]
name = "nx"
dtype = "i32"
role = "scalar"
value = "nx"
[[args]]
name = "ny"
dtype = "i32"
role = "scalar"
value = "ny"
[[args]]
name = "nz"
dtype = "i32"
role = "scalar"
value = "nz"
[baseline]
source = "baseline.cu"
entry = "lap7_periodic"
grid = ["ceil_div(nx, 8)", "ceil_div(ny, 4)", "ceil_div(nz, 2)"]
block = ["8", "4", "2"]
"""

CUBE_REFERENCE = '''"""numpy reference for lap7_periodic."""
from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    size = (shape["nz"], shape["ny"], shape["nx"])
    return {"in": rng.uniform(-1.0, 1.0, size=size).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    u = np.asarray(inputs["in"], dtype=np.float64)
    s = sum(np.roll(u, k, axis=a) for a in range(3) for k in (1, -1))
    return {"out": s - 6.0 * u}
'''


def _body(source: str, entry: str) -> str:
    return source[source.index(entry + "("):]


def _wrapped(source: str, entry: str) -> str:
    """``entry``'s body once its callables are expanded and its wrapped indices reduced."""
    current = expand_lambdas(InlinedSource(source, "baseline.cu"), entry)
    return _body(reduce_periodic(current, entry).text, entry)


def _notes(lifted: Any, transform: str) -> list[str]:
    return [n for n in lifted.notes if n.startswith(transform + ":")]


def test_the_torus_lift_keeps_its_knobs_and_wraps_by_compare() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    body = _body(lifted.source, "jacobi9_torus")
    assert "%" not in body and " at(" not in body
    assert "((r - 1) >= 0 ? (r - 1) : (r - 1) + H)" in body  # the row above
    assert "((r + 1) >= H ? (r + 1) - H : (r + 1))" in body  # the row below
    assert "((c - 1) >= 0 ? (c - 1) : (c - 1) + W)" in body
    assert "const int here = ((((r))) * W + ((c)));" in body  # (r + H) % H, (c + W) % W
    assert any("at (an object of Torus) read as the lambda" in n
               for n in _notes(lifted, "INLINE_FUNCTOR")), lifted.notes
    assert any("18 wrapped indices (lines 30, 31, 32, 33)" in n
               for n in _notes(lifted, "WRAP_INDEX")), lifted.notes


def test_an_inline_modulo_in_a_grid_stride_loop_is_wrapped() -> None:
    lifted = lift_kernel(RING, entry="ring_smooth", grid=["ceil_div(n, 256)"], block=["256"],
                         scalars={"n": "n"})
    assert "%" not in _body(lifted.source, "ring_smooth"), lifted.notes
    assert any("2 wrapped indices" in n for n in _notes(lifted, "WRAP_INDEX"))
    # as the pass writes them (the lift then vectorizes i): i + n - 1 in [n - 1, 2n - 2],
    # i + 1 in [1, n]
    body = _wrapped(RING, "ring_smooth")
    assert "x[((i - 1) >= 0 ? (i - 1) : (i - 1) + n)]" in body
    assert "x[i + 1 - n * (((i + 1) >= n ? 1 : 0))]" in body


def test_a_wrap_helper_under_a_guard_block_is_wrapped_in_three_dimensions() -> None:
    lifted = lift_kernel(CUBE, entry="lap7_periodic", grid=["ceil_div(nx, 8)",
                         "ceil_div(ny, 4)", "ceil_div(nz, 2)"], block=["8", "4", "2"],
                         scalars={"nx": "nx", "ny": "ny", "nz": "nz"})
    assert "%" not in _body(lifted.source, "lap7_periodic"), lifted.notes
    body = _wrapped(CUBE, "lap7_periodic")
    assert "wrap(" not in body
    for axis in ("x", "y", "z"):
        n = f"n{axis}"
        assert f"(({axis} - 1) >= 0 ? ({axis} - 1) : ({axis} - 1) + {n})" in body
        assert f"(({axis} + 1) >= {n} ? ({axis} + 1) - {n} : ({axis} + 1))" in body
    assert any("6 wrapped indices" in n for n in _notes(lifted, "WRAP_INDEX"))


def _ring(source: str) -> Any:
    return lift_kernel(source, entry="ring_smooth", grid=["ceil_div(n, 256)"], block=["256"],
                       scalars={"n": "n", "k": "k"})


@pytest.mark.parametrize(("old", "new", "why"), [
    # no + n: -1 % n is -1 in C, not n - 1 (the kernel's own bug is kept)
    ("x[(i + n - 1) % n]", "x[(i - 1) % n]", "`(i - 1)` may be negative (its lower bound -1)"),
    # a runtime offset of any sign
    ("x[i + 1 - n * ((i + 1) / n)]", "x[(i + k) % n]",
     "`(i + k)` may be negative (its lower bound k)"),
    # three periods away
    ("x[i + 1 - n * ((i + 1) / n)]", "x[i + 1 - n * ((i + 1 + 2 * n) / n)]",
     "`(i + 1 + 2 * n)` may reach 3 * n (its upper bound 3 * n)"),
    # a counter the body moves is no index the guards bound
    ("const float right = x[i + 1 - n * ((i + 1) / n)];",
     "int j = i; j += 1; const float right = x[(j + 1) % n];",
     "j is written in the kernel or declared more than once"),
], ids=["negative", "runtime-offset", "three-periods", "written-index"])
def test_what_is_not_one_period_stays_a_division_with_its_line(old: str, new: str,
                                                               why: str) -> None:
    source = RING.replace("int n, float a)", "int n, float a, int k)")
    assert old in source
    lifted = _ring(source.replace(old, new))
    at = 4 if "i - 1" in new else 5
    assert any(why in n and n.endswith(f"(line {at})") for n in _notes(lifted, "WRAP_INDEX")
               if "stays a division" in n), lifted.notes
    kept = new.split("x[", 1)[1].rsplit("]", 1)[0]
    assert f"x[{kept}]" in _wrapped(source.replace(old, new), "ring_smooth")


def test_an_unsigned_divisor_or_dividend_is_left_as_written() -> None:
    # unsigned n: i + n - 1 is computed modulo 2^32; a compare of i - 1 with 0 would differ
    source = RING.replace("int n, float a)", "unsigned n, float a)")
    lifted = _ring(source)
    assert "+ n - 1) % n]" in lifted.source and "+ 1) / n)]" in lifted.source
    assert not _notes(lifted, "WRAP_INDEX")


def test_a_value_standing_for_a_division_keeps_its_precedence() -> None:
    # (i - n + n) % n is (i - n) + n: one value, multiplied as the division was
    source = RING.replace("x[(i + n - 1) % n]", "x[(i - n + n) % n * 1]")
    assert "x[((i - n) + n) * 1]" in _wrapped(source, "ring_smooth")


#: The torus index as an aggregate: a struct of public sizes with a const operator(), set
#: by braces, called through a name declared ``auto .. = Wrap2{..}``-free: ``Wrap2 idx{H, W}``.
AGGREGATE = """struct Wrap2 {
  int h, w;
  __device__ int operator()(int r, int c) const { return ((r + h) % h) * w + (c + w) % w; }
};
"""


def test_an_aggregate_index_struct_is_read_as_a_function_too() -> None:
    source = FOLDER.joinpath("jacobi9_torus.cu").read_text()
    start, end = source.index("class Torus"), source.index("};", source.index("class Torus"))
    source = source[:start] + AGGREGATE.rstrip("\n")[:-2] + source[end:]
    source = source.replace("const Torus at(H, W);", "const Wrap2 at{H, W};")
    lifted = lift_kernel(source, entry="jacobi9_torus", grid=["ceil_div(W, 32)",
                         "ceil_div(H, 8)", "B"], block=["32", "8"],
                         scalars={"H": "H", "W": "W"})
    assert "%" not in _body(lifted.source, "jacobi9_torus"), lifted.notes
    assert any("at (an object of Wrap2) read as the lambda" in n
               for n in _notes(lifted, "INLINE_FUNCTOR")), lifted.notes


def test_an_index_class_other_than_an_index_function_is_left_as_written() -> None:
    source = FOLDER.joinpath("jacobi9_torus.cu").read_text()
    # a member the constructor does not set from a parameter
    odd = source.replace("cols_(cols) {}", "cols_(cols + 1) {}")
    lifted = lift_kernel(odd, entry="jacobi9_torus", grid=["ceil_div(W, 32)",
                         "ceil_div(H, 8)", "B"], block=["32", "8"],
                         scalars={"H": "H", "W": "W"})
    assert "const Torus at(H, W);" in lifted.source
    assert any("initialiser `cols_(cols + 1)` is not a member from one parameter" in n
               for n in _notes(lifted, "INLINE_FUNCTOR")), lifted.notes


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...],
                  mixes: list[dict[str, int]]) -> int:
    """Runs ``kf``'s lift at :func:`host_configs`' configs and its kernel as written on the
    host; asserts every output bit for bit; the configs run."""
    template = offline_template(kf).template
    assert "%" not in _body(template.source, kf.baseline.entry)
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), mixes)
    return same_as_written(kf, template, configs, held_back_unseen11.host_source, tmp_path,
                           flags)


def _folder(root: Path, name: str, toml: str, reference: str, source: str) -> KernelFolder:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "kernel.toml").write_text(toml)
    (folder / "reference.py").write_text(reference)
    for file in ("baseline.cu", f"{name}.cu"):
        (folder / file).write_text(source)
    return load_kernel_folder(folder)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_torus_lift_computes_as_written(tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    ran = _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags, MIXES)
    assert ran >= 1 + len(MIXES) + 2


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", ["ring_smooth", "lap7_periodic"])
def test_the_spellings_compute_as_written(name: str, tmp_path: Path,
                                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    toml, reference, source, mixes = {
        "ring_smooth": (RING_TOML, RING_REFERENCE, RING, RING_MIXES),
        "lap7_periodic": (CUBE_TOML, CUBE_REFERENCE, CUBE, CUBE_MIXES)}[name]
    kf = _folder(tmp_path / "folders", name, toml, reference, source)
    assert "% n" in source  # the kernel as written divides (in its helper or inline)
    assert _same_outputs(kf, tmp_path, host_flags, mixes) >= 3
