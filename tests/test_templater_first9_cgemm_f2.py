"""First contact with held-back set 9's complex GEMM (issue 28): benchmarks/
corpus_compute_unseen9/cgemm_f2 stages its tiles with ``if (in range) { re = A[..]; im =
A[..]; } else { re = 0; im = 0; }``, which the register-tile family refused ("not a store of
a shared tile"), so only TUNED_TILE and MIN_BLOCKS_PER_SM lifted (1.04x on the H100 where
the expert's register tile reached 1.84x). workbench/templater/select_stores.py reads such
a fill as one select per element before the analysis; the lift now gets BM, BN, BK, TM, TN.

Pure: the knobs, the rewrite's text (lines kept, order kept, braces where the if is a
loop's body, comments kept) and the forms it leaves as written. Host (g++): the lift at its
default, every all-ends config, the expert's tuned pick spelled in the lift's knobs and two
mixes, each against the plain kernel within the folder's tolerance; two real-GEMM spellings
of the fill (an unbraced inverted if / else, written load first; bool flags with braces and
comments) lift the register tile with its vector loads and compute the product at their
default and every all-ends config; a spelling with float2 tiles (its element size now known)
lifts the register tile and computes the complex product at the default, every all-ends
config and the mixes; the kernel written as its expert reads A and B (a float2 view,
``reinterpret_cast<const float2*>(A)``, and float2 tiles) lifts it too and matches the plain
kernel at the same configs, while views of anything but a bare parameter stay refused.

Not lifted yet: VEC on the interleaved pairs (regtile_vec: "the index of A[2 * (row * K +
ka)] does not step by one element along the tile's row"); the re and im tiles stay two
scalar loads and two 4-byte shared reads where the expert loads and reads one float2.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import held_back_unseen9
import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    end_configs,
    lifted_template,
    needs_gxx,
    run_on_host,
)
from regtile_spellings import Spelling, lift, worst_error
from test_corpus_unseen3 import (
    HOST_PRELUDE,
    _assert_same,
    _inputs,
    _run,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.select_stores import select_stores
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen9.ROOT / "cgemm_f2"
HERE = Path(__file__).resolve().parent / "spellings_f9c"
GEMM_KNOBS = ("BM", "BN", "BK", "TM", "TN")
#: The expert's tuned pick on the H100 (BM 64, BN 64, BK 8, TM 8, TN 4; its PAD has no
#: counterpart: the lift pads the transposed A tiles itself), then two mixes: a square 4 x 4
#: tile over a 32 x 64 block, a tall 128 x 32 block of 4 x 8 tiles at depth 16.
MIXES = [{"BM": 64, "BN": 64, "BK": 8, "TM": 8, "TN": 4},
         {"BM": 32, "BN": 64, "BK": 16, "TM": 4, "TN": 4},
         {"BM": 128, "BN": 32, "BK": 16, "TM": 4, "TN": 8}]


def test_the_complex_gemm_lifts_the_register_tile() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    names = tuple(p.name for p in result.lifted.params)
    assert names == GEMM_KNOBS, result.notes
    assert result.lifted.block == ("BN // TN", "BM // TM")
    assert result.lifted.grid == ("ceil_div(N, BN)", "ceil_div(M, BM)")
    assert not [n for n in result.notes if n.startswith("REGISTER_TILE: not applied")]
    # all four tiles (real and imaginary parts of A and of B) follow the tile sizes
    for tile in ("a_re[BK][BM + 1]", "a_im[BK][BM + 1]", "b_re[BK][BN]", "b_im[BK][BN]"):
        assert tile in result.lifted.source


def _selects(source: str) -> list[str]:
    return select_stores(InlinedSource(source, "k.cu"), "k").text.splitlines()


_TWO = """__global__ void k(float* a, int n) {
  __shared__ float s[8], u[8];
  for (int t = 0; t < n; t += 8) {
    if (t + threadIdx.x < n) {  // inside
      s[threadIdx.x] = a[t + threadIdx.x];
      u[threadIdx.x] = a[t + threadIdx.x] * 2.0f;
    } else {
      s[threadIdx.x] = 0.0f;
      u[threadIdx.x] = (n > 3) ? 1.0f : 0.0f;
    }
    a[t] = s[0] + u[1];
  }
}
"""


def test_a_fill_becomes_one_select_per_element_on_its_line() -> None:
    lines = _selects(_TWO)
    assert len(lines) == len(_TWO.splitlines())
    assert lines[3] == "    // inside"
    assert lines[4] == ("      s[threadIdx.x] = (t + threadIdx.x < n) ? a[t + threadIdx.x] : "
                        "0.0f;")
    assert lines[5] == ("      u[threadIdx.x] = (t + threadIdx.x < n) ? a[t + threadIdx.x] * "
                        "2.0f : ((n > 3) ? 1.0f : 0.0f);")
    assert [ln.strip() for ln in lines[6:10]] == ["", "", "", ""]


def test_a_fill_whose_else_side_loads_is_written_load_first() -> None:
    source = ("__global__ void k(const float* a, int n) {\n  __shared__ float s[8];\n"
              "  if (threadIdx.x >= n) s[threadIdx.x] = 0.0f; else s[threadIdx.x] = "
              "__ldg(a + threadIdx.x);\n}\n")
    assert _selects(source)[2] == \
        "  s[threadIdx.x] = !(threadIdx.x >= n) ? __ldg(a + threadIdx.x) : 0.0f;"


def test_an_if_that_is_a_loops_whole_body_keeps_its_braces() -> None:
    source = ("__global__ void k(const float* a, int n) {\n  __shared__ float s[8];\n"
              "  for (int i = 0; i < 2; ++i)\n    if (i < n) s[i] = a[i];\n"
              "    else s[i] = 0.0f;\n  __syncthreads();\n}\n")
    lines = _selects(source)
    assert lines[3] == "    { s[i] = (i < n) ? a[i] : 0.0f;"
    assert lines[4] == " }"


@pytest.mark.parametrize(("why", "branches"), [
    ("no else: the element keeps its old value", "if (c) s[i] = a[i];"),
    ("a global store", "if (c) g[i] = a[i]; else g[i] = 0.0f;"),
    ("the condition calls a function", "if (f(i)) s[i] = a[i]; else s[i] = 0.0f;"),
    ("the condition reads a stored array", "if (s[0] > 0) s[i] = a[i]; else s[i] = 0.0f;"),
    ("the condition assigns", "if (i++ < 4) s[i] = a[i]; else s[i] = 0.0f;"),
    ("other elements on each side", "if (c) s[i] = a[i]; else s[i + 1] = 0.0f;"),
    ("the same elements in another order",
     "if (c) { s[i] = a[i]; u[i] = a[i]; } else { u[i] = 0.0f; s[i] = 0.0f; }"),
    ("an element stored twice", "if (c) { s[i] = a[i]; s[i] = 1.0f; } else { s[i] = 0.0f; "
     "s[i] = 0.0f; }"),
    ("a compound assignment", "if (c) s[i] += a[i]; else s[i] = 0.0f;"),
    ("a chained assignment", "if (c) s[i] = u[i] = a[i]; else s[i] = 0.0f;"),
    ("a declaration in a branch", "if (c) { float v = a[i]; s[i] = v; } else s[i] = 0.0f;"),
])
def test_forms_that_are_not_a_select_fill_stay_as_written(why: str, branches: str) -> None:
    source = ("__device__ bool f(int);\n__global__ void k(const float* a, float* g, int i, "
              "bool c) {\n  __shared__ float s[8], u[8];\n  " + branches + "\n}\n")
    assert select_stores(InlinedSource(source, "k.cu"), "k").text == source, why


def test_an_else_if_chain_selects_its_last_if_only() -> None:
    """The outer ``if``'s else is an ``if``, not stores: it stays; the inner one, the whole
    body of the ``else``, becomes a select in braces."""
    source = ("__global__ void k(const float* a, int i, bool c) {\n  __shared__ float s[8];\n"
              "  if (c) s[i] = a[i]; else if (i > 2) s[i] = 1.0f; else s[i] = 0.0f;\n}\n")
    assert _selects(source)[2] == \
        "  if (c) s[i] = a[i]; else { s[i] = (i > 2) ? 1.0f : 0.0f; }"


def _spelling(name: str) -> Spelling:
    return Spelling((HERE / f"{name}.cu").read_text(), ("ceil_div(N, 16)", "ceil_div(M, 16)"),
                    ("16", "16"), {"M": "M", "N": "N", "K": "K"}, "k(C, A, B, M, N, K)")


SPELLINGS = ("ifelse_inverted_unbraced", "ifelse_bool_flags_constexpr")


@pytest.mark.parametrize("name", SPELLINGS)
def test_other_spellings_of_the_fill_lift_the_register_tile_and_its_vector_loads(
        name: str) -> None:
    """The inverted fill (zero when out of range, else the load) too: its select is written
    load first, so the vector loads read its bounds."""
    lifted = lift(_spelling(name))
    assert [p.name for p in lifted.params] == [*GEMM_KNOBS, "VEC"], lifted.notes
    assert lifted.block == ("BN // TN", "BM // TM")


@needs_gxx
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", SPELLINGS)
def test_other_spellings_compute_the_product_at_every_end(name: str) -> None:
    s = _spelling(name)
    template = lifted_template(lift(s), s.entry)
    env = {"batch": 1, "M": 37, "N": 45, "K": 29}
    configs = [dict(template.default_config()),
               *end_configs(template, {**env, "elem_bytes": 4})]
    assert len(configs) >= 6, configs
    with tempfile.TemporaryDirectory() as tmp:
        for config in configs:
            assert worst_error(s, template, config, env, Path(tmp)) < 1e-3, config


def _checked(template: Any, env: dict[str, Any]) -> list[dict[str, Any]]:
    """The default, every all-ends config and the mixes, each in the space once."""
    space = template.space(env)
    out: list[dict[str, Any]] = []
    for config in [dict(template.default_config()), *end_configs(template, env), *MIXES]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return out


def _matches_the_plain_kernel(kf: KernelFolder, what: str, tmp_path: Path,
                              flags: tuple[str, ...]) -> None:
    """``kf``'s lift at the default, the 7 all-ends configs and MIXES computes what
    cgemm_f2 as written computes, on the host."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(template, env)
    assert len(configs) == 1 + 7 + len(MIXES), configs
    inputs = _inputs(kf)
    want = held_back_unseen9.SET.plain_outputs("cgemm_f2", tmp_path / "plain", flags)
    for i, config in enumerate(configs):
        source = held_back_unseen9.host_source(template.render(config, "fp32").source)
        got = _run(kf, source, template.launch_for(config, env), inputs,
                   tmp_path / f"config{i}", flags)
        _assert_same(kf, got, want, f"{what} at {config}")


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_lift_matches_the_plain_kernel_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    _matches_the_plain_kernel(load_kernel_folder(FOLDER), "cgemm_f2's lift", tmp_path,
                              host_flags)


def _float2_tiles(pair: str = "float2") -> Any:
    source = (HERE / "cgemm_float2_tiles.cu").read_text()
    if pair == "double2":  # the same kernel over double pairs
        source = source.replace("float2", "double2").replace("float re", "double re") \
            .replace("float* C", "double* C").replace("0.0f", "0.0")
    return lift_kernel(source, entry="k", grid=["ceil_div(N, 16)", "ceil_div(M, 16)"],
                       block=["16", "16"], scalars={"M": "M", "N": "N", "K": "K"})


def test_float2_tiles_lift_the_register_tile_sized_in_pairs() -> None:
    """A tile of float2 (double2: a complex pair an element) has a known size: 8 (16) bytes
    an element in the shared-memory bound (before: 'a shared tile has an element type of unknown
    size')."""
    lifted = _float2_tiles()
    assert [p.name for p in lifted.params] == list(GEMM_KNOBS), lifted.notes
    assert "8 * BK * (BM + 1) + 8 * BK * BN <= 49152" in lifted.constraints
    lifted = _float2_tiles("double2")
    assert [p.name for p in lifted.params] == list(GEMM_KNOBS), lifted.notes
    assert "16 * BK * (BM + 1) + 16 * BK * BN <= 49152" in lifted.constraints


_COMPLEX_MAIN = r"""
int main() {
  const int M = %(M)d, N = %(N)d, K = %(K)d;
  std::vector<float2> A(M * K), B(K * N);
  std::vector<float> C(2 * M * N, std::nanf(""));
  for (int i = 0; i < M * K; ++i)
    A[i] = make_float2((float)((i * 37) %% 17 - 8) / 8.0f, (float)((i * 13) %% 11 - 5) / 4.0f);
  for (int i = 0; i < K * N; ++i)
    B[i] = make_float2((float)((i * 29) %% 13 - 6) / 4.0f, (float)((i * 7) %% 5 - 2) / 2.0f);
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1},
            [&] { k(C.data(), A.data(), B.data(), M, N, K); });
  double worst = 0.0;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double re = 0.0, im = 0.0;
      for (int q = 0; q < K; ++q) {
        const float2 a = A[r * K + q], b = B[q * N + c];
        re += (double)a.x * b.x - (double)a.y * b.y;
        im += (double)a.x * b.y + (double)a.y * b.x;
      }
      const float got_re = C[2 * (r * N + c)], got_im = C[2 * (r * N + c) + 1];
      worst = std::max(worst, std::max(std::fabs(re - got_re), std::fabs(im - got_im)));
      if (got_re != got_re || got_im != got_im) worst = 1e30;  // an output never written
    }
  std::printf("%%.9g\n", worst);
  return 0;
}
"""


@needs_gxx
@pytest.mark.timeout(900)
def test_float2_tiles_compute_the_complex_product_at_every_end_and_the_mixes(
        tmp_path: Path) -> None:
    template = lifted_template(_float2_tiles(), "k")
    env = {"M": 37, "N": 29, "K": 21}
    configs = _checked(template, {**env, "elem_bytes": 4})
    assert len(configs) >= 8, configs
    for i, config in enumerate(configs):
        launch = template.launch_for(config, {**env, "elem_bytes": 4})
        main = _COMPLEX_MAIN % {**env, "gx": launch.grid[0], "gy": launch.grid[1],
                                "bx": launch.block[0], "by": launch.block[1]}
        program = COOPERATIVE_BLOCK + HOST_PRELUDE + template.render(config, "fp32").source + main
        work = tmp_path / f"config{i}"
        work.mkdir()
        worst = float(run_on_host(work, "cgemm", program))
        assert worst < 1e-3, (config, worst)


def _view_folder(root: Path) -> Path:
    """cgemm_f2's folder (shapes, arguments, launch, reference) with
    tests/spellings_f9c/cgemm_float2_view.cu as the kernel as written."""
    folder = root / "cgemm_f2"
    folder.mkdir()
    for name in ("kernel.toml", "reference.py"):
        shutil.copy(FOLDER / name, folder / name)
    view = (HERE / "cgemm_float2_view.cu").read_text()
    for name in ("baseline.cu", "cgemm_f2.cu"):
        (folder / name).write_text(view)
    return folder


def test_a_float2_view_of_the_float_arguments_lifts_the_register_tile(tmp_path: Path) -> None:
    """``const float2* A2 = reinterpret_cast<const float2*>(A)``: the tile loads' addresses
    are read in pairs from the parameter's base (before: 'the load `A2[..]` of tile as
    cannot be shown to move by one block along rows')."""
    result = offline_template(load_kernel_folder(_view_folder(tmp_path)))
    assert [p.name for p in result.lifted.params] == list(GEMM_KNOBS), result.notes
    assert "as[BK][BM + 1]" in result.lifted.source


@pytest.mark.parametrize("view", [
    "reinterpret_cast<const float2*>(A + 2 * blockIdx.y)",  # offset in floats, not pairs
    "reinterpret_cast<const float2*>(A) + threadIdx.x",  # not a plain view
])
def test_a_view_of_anything_but_a_parameter_is_not_read(view: str, tmp_path: Path) -> None:
    folder = _view_folder(tmp_path)
    for name in ("baseline.cu", "cgemm_f2.cu"):
        source = (folder / name).read_text()
        (folder / name).write_text(source.replace("reinterpret_cast<const float2*>(A)", view))
    result = offline_template(load_kernel_folder(folder))
    assert "BM" not in [p.name for p in result.lifted.params]
    assert any("A2" in n and "REGISTER_TILE: not applied" in n for n in result.notes), \
        result.notes


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_float2_view_matches_the_plain_kernel_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    _matches_the_plain_kernel(load_kernel_folder(_view_folder(tmp_path)),
                              "the float2 view's lift", tmp_path, host_flags)


def test_the_lift_is_the_same_under_any_hash_seed() -> None:
    """The accumulators were declared in a set's order, so the written template changed with
    PYTHONHASHSEED (acc_im before or after acc_re): two processes of different seeds write
    the same text."""
    import hashlib
    import os
    import subprocess
    import sys

    script = ("import hashlib, sys; from pathlib import Path; "
              "from workbench.core.kernel_folder import load_kernel_folder; "
              "from workbench.templater.offline import offline_template; "
              "r = offline_template(load_kernel_folder(Path(sys.argv[1]))); "
              "print(hashlib.sha256(r.lifted.source.encode()).hexdigest())")
    folder = str(held_back_unseen9.ROOT / "cgemm_f2")
    digests = {subprocess.run([sys.executable, "-c", script, folder], check=True,
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout
               for seed in ("1", "2")}
    assert len(digests) == 1, digests
    assert len(digests.pop().strip()) == len(hashlib.sha256().hexdigest())
