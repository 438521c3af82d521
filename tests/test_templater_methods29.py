"""An index object called through named methods (``g.index(z, y, x)``, ``g.inside(..)``) and
function-like macros continued over lines, read as the expressions they are (session 29,
set 17's star13_o2: workbench/templater/method_calls.py, inline_macros.py's line splicing).

star13_o2 spells its 13-point star through ``const Grid g{nx, ny, nz}`` and a ``RING`` macro
continued by a backslash: the z-march (stencil_zmarch: Z_SPLIT with the column's five planes in
a register queue, the expert's QUEUE 1 and ZSPLIT) was refused with "the index of out is not
linear in z" (the index was a call) and lifted only ITEMS_X, ITEMS_Y. Two other hands'
spellings (tests/spellings_r29f1/: a class with a constructor, private members and ``long
long`` index methods, statements a ring; C89 declarations, an aggregate struct of one method,
a continued macro and a while walk) must lift Z_SPLIT too, bit for bit against their kernels
as written on the host (g++) at the default, both ends of Z_SPLIT and a mix. Near misses
(a member read directly, a method that writes, a continued macro holding a comment, a macro
naming the object left called) are left as written with the line named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen17
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.inline_macros import expand_macros
from workbench.templater.method_calls import methods_as_lambdas

HERE = Path(__file__).resolve().parent / "spellings_r29f1"
STAR13 = held_back_unseen17.ROOT / "star13_o2"
KNOBS = ("BLOCK_X", "BLOCK_Y", "Z_SPLIT")

#: 16 x 4 threads in four z chunks of 3 (the 37 x 19 x 11 check shape uneven over the block,
#: the last chunk 2 planes); 64 x 2 in two chunks (6 and 5) with a register cap; 16 chunks
#: of one plane (the last five empty)
MIXES = [{"BLOCK_X": 16, "BLOCK_Y": 4, "Z_SPLIT": 4},
         {"BLOCK_X": 64, "BLOCK_Y": 2, "Z_SPLIT": 2, "MIN_BLOCKS_PER_SM": 2},
         {"BLOCK_X": 128, "BLOCK_Y": 1, "Z_SPLIT": 16}]


def _folder(name: str, tmp_path: Path) -> KernelFolder:
    if name == "corpus":
        return held_back_unseen17.SET.folder("star13_o2")
    return respelled(STAR13, tmp_path / "src", (HERE / f"{name}.cu").read_text())


@pytest.mark.parametrize("name", ["corpus", "class_ctor", "c89_macros"])
def test_the_z_march_lifts_through_methods(name: str, tmp_path: Path) -> None:
    result = offline_template(_folder(name, tmp_path))
    params = {p.name for p in result.lifted.params}
    assert params >= set(KNOBS), result.notes
    notes = [str(n) for n in result.notes]
    assert any("INLINE_METHODS: applied" in n for n in notes), notes
    assert any("Z_SPLIT: applied" in n and "5-register queue" in n for n in notes), notes


def _configs(kf: KernelFolder) -> list[dict[str, Any]]:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    space = template.space(env)
    default = dict(template.default_config())
    picked = [default]
    # the mixes run where the space's `nz // Z_SPLIT >= 5` (a chunk shorter than the queue
    # reloads more than it reuses: speed, not correctness) drops them at 11 planes
    picked += [{**default, **mix} for mix in MIXES]
    ends = end_configs(template, env)
    assert all(space.rejection(c) is None for c in ends) and len(ends) >= 2
    picked += ends if FULL_MATRIX else [ends[0], ends[-1]]
    return picked


@pytest.mark.parametrize("name", ["corpus", "class_ctor", "c89_macros"])
def test_host_bit_for_bit(name: str, tmp_path: Path,
                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(name, tmp_path)
    template = offline_template(kf).template
    configs = _configs(kf)
    assert same_as_written(kf, template, configs, held_back_unseen17.host_source,
                           tmp_path / "run", host_flags) == len(configs)


GRID = """struct Grid {
  int nx, ny;
  __device__ int index(int y, int x) const { return y * nx + x; }
};
extern "C" __global__ void k(float* out, const float* in, int nx, int ny) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  const Grid g{nx, ny};
  out[g.index(y, x)] = in[g.index(y, x)];
}
"""


def _methods(source: str) -> InlinedSource:
    return methods_as_lambdas(expand_macros(InlinedSource(source, "k.cu"), "k"), "k")


def test_methods_become_lambdas_on_their_line() -> None:
    got = _methods(GRID)
    assert "auto g_index = [&](int y, int x) -> int { return y * nx + x; };" in got.text
    assert "out[g_index(y, x)] = in[g_index(y, x)];" in got.text
    assert got.text.count("\n") == GRID.count("\n")  # every line keeps its number


@pytest.mark.parametrize(("edit", "why", "line"), [
    # a member read directly: the object is more than its methods
    (("out[g.index(y, x)] = in[g.index(y, x)];", "out[g.index(y, x)] = in[g.nx + x];"),
     "other than as a call of one of its methods", 9),
    # a method that is not const may write the object
    (("int index(int y, int x) const {", "int index(int y, int x) {"),
     "is not a const function", 3),
    # a macro naming the object, called where it is not expanded (a call over two lines)
    (("extern", "#define AT(y, x) g.index(y, x)\nextern"), "", 0),
])
def test_near_misses_are_left_as_written(edit: tuple[str, str], why: str, line: int) -> None:
    source = GRID.replace(*edit)
    assert source != GRID
    if not why:  # the macro: kept unexpanded, so the object stays
        source = source.replace("out[g.index(y, x)] = in[g.index(y, x)];",
                                "out[AT(y,\n         x)] = in[g.index(y, x)];")
        got = _methods(source)
        assert "const Grid g{nx, ny};" in got.text
        notes = [f for f in got.findings if f.transform == "INLINE_METHODS"]
        assert notes and not notes[0].applied and "AT" in notes[0].reason, notes
        return
    got = _methods(source)
    assert "const Grid g{nx, ny};" in got.text
    notes = [f for f in got.findings if f.transform == "INLINE_METHODS"]
    assert notes and not notes[0].applied and why in notes[0].reason, notes
    assert notes[0].line == line, notes


CONTINUED = """#define SUM2(a, b) \\
  ((a) + \\
   (b))
#define NOTE(a) \\
  ((a) /* a comment */ + \\
   1)
extern "C" __global__ void k(float* out, const float* in) {
  out[0] = SUM2(in[0], in[1]) + NOTE(in[2]);
}
"""


def test_continued_macros_expand_as_the_preprocessor_joins_them() -> None:
    got = expand_macros(InlinedSource(CONTINUED, "k.cu"), "k").text
    # NOTE holds a comment, which ends the parsed body: left to the compiler
    assert "out[0] = ((in[0]) +     (in[1])) + NOTE(in[2]);" in got
    assert got.count("\n") == CONTINUED.count("\n")
