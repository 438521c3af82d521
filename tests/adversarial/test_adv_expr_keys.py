"""An expression of kernel.toml that parses but cannot be evaluated at some shape is
reported under the key that holds it (``args[1] (input).shape[0]``, ``template.grid[0]``,
``template.constraints[1]``), not under ``shapes.<name>`` where it happened to fail.

Each case edits one expression of a private copy of silu_and_mul's kernel.toml (shapes
``small`` = 7 x 264 ... ``large``; ``d - d`` is 0 at every shape, ``log2(tokens - 7)`` fails
at ``small`` only) and loads the folder for real.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.errors import KernelFolderError
from workbench.core.kernel_folder import load_kernel_folder

ZERO = "(d - d)"

#: case -> (text in kernel.toml, its hostile replacement, the key the problem must name)
CASES: dict[str, tuple[str, str, str]] = {
    "buffer shape, every shape": (
        'shape = ["tokens", "d"]', f'shape = ["tokens", "d // {ZERO}"]',
        "args[0] (out).shape[1]"),
    "buffer shape, one shape": (
        'shape = ["tokens", "2 * d"]', 'shape = ["log2(tokens - 7)", "2 * d"]',
        "args[1] (input).shape[0]"),
    "buffer shape negative": (
        'shape = ["tokens", "d"]', 'shape = ["tokens - 100", "d"]', "args[0] (out).shape[0]"),
    "scalar value": (
        'value = "tokens"', f'value = "tokens // {ZERO}"', "args[2] (tokens).value"),
    "bytes_moved": (
        '"3 * tokens * d * elem_bytes"', f'"3 * tokens * d * elem_bytes // {ZERO}"',
        "bytes_moved"),
    "template grid": (
        '"ceil_div(tokens, TOKENS_PER_BLOCK)"', f'"ceil_div(tokens, TOKENS_PER_BLOCK) % {ZERO}"',
        "template.grid[0]"),
    "template grid, one shape": (
        '"ROW_SPLIT"]', '"log2(tokens - 7)"]', "template.grid[1]"),
    "template grid fractional": (
        '"ceil_div(tokens, TOKENS_PER_BLOCK)"', '"tokens / 2"', "template.grid[0]"),
    "template block": (
        "min(BLOCK_THREADS,", f"min(BLOCK_THREADS // {ZERO},", "template.block[0]"),
    "template block negative": (
        "min(BLOCK_THREADS,", "min(0 - BLOCK_THREADS,", "template.block[0]"),
    "template smem": (
        'ROW_SPLIT))"]\nsmem_bytes = "0"', f'ROW_SPLIT))"]\nsmem_bytes = "d % {ZERO}"',
        "template.smem_bytes"),
    "template pdl": ('pdl = "PDL == 1"', f'pdl = "PDL // {ZERO} == 1"', "template.pdl"),
    "baseline grid": ('grid = ["tokens"]', f'grid = ["tokens // {ZERO}"]', "baseline.grid[0]"),
    "baseline block": (
        'block = ["min(d // (16 // elem_bytes), 1024)"]',
        'block = ["min(d // (16 // elem_bytes - 16 // elem_bytes), 1024)"]',
        "baseline.block[0]"),
    "baseline smem": (
        '1024)"]\nsmem_bytes = "0"', f'1024)"]\nsmem_bytes = "tokens % {ZERO}"',
        "baseline.smem_bytes"),
    "constraint divides by zero": (
        '"d % (VEC_BYTES // elem_bytes) == 0"', f'"d % {ZERO} == 0"',
        "template.constraints[1]"),
    "constraint not a boolean": (
        '"VEC_BYTES >= elem_bytes"', '"VEC_BYTES + elem_bytes"', "template.constraints[0]"),
    "shape-aware max": (
        'max = 8\ndefault = 1\ndescription = "blocks that share',
        f'max = "8 // {ZERO}"\ndefault = 1\ndescription = "blocks that share',
        "template.params.ROW_SPLIT.max"),
    "shape-aware choice value": (
        "values = [1, 2, 4]", f'values = [1, 2, "d // {ZERO}"]',
        "template.params.UNROLL.values[2]"),
    "shapes table value": (
        "small   = { tokens = 7,    d = 264 }", 'small   = { tokens = 7,    d = "264 +" }',
        "shapes.small.d"),
    "shapes table zero": (
        "small   = { tokens = 7,    d = 264 }", "small   = { tokens = 7,    d = 0 }",
        "shapes.small.d"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_expression_error_names_its_own_key(kernel_copy: Path, case: str) -> None:
    text, hostile, key = CASES[case]
    toml = kernel_copy / "kernel.toml"
    before = toml.read_text()
    assert before.count(text) >= 1, f"{case}: {text!r} not in kernel.toml"
    toml.write_text(before.replace(text, hostile, 1))
    with pytest.raises(KernelFolderError) as info:
        load_kernel_folder(kernel_copy)
    keys = [p.key for p in info.value.problems]
    assert keys[0] == key, info.value.problems
    if not key.startswith("shapes."):
        assert not any(k.startswith("shapes") for k in keys), keys
    assert "Traceback" not in str(info.value)


def test_the_sample_folder_still_loads(kernel_copy: Path) -> None:
    folder = load_kernel_folder(kernel_copy)
    assert folder.name == "silu_and_mul"
