"""Macros of other macros (``#define R (K / 2)``) read as the numbers they stand for
(:func:`workbench.templater.macros.derived_macros`), never lifted themselves: pure tests of
the reader; tests/test_templater_tile_s32.py lifts and host-checks a 1-D apron line whose
extent is such a macro (spellings_s32_tile/depthwise_conv1d_k9_derived_macros.cu)."""

from __future__ import annotations

import pytest

from workbench.core.cuda_source import parse_cuda
from workbench.templater.macros import derived_macros


def _derived(src: str, known: dict[str, int]) -> dict[str, int]:
    return derived_macros(parse_cuda(src, "k.cu"), known)


def test_a_chain_of_macros_reads_as_numbers() -> None:
    src = ("#define K 9\n#define R (K / 2)\n#define BS 256\n#define LINE (BS + 2 * R)\n"
           "#define MASK (0x10u - 1)  // low bits\n")
    assert _derived(src, {"K": 9, "BS": 256}) == {"R": 4, "LINE": 264, "MASK": 15}


@pytest.mark.parametrize("body", [
    "(K / 0)",          # a division by zero
    "((0 - K) / 2)",    # C's division of a negative: not read
    "(K / 2",           # unbalanced
    "sizeof(float)",    # a call
    "(K >> 1)",         # an operator the reader does not fold
    "(UNKNOWN * 2)",    # a name with no value
    "1.5",              # not an integer
])
def test_what_is_not_an_integer_expression_is_left_out(body: str) -> None:
    assert _derived(f"#define K 9\n#define R {body}\n", {"K": 9}) == {}


def test_a_macro_defined_twice_or_known_is_left_out() -> None:
    src = "#if A\n#define R (K / 2)\n#else\n#define R (K / 4)\n#endif\n#define K 9\n"
    assert _derived(src, {"K": 9}) == {}
    # a literal macro (known to the caller) keeps the caller's value
    assert _derived("#define K (9)\n", {"K": 9}) == {}


def test_a_wide_integral_cast_reads_through_when_the_value_fits() -> None:
    # the binding an inlined helper's template argument gets from a constexpr one
    src = ("#define N ((unsigned int)(kBlock))\n#define M ((size_t)(N) * 2)\n"
           "#define NEG ((unsigned)(0 - 1))\n#define NARROW ((unsigned char)(300))\n")
    got = _derived(src, {"kBlock": 256})
    assert got == {"N": 256, "M": 512}  # a negative cast to unsigned, a narrow cast: not read
