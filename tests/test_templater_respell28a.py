"""Session 27's stage-1 fixes of held-back sets 19 and 20, read through other hands' spellings
(issue 28: a rule that matches only the corpus's spelling of a kernel is not stage 1).

Each of gram_ata_ridge, gemm_cm_bt_rowscale, coulomb_pot_tiles and verlet_orbit_tpl is
written twice more under tests/spellings_r28a/ (a folder each: the corpus kernel's
kernel.toml, the respelling as baseline.cu): C89 declarations at the top with ``while``
loops; ``__restrict__`` and helpers; a pointer walk down the columns; float4/float3 and a
helper term; a struct passed by value with ``rsqrtf`` and a count-down loop; a ``double``
instantiation. Each must lift the family's knobs the corpus kernel lifts, bit for bit
against itself on the host (g++) at the default and a mix (every all-ends config too under
WORKBENCH_FULL_MATRIX=1).

The C89 spellings lifted nothing of their families before workbench/templater/late_init.py
(``int tx; .. tx = threadIdx.x;`` gave the analysis no value to read): gram 'TILE', gemm
'BLOCK_X, BLOCK_Y', coulomb 'BLOCK_THREADS'. The same rule gives set 20's
acklam_probit_f64 (C89 too) its items and unroll: checked here the same way.

Where a spelling's knobs differ from the corpus kernel's, it is the semantics: ``rsqrtf``
written by the author leaves FAST_MATH nothing to choose; a ``double`` integrator has no
float reciprocal root (DIV_RCP instead); probes read as raw floats are records STAGE may
stage. Fixed since: the float4 spelling's walk ``for (..) acc += term(p, q[c]);`` has one
statement for a body, which walk_rounds refused ("the walk's body is not a block"), so it
lifted no TILE before session 29; walk_rounds now reads a body of one statement as it reads a
block (coulomb_float4_restrict, and coulomb_oneline_if, whose one statement is a brace-less
``if``, lift TILE; a one-statement body that leaves the walk or writes memory is still refused
with its line). The pointer walk's operands (``acc += *pa * *pb; pa += M;``) had no address
affine in k that regtile_kslice reads (no BK, PAD) before workbench/templater/pointer_taps.py
read a pointer stepped by a stride as its index (``a[row + (long long)k * M]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import held_back_unseen19
import held_back_unseen20
import pytest
from held_back_harness import prepended, same_as_written
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.late_init import late_inits
from workbench.templater.point_split import split_points
from workbench.templater.pointer_taps import pointer_taps

HERE = Path(__file__).resolve().parent / "spellings_r28a"

#: the knobs each corpus kernel's lift has of its family (tests/.. lift dump of session 28)
GRAM = ("BM", "BN", "BK", "TM", "TN", "VEC")
GEMM = ("THREADS_X", "THREADS_Y", "TM", "TN", "BK", "PAD")
COULOMB = ("BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "TILE")
VERLET = ("BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "STAGE")

#: one mix a family, each key where the lift has that knob: a 128 x 32 tile of 8 x 4 over
#: slices of 8 (45 features: one row tile mostly past, a partial column tile); 16 x 16
#: threads of 4 x 2 over padded slices of 8 (K = 37: four slices and a partial one); 96
#: threads of two probes in rounds of 128 charges (m = 200: a full round and a partial one),
#: staged; 160 threads of four particles (two blocks over 1000, the last partly)
MIXES = {
    "gram": {"BM": 128, "BN": 32, "BK": 8, "TM": 8, "TN": 4, "VEC": 4},
    "gemm": {"THREADS_X": 16, "THREADS_Y": 16, "TM": 4, "TN": 2, "BK": 8, "PAD": 1},
    "coulomb": {"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 2, "UNROLL": 2, "TILE": 128,
                "STAGE": 1},
    "verlet": {"BLOCK_THREADS": 160, "ITEMS_PER_THREAD": 4, "UNROLL": 2, "STAGE": 1,
               "DIV_RCP": 1, "MIN_BLOCKS_PER_SM": 2},
    "acklam": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 2, "DIV_RCP": 1},
}


@dataclass(frozen=True)
class Spelling:
    """A respelling: its folder, its family (the mix it runs), the knobs its lift must have
    and those it must not (the semantics differ, or what is left), its set's host source."""

    folder: Path
    family: str
    knobs: tuple[str, ...]
    host: Any
    absent: tuple[str, ...] = ()


#: float3 on the host (the unseen3 prelude has float4 only), before set 19's built-ins
FLOAT3 = "struct float3 { float x, y, z; };\n" \
    "static inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }\n"


def _with_float3(source: str) -> str:
    return prepended(FLOAT3)(held_back_unseen19.host_source(source))


SPELLINGS = {
    "gram_c89_while": Spelling(HERE / "gram_c89_while", "gram", GRAM,
                               held_back_unseen20.host_source),
    "gram_restrict_helpers": Spelling(HERE / "gram_restrict_helpers", "gram", GRAM,
                                      held_back_unseen20.host_source),
    "gemm_c89_while": Spelling(HERE / "gemm_c89_while", "gemm", GEMM,
                               held_back_unseen19.host_source),
    "gemm_ptr_walk": Spelling(HERE / "gemm_ptr_walk", "gemm", GEMM,
                              held_back_unseen19.host_source),
    "coulomb_c89_while": Spelling(HERE / "coulomb_c89_while", "coulomb", COULOMB,
                                  held_back_unseen19.host_source),
    # the walk's body one statement, no braces (walk_rounds reads it as a block's)
    "coulomb_float4_restrict": Spelling(HERE / "coulomb_float4_restrict", "coulomb", COULOMB,
                                        _with_float3),
    "coulomb_oneline_if": Spelling(HERE / "coulomb_oneline_if", "coulomb", COULOMB,
                                   held_back_unseen19.host_source),
    # rsqrtf as written: no reciprocal root left to choose
    "verlet_struct_countdown": Spelling(HERE / "verlet_struct_countdown", "verlet", VERLET,
                                        held_back_unseen20.host_source, absent=("FAST_MATH",)),
    # a double root: no float rsqrt
    "verlet_double_while": Spelling(HERE / "verlet_double_while", "verlet", VERLET,
                                    held_back_unseen20.host_source, absent=("FAST_MATH",)),
    "acklam_probit_f64": Spelling(held_back_unseen20.ROOT / "acklam_probit_f64", "acklam",
                                  ("BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL"),
                                  held_back_unseen20.host_source),
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_lifts_the_family_knobs(name: str) -> None:
    spelling = SPELLINGS[name]
    kf = load_kernel_folder(spelling.folder)
    result = offline_template(kf)
    params = {p.name for p in result.lifted.params}
    assert params >= set(spelling.knobs) and not params & set(spelling.absent), result.notes


def _configs(spelling: Spelling) -> list[dict[str, Any]]:
    kf = load_kernel_folder(spelling.folder)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    space = template.space(env)
    default = dict(template.default_config())
    mix = {**default, **{k: v for k, v in MIXES[spelling.family].items() if k in default}}
    assert mix != default and space.rejection(mix) is None, (mix, space.rejection(mix))
    picked = [default, mix]
    if FULL_MATRIX:
        picked += [c for c in end_configs(template, env) if c not in picked]
    return picked


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_host_bit_for_bit(name: str, tmp_path: Path,
                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    spelling = SPELLINGS[name]
    kf = load_kernel_folder(spelling.folder)
    template = offline_template(kf).template
    configs = _configs(spelling)
    assert same_as_written(kf, template, configs, spelling.host, tmp_path, host_flags) == \
        len(configs)


#: A C89 kernel: every local declared first; ``i`` and ``s`` set once before their reads,
#: ``j`` started by its loop's header, ``last`` set in a loop and read after it.
C89 = """extern "C" __global__ void k(float* out, const float* in, int n) {
  int i, j;
  float s, last;
  i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  s = 0.0f;
  for (j = 0; j < 4; ++j) {
    last = in[i * 4 + j];
    s += last;
  }
  out[i] = s + last;
}
"""


def _late(source: str) -> str:
    return late_inits(split_points(InlinedSource(source, "k.cu"), "k"), "k").text


def test_a_local_set_once_before_its_reads_is_declared_with_its_value() -> None:
    got = _late(C89)
    assert "int i = blockIdx.x * blockDim.x + threadIdx.x;" in got
    assert "float s = 0.0f;" in got
    split = split_points(InlinedSource(C89, "k.cu"), "k").text
    assert got.count("\n") == split.count("\n")  # every line keeps its number
    # j: first met in a header; last: its value leaves the loop that sets it
    assert "for (j = 0; j < 4; ++j)" in got and "    last = in[i * 4 + j];" in got
    assert "float last;" in got


@pytest.mark.parametrize("edit", [
    ("  if (i >= n) return;", "  if (i >= n) goto done;"),  # a jump could pass the value
    ("  out[i] = s + last;", "  out[i] = s + last;\ndone:;"),
])
def test_a_kernel_with_jumps_is_left_as_written(edit: tuple[str, str]) -> None:
    source = C89.replace(*edit)
    assert source != C89
    got = _late(source)
    assert "int i = " not in got and "float s = " not in got


#: A column walked by a pointer stepped by its stride, read after the walk's other steps.
STRIDED = """extern "C" __global__ void k(float* c, const float* a, const float* b, int M, int K) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const float* pa = a + row;
  const float* pb = b;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc += *pa * pb[1];
    pa += M;
    pb += 2;
  }
  c[row] = acc;
}
"""


def _taps(source: str) -> str:
    return pointer_taps(InlinedSource(source, "k.cu"), "k").text


def test_a_pointer_stepped_by_a_stride_is_read_through_its_index() -> None:
    got = _taps(STRIDED)
    assert "acc += a[row + (long long)k * M] * b[(long long)k * 2 + (1)];" in got, got
    assert "pa" not in got and "pb" not in got  # both read from the parameters


@pytest.mark.parametrize("edit", [
    ("    pb += 2;\n", "    pb += 2;\n    M = M - 1;\n"),  # the stride changes in the walk
    ("    pa += M;\n", "    pa += M;\n    acc += *pa;\n"),  # read after its step
    ("    pa += M;\n", "    pa += c[k];\n"),  # a stride read from memory
    ("  c[row] = acc;", "  c[row] = acc + *pa;"),  # read after the walk
])
def test_a_strided_walk_that_is_not_an_index_stays(edit: tuple[str, str]) -> None:
    source = STRIDED.replace(*edit)
    assert source != STRIDED
    got = _taps(source)
    assert "*pa" in got and "a[row + (long long)k" not in got, got


#: coulomb_float4_restrict's one-statement walk, and near misses of it that stay refused.
ONE_STATEMENT = "  for (int c = 0; c < m; c++) acc += term(p, q[c]);\n"


@pytest.mark.parametrize(("walk", "why"), [
    ("  for (int c = 0; c < m; c++)\n    if (q[c].w != 0.0f) acc += term(p, q[c]); else break;\n",
     "`break;` leaves the walk (its trips would differ by thread) (line 20)"),
    ("  for (int c = 0; c < m; c++) out[i] = acc += term(p, q[c]);\n",
     "writes memory in the walk (line 19)"),
], ids=["leaves", "writes"])
def test_a_one_statement_walk_that_leaves_or_writes_is_refused(
        walk: str, why: str, tmp_path: Path) -> None:
    folder = HERE / "coulomb_float4_restrict"
    source = (folder / "baseline.cu").read_text()
    assert ONE_STATEMENT in source
    (tmp_path / "kernel.toml").write_text((folder / "kernel.toml").read_text())
    (tmp_path / "baseline.cu").write_text(source.replace(ONE_STATEMENT, walk))
    lifted = offline_template(load_kernel_folder(tmp_path)).lifted
    assert "TILE" not in {p.name for p in lifted.params}
    assert any(n.startswith("TILE: not applied:") and n.endswith(why)
               for n in lifted.notes), lifted.notes
