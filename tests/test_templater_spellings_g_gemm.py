"""The tiled GEMM as other people write it, at first contact (issue 28): the kernels of
tests/spellings_g/gemm/ lifted by the offline templater and compared with the corpus's
gemm_smem lift (BM, BN, BK, TM, TN, VEC: a register tile with tied tiles and a derived
block); every checked config of each lift computes the product on the host (g++, the
cooperative block; regtile_spellings.worst_error against the product in double).

Spellings: the tile a macro with the indices through a function-like macro and the k loop a
``while`` (expanded as the preprocessor does, workbench/templater/inline_macros.py: before,
"the output's address could not be evaluated"); the kernel's body a template ``__device__``
function of the tile size; B stored column-major with a ``constexpr`` tile and the loads
through index lambdas (expanded at their calls, workbench/templater/inline_lambda.py:
before, refused with the line, a lambda's ``return`` read as an early exit).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from helpers_templater import end_configs, host_sample, lifted_template
from regtile_spellings import Spelling, lift, worst_error

HERE = Path(__file__).resolve().parent / "spellings_g" / "gemm"
GRID = ("ceil_div(N, 16)", "ceil_div(M, 16)")
MNK = {"M": "M", "N": "N", "K": "K"}
ENV = {"batch": 1, "M": 37, "N": 45, "K": 29}
CORPUS_KNOBS = {"BM", "BN", "BK", "TM", "TN", "VEC"}


def _spelling(name: str, **layout: str) -> Spelling:
    return Spelling((HERE / f"{name}.cu").read_text(), GRID, ("16", "16"), MNK,
                    "k(C, A, B, M, N, K)", **layout)


LIFTED = {"macro_index_while_k": _spelling("macro_index_while_k"),
          "template_tile_device_body": _spelling("template_tile_device_body"),
          "bt_colmajor_constexpr_lambda": _spelling("bt_colmajor_constexpr_lambda",
                                                    b_index="(size_t)c * K + k")}


@pytest.mark.parametrize("name", sorted(LIFTED))
def test_the_spelling_gets_the_corpus_knobs(name: str) -> None:
    lifted = lift(LIFTED[name])
    assert {p.name for p in lifted.params} >= CORPUS_KNOBS, lifted.notes
    assert lifted.block == ("BN // TN", "BM // TM")
    assert lifted.grid == ("ceil_div(N, BN)", "ceil_div(M, BM)")


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(LIFTED))
def test_every_checked_config_computes_the_product(name: str, tmp_path: Path) -> None:
    s = LIFTED[name]
    template = lifted_template(lift(s), s.entry)
    ends = end_configs(template, {**ENV, "elem_bytes": 4})
    configs = [dict(template.default_config()), *host_sample(ends)]
    with tempfile.TemporaryDirectory() as tmp:
        for config in configs:
            assert worst_error(s, template, config, ENV, Path(tmp)) < 1e-3, config


def test_a_macro_expands_as_the_preprocessor_expands_it() -> None:
    """No parentheses added (``1.0f / SQ(v)`` is ``1.0f / v * v``), nested calls expanded,
    a macro naming itself or defined twice left as written, lines kept."""
    from workbench.templater.inline_calls import InlinedSource
    from workbench.templater.inline_macros import expand_macros
    source = ("#define SQ(x) x * x\n#define AT(r, c) ((r) * 8 + (c))\n#define SELF(x) SELF(x)\n"
              "__global__ void k(float* o, float v) {\n"
              "  o[AT(SQ(2), threadIdx.x)] = 1.0f / SQ(v) + SELF(v);\n}\n")
    done = expand_macros(InlinedSource(source, "k.cu"), "k").text
    assert done.splitlines()[4] == \
        "  o[((2 * 2) * 8 + (threadIdx.x))] = 1.0f / v * v + SELF(v);"
    assert done.count("\n") == source.count("\n")
