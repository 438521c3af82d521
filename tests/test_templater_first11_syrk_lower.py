"""First contact with held-back set 11's lower-triangle SYRK (issue 28): benchmarks/
corpus_compute_unseen11/syrk_lower keeps its tile routine in a class template instantiated
at 16 (``LowerTile<16>::run(C, A, n, k)``) and lets blocks wholly above the diagonal write
their zeros and return. The templater found nothing to lift (1.00x on the H100 at 23:59Z,
the expert's register tile 2.04x): the call of a static member was no call the inliner read,
and once inlined the register tile refused "`return;` outside the loop over tiles".

workbench/templater/inline_members.py reads a class's static member functions as the free
function templates they are (the class's template parameters, then the member's);
workbench/templater/regtile_exit.py lets a whole block's exit before the loop over tiles
run each virtual thread's statements and return, its block test keeping the block tile
square (BM == BN). The lift now gets BM, BN, BK, TM, TN, VEC.

Pure: the knobs and the square tile; the member rewrite keeps every line's number, a class's
static constants become constants at the top of each member (a class whose padding is its
``static constexpr int kPad`` lifts the same knobs, host-checked at its corners); forms it
refuses, with the reason (a data member, a specialisation, a sibling call, the class named
as a type, a constant shadowed or naming the class, an exit whose test reads the thread or
the tile size but as a block's offset); the exit's test spelled through named block offsets
(``col0 > row0``) or with the tile size as a block offset's factor lifts the same knobs (the
latter host-checked at its corners). Host (g++): the folder's
lift at its default, every all-ends config and three mixes against the plain kernel; a
second spelling (the upper triangle, a plain struct's member function template called
``UpperSyrk::tile<8>(..)``, block indices named first, if / else fills) against the product
in double at the same kinds of config; and a non-square tile forced past the space's
``BM == BN`` computes wrong outputs (the constraint is needed).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import held_back_unseen11
import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    end_configs,
    lifted_template,
    needs_gxx,
    run_on_host,
)
from test_corpus_unseen3 import (
    HOST_PRELUDE,
    _assert_same,
    _inputs,
    _run,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_members import free_members
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen11.ROOT / "syrk_lower"
SPELLING = Path(__file__).resolve().parent / "spellings_f11s" / "syrk_upper_member_template.cu"
KNOBS = ["BM", "BN", "BK", "TM", "TN", "VEC"]
#: The expert's tuned pick on the H100 (BT 64, BK 32, TM 4, TN 2) is outside the lift's
#: space (regtile_space keeps a 4 x 2 register tile to blocks of at most 1024 outputs), so
#: its nearest square register tile; then a 32 tile of 2 x 2 over shallow slices, a 32 tile
#: of 4 x 2 (a block of 16 x 8 threads) and a 128 tile of 8 x 8 over 16-deep slices.
MIXES = [{"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "VEC": 4},
         {"BM": 32, "BN": 32, "BK": 8, "TM": 2, "TN": 2, "VEC": 4},
         {"BM": 32, "BN": 32, "BK": 16, "TM": 4, "TN": 2, "VEC": 4},
         {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "VEC": 4}]


def test_the_class_template_syrk_lifts_the_register_tile_on_a_square_block() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    assert [p.name for p in result.lifted.params] == KNOBS, result.notes
    assert "BM == BN" in result.lifted.constraints
    assert result.lifted.block == ("BN // TN", "BM // TM")
    assert not [n for n in result.notes if "not applied" in n and
                n.startswith(("INLINE", "REGISTER_TILE"))], result.notes
    assert result.notes[0] == (
        "INLINE: applied: the static member functions of LowerTile read as free function "
        "templates (LowerTile::run as LowerTile_run): a static member reads no object, its "
        "template parameters are its class's then its own (line 36)")
    # the exit runs every virtual thread's zero, then the block leaves
    source = result.lifted.source
    exit_at = source.index("if (blockIdx.x > blockIdx.y) {")
    assert source.index("for (int wb_i = 0; wb_i < TM; ++wb_i)", exit_at) < \
        source.index("return;", exit_at) < source.index("for (int k0 = 0;", exit_at)


def _upper() -> Any:
    return lift_kernel(SPELLING.read_text(), entry="syrk_upper",
                       grid=["ceil_div(n, 8)", "ceil_div(n, 8)"], block=["8", "8"],
                       scalars={"n": "n", "k": "k"}, file="syrk_upper.cu")


def test_a_plain_structs_member_template_lifts_the_same_knobs() -> None:
    lifted = _upper()
    assert [p.name for p in lifted.params] == KNOBS, lifted.notes
    assert "BM == BN" in lifted.constraints
    assert any("UpperSyrk::tile as UpperSyrk_tile" in n for n in lifted.notes)
    assert any("early exit `if (bi > bj)`" in n for n in lifted.notes), lifted.notes


_MEMBER = """template <int TILE, int DEPTH = 2>
struct Walk {
  template <int STEP>
  __device__ static void go(float* x) { x[threadIdx.x] = TILE * DEPTH * STEP; }
};

__global__ void k(float* x) {
  Walk<4, 3>::template go<5>(x);
}
"""


def test_a_member_becomes_a_free_template_on_the_same_lines() -> None:
    text, found = free_members(_MEMBER, "k", "k.cu")
    lines = text.splitlines()
    assert len(lines) == len(_MEMBER.splitlines())
    assert lines[3].strip().startswith("__device__  void Walk_go(float* x) {")
    assert lines[2].strip() == "template <int TILE, int DEPTH = 2, int STEP>"
    assert lines[7].strip() == "Walk_go<4, 3, 5>(x);"
    assert [ln.strip() for ln in (lines[0], lines[1], lines[4])] == ["", "", ""]
    assert [f.applied for f in found] == [True]
    assert found[0].line == 8


def test_a_namespaces_function_is_no_member_and_leaves_no_note() -> None:
    source = ("namespace ns { __device__ float f(float x) { return x; } }\n__global__ void "
              "k(float* x) { x[0] = ns::f(1.0f); x[1] = std::min(1.0f, 2.0f); }\n")
    assert free_members(source, "k", "k.cu") == (source, ())


def test_the_tile_routine_as_a_function_template_lifts_the_same_knobs() -> None:
    """``template <int TILE> __device__ void lower_tile(..)`` called ``lower_tile<16>(..)``
    (inline_calls' own form): the exit alone stood in the register tile's way."""
    source = (FOLDER / "baseline.cu").read_text() \
        .replace("struct LowerTile {\n  __device__ static void run(", "__device__ void lower_tile(") \
        .replace("  }\n};\n", "  }\n").replace("LowerTile<16>::run(", "lower_tile<16>(")
    assert "lower_tile<16>(C, A, n, k);" in source and "struct" not in source
    lifted = lift_kernel(source, entry="syrk_lower", grid=["ceil_div(n, 16)", "ceil_div(n, 16)"],
                         block=["16", "16"], scalars={"n": "n", "k": "k"})
    assert [p.name for p in lifted.params] == KNOBS, lifted.notes
    assert "BM == BN" in lifted.constraints


_CONSTANTS = """template <int T> struct S {
  static constexpr int PAD = 1, N = T * T;
  static const int Q = 3;
  __device__ static void f(float* x) { __shared__ float t[T][T + PAD]; x[0] = N + Q + t[0][0]; }
};
__global__ void k(float* x) { S<4>::f(x); }
"""


def test_a_classs_constants_become_locals_at_the_top_of_each_member() -> None:
    text, found = free_members(_CONSTANTS, "k", "k.cu")
    lines = text.splitlines()
    assert len(lines) == len(_CONSTANTS.splitlines())
    assert [ln.strip() for ln in lines[:3]] == ["", "", ""]
    assert lines[3].strip().startswith(
        "template <int T> __device__  void S_f(float* x) { constexpr int PAD = 1, N = T * T; "
        "const int Q = 3; __shared__ float t[T][T + PAD];")
    assert [f.applied for f in found] == [True]


def _with_constant(source: str) -> str:
    """syrk_lower as a class whose padding is its static constant (two more lines)."""
    return source.replace("struct LowerTile {\n", "class LowerTile {\n public:\n"
                          "  static constexpr int kPad = 1;\n") \
        .replace("rows_j[TILE][TILE + 1]", "rows_j[TILE][TILE + kPad]")


def _lift_with_constant() -> Any:
    return lift_kernel(_with_constant((FOLDER / "baseline.cu").read_text()),
                       entry="syrk_lower", grid=["ceil_div(n, 16)", "ceil_div(n, 16)"],
                       block=["16", "16"], scalars={"n": "n", "k": "k"})


def test_a_class_with_a_constant_lifts_the_same_knobs() -> None:
    lifted = _lift_with_constant()
    assert [p.name for p in lifted.params] == KNOBS, lifted.notes
    assert "BM == BN" in lifted.constraints


@pytest.mark.parametrize(("why", "source", "reason"), [
    ("a constant shadowed at a member's top", "struct S { static constexpr int P = 2;\n"
     "__device__ static void f(float* x) { int P = 3; x[threadIdx.x] = P; } };\n"
     "__global__ void k(float* x) { S::f(x); }\n", "declares P"),
    ("a constant naming a member", "struct S { static constexpr int P = sizeof(S);\n"
     "__device__ static void f(float* x) { x[threadIdx.x] = P; } };\n"
     "__global__ void k(float* x) { S::f(x); }\n", "names S"),
    ("a data member", "struct S { float scale; __device__ static void f(float* x) "
     "{ x[threadIdx.x] = 1.0f; } };\n__global__ void k(float* x) { S::f(x); }\n",
     "is not a static member function"),
    ("a specialisation", "template <int T> struct S { __device__ static void f(float* x) "
     "{ x[threadIdx.x] = T; } };\ntemplate <> struct S<2> { __device__ static void "
     "f(float* x) { x[0] = 0; } };\n__global__ void k(float* x) { S<2>::f(x); }\n",
     "defined 2 times"),
    ("a sibling call", "struct S { __device__ static float g() { return 1.0f; }\n"
     "__device__ static void f(float* x) { x[threadIdx.x] = g(); } };\n"
     "__global__ void k(float* x) { S::f(x); }\n", "names g"),
    ("the class named as a type", "template <int T> struct S { __device__ static void "
     "f(float* x) { x[threadIdx.x] = T; } };\n__global__ void k(float* x) { "
     "x[1] = sizeof(S<2>); S<2>::f(x); }\n", "named outside a call"),
])
def test_members_that_are_not_free_functions_stay_as_written(why: str, source: str,
                                                              reason: str) -> None:
    text, found = free_members(source, "k", "k.cu")
    assert text == source, why
    assert len(found) == 1 and not found[0].applied and reason in found[0].reason, found


@pytest.mark.parametrize(("why", "test", "reason"), [
    ("the thread's place", "threadIdx.x > blockIdx.y", "reads the thread's place"),
    ("the tile size but as a block's offset", "blockIdx.x * 8 + 8 > n",
     "reads the tile size"),
    ("a block index against a number", "blockIdx.x > 3", "does not compare the block's row"),
    ("a row against a row", "bi > blockIdx.y", "does not compare the block's row"),
])
def test_an_exit_whose_test_is_not_the_blocks_keeps_the_register_tile_refused(
        why: str, test: str, reason: str) -> None:
    source = SPELLING.read_text().replace("if (bi > bj) {", f"if ({test}) {{")
    lifted = lift_kernel(source, entry="syrk_upper", grid=["ceil_div(n, 8)", "ceil_div(n, 8)"],
                         block=["8", "8"], scalars={"n": "n", "k": "k"})
    assert "TM" not in [p.name for p in lifted.params], why
    assert any(n.startswith("REGISTER_TILE: not applied") and reason in n
               for n in lifted.notes), lifted.notes


_OFFSETS = "const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;\n"
EXIT_TESTS = {
    # the expert's spelling: the tile's first row and column named first
    "named_offsets": ("    const int i = blockIdx.y * TILE + ty;\n"
                      "    const int j = blockIdx.x * TILE + tx;\n"
                      "    if (blockIdx.x > blockIdx.y) {",
                      "    " + _OFFSETS + "    const int i = row0 + ty;\n"
                      "    const int j = col0 + tx;\n    if (col0 > row0) {"),
    # the first column past the first row, the tile size a block offset's factor
    "block_offsets": ("if (blockIdx.x > blockIdx.y) {",
                      "if ((TILE) * blockIdx.x > blockIdx.y * TILE) {"),
}


def _exit_spelling(name: str) -> Any:
    old, new = EXIT_TESTS[name]
    source = (FOLDER / "baseline.cu").read_text()
    assert old in source
    return lift_kernel(source.replace(old, new), entry="syrk_lower",
                       grid=["ceil_div(n, 16)", "ceil_div(n, 16)"], block=["16", "16"],
                       scalars={"n": "n", "k": "k"})


@pytest.mark.parametrize("name", list(EXIT_TESTS))
def test_other_spellings_of_the_exit_test_lift_the_square_register_tile(name: str) -> None:
    lifted = _exit_spelling(name)
    assert [p.name for p in lifted.params] == KNOBS, lifted.notes
    assert "BM == BN" in lifted.constraints


@needs_gxx
@pytest.mark.timeout(900)
def test_the_block_offset_exit_matches_the_plain_kernel_at_its_corners(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """``(TILE) * blockIdx.x > blockIdx.y * TILE`` reads ``(BN) * blockIdx.x > blockIdx.y *
    BM``: the default, a 32 tile of 4 x 2 and the last all-ends config."""
    kf = load_kernel_folder(FOLDER)
    template = lifted_template(_exit_spelling("block_offsets"), "syrk_lower")
    assert "if ((BN) * blockIdx.x > blockIdx.y * BM) {" in template.source
    env = kf.env(kf.check_shape, "fp32")
    want = held_back_unseen11.SET.plain_outputs("syrk_lower", tmp_path / "plain", host_flags)
    for i, config in enumerate([dict(template.default_config()), MIXES[2],
                                end_configs(template, env)[-1]]):
        source = held_back_unseen11.host_source(template.render(config, "fp32").source)
        got = _run(kf, source, template.launch_for(config, env), _inputs(kf),
                   tmp_path / f"config{i}", host_flags)
        _assert_same(kf, got, want, f"the block-offset exit at {config}")


def _checked(template: Any, env: dict[str, Any]) -> list[dict[str, Any]]:
    """The default, every all-ends config and the mixes (each valid once)."""
    space = template.space(env)
    out: list[dict[str, Any]] = []
    for config in [dict(template.default_config()), *end_configs(template, env), *MIXES]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return out


@needs_gxx
@pytest.mark.timeout(900)
def test_the_class_with_a_constant_matches_the_plain_kernel_at_its_corners(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """The default, the last all-ends config and the last mix."""
    kf = load_kernel_folder(FOLDER)
    template = lifted_template(_lift_with_constant(), "syrk_lower")
    env = kf.env(kf.check_shape, "fp32")
    configs = [dict(template.default_config()), end_configs(template, env)[-1], MIXES[-1]]
    want = held_back_unseen11.SET.plain_outputs("syrk_lower", tmp_path / "plain", host_flags)
    for i, config in enumerate(configs):
        assert template.space(env).rejection(config) is None, config
        source = held_back_unseen11.host_source(template.render(config, "fp32").source)
        got = _run(kf, source, template.launch_for(config, env), _inputs(kf),
                   tmp_path / f"config{i}", host_flags)
        _assert_same(kf, got, want, f"the class with a constant at {config}")


@needs_gxx
@pytest.mark.timeout(1500)
def test_the_lift_matches_the_plain_kernel_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(template, env)
    assert len(configs) >= 1 + 4 + len(MIXES), configs
    inputs = _inputs(kf)
    want = held_back_unseen11.SET.plain_outputs("syrk_lower", tmp_path / "plain", host_flags)
    for i, config in enumerate(configs):
        source = held_back_unseen11.host_source(template.render(config, "fp32").source)
        got = _run(kf, source, template.launch_for(config, env), inputs,
                   tmp_path / f"config{i}", host_flags)
        _assert_same(kf, got, want, f"syrk_lower's lift at {config}")


_UPPER_MAIN = r"""
int main() {
  const int n = %(n)d, k = %(k)d;
  std::vector<float> A(n * k), C(n * n, std::nanf(""));
  for (int i = 0; i < n * k; ++i) A[i] = (float)((i * 37) %% 17 - 8) / 8.0f;
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1},
            [&] { syrk_upper(C.data(), A.data(), n, k); });
  double worst = 0.0;
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) {
      double want = 0.0;
      for (int q = 0; c >= r && q < k; ++q) want += (double)A[r * k + q] * A[c * k + q];
      const float got = C[r * n + c];
      worst = got != got ? 1e30 : std::max(worst, std::fabs(want - got));
    }
  std::printf("%%.9g\n", worst);
  return 0;
}
"""


def _upper_error(template: Any, config: dict[str, Any], work: Path) -> float:
    env = {"n": 45, "k": 37, "elem_bytes": 4}
    launch = template.launch_for(config, env)
    main = _UPPER_MAIN % {"n": env["n"], "k": env["k"], "gx": launch.grid[0],
                          "gy": launch.grid[1], "bx": launch.block[0], "by": launch.block[1]}
    program = COOPERATIVE_BLOCK + HOST_PRELUDE + template.render(config, "fp32").source + main
    work.mkdir()
    return float(run_on_host(work, "syrk_upper", program))


@needs_gxx
@pytest.mark.timeout(1500)
def test_the_second_spelling_computes_the_upper_product_at_every_end_and_the_mixes(
        tmp_path: Path) -> None:
    template = lifted_template(_upper(), "syrk_upper")
    configs = _checked(template, {"n": 45, "k": 37, "elem_bytes": 4})
    assert len(configs) >= 1 + 4 + len(MIXES), configs
    for i, config in enumerate(configs):
        assert _upper_error(template, config, tmp_path / f"config{i}") < 1e-3, config


@needs_gxx
@pytest.mark.timeout(600)
def test_an_exit_declaring_its_own_local_declares_it_per_virtual_thread(
        tmp_path: Path) -> None:
    """``const size_t at = (size_t)r * n + c;`` in the exit's body is declared inside the
    loop over the register tile, as an epilogue's local is (it was inlined as a value of the
    prologue: its declaration then read ``const size_t (..) = ..``, no config compiled)."""
    source = SPELLING.read_text().replace(
        "      if (r < n && c < n) out[(size_t)r * n + c] = 0.0f;\n",
        "      const size_t at = (size_t)r * n + c;\n      if (r < n && c < n) out[at] = 0.0f;\n")
    assert "out[at]" in source
    lifted = lift_kernel(source, entry="syrk_upper", grid=["ceil_div(n, 8)", "ceil_div(n, 8)"],
                         block=["8", "8"], scalars={"n": "n", "k": "k"})
    template = lifted_template(lifted, "syrk_upper")
    assert "const size_t at = " in template.source
    env = {"n": 45, "k": 37, "elem_bytes": 4}
    for i, config in enumerate([dict(template.default_config()), MIXES[1],
                                end_configs(template, env)[-1]]):
        assert _upper_error(template, config, tmp_path / f"config{i}") < 1e-3, config


_ZERO_AT = ("__device__ void zero_at(float* o, int r, int c, int n) {{ if (r < n && c < n) "
            "o[(size_t)r * n + c{extra}] = 0.0f; }}\n")


def _zero_at_exit(extra: str) -> str:
    """The upper spelling whose exit fills through a helper of the file."""
    old = "      if (r < n && c < n) out[(size_t)r * n + c] = 0.0f;\n"
    assert old in SPELLING.read_text()
    return _ZERO_AT.format(extra=extra) + SPELLING.read_text().replace(
        old, "      zero_at(out, r, c, n);\n")


def test_an_exit_calling_a_helper_that_reads_the_thread_is_refused() -> None:
    lifted = lift_kernel(_zero_at_exit(" + 0 * threadIdx.x"), entry="syrk_upper",
                         grid=["ceil_div(n, 8)", "ceil_div(n, 8)"], block=["8", "8"],
                         scalars={"n": "n", "k": "k"})
    assert "TM" not in [p.name for p in lifted.params]
    assert any("the early exit calls zero_at, which reads the thread's place itself" in n
               for n in lifted.notes), lifted.notes


@needs_gxx
@pytest.mark.timeout(600)
def test_an_exit_calling_a_helper_of_its_arguments_runs_it_per_virtual_thread(
        tmp_path: Path) -> None:
    lifted = lift_kernel(_zero_at_exit(""), entry="syrk_upper",
                         grid=["ceil_div(n, 8)", "ceil_div(n, 8)"], block=["8", "8"],
                         scalars={"n": "n", "k": "k"})
    template = lifted_template(lifted, "syrk_upper")
    assert [p.name for p in lifted.params] == KNOBS, lifted.notes
    env = {"n": 45, "k": 37, "elem_bytes": 4}
    for i, config in enumerate([MIXES[2], end_configs(template, env)[-1]]):
        assert _upper_error(template, config, tmp_path / f"config{i}") < 1e-3, config


@needs_gxx
@pytest.mark.timeout(600)
def test_a_tile_forced_past_the_square_constraint_computes_wrong_outputs() -> None:
    """BM 8, BN 16 (the space rejects it: BM == BN): a block whose row index passes its
    column index is no longer wholly below the diagonal (rows 16..23, columns 16..31), and
    its zeros overwrite products."""
    template = lifted_template(_upper(), "syrk_upper")
    config = {"BM": 8, "BN": 16, "BK": 8, "TM": 1, "TN": 1, "VEC": 1}
    assert template.space({"n": 45, "k": 37, "elem_bytes": 4}).rejection(config) is not None
    with tempfile.TemporaryDirectory() as tmp:
        assert _upper_error(template, config, Path(tmp) / "forced") > 0.5
