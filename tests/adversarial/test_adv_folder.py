"""A hostile kernel folder: every malformed input is a KernelFolderError naming the file,
the key, the value found and what was expected; never a traceback."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from workbench.core.errors import ExpressionError, KernelFolderError
from workbench.core.expr import parse_constraint, parse_expr
from workbench.core.kernel_folder import load_kernel_folder


def edit_toml(old: str, new: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / "kernel.toml"
        text = path.read_text()
        assert old in text, old
        path.write_text(text.replace(old, new, 1))
    return apply


def write(name: str, data: bytes) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        (folder / name).write_bytes(data)
    return apply


def append(name: str, data: bytes) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        with (folder / name).open("ab") as fh:
            fh.write(data)
    return apply


def link_out(name: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        outside = folder.parent / f"outside-{name}"
        outside.write_bytes((folder / name).read_bytes())
        (folder / name).unlink()
        os.symlink(outside, folder / name)
    return apply


BYTES = '"3 * tokens * d * elem_bytes"'
OUT_SHAPE = 'shape = ["tokens", "d"]\nrole = "out"'
TOKENS_VALUE = 'value = "tokens"'

# (case, mutation, file named, words in the expectation or value)
CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("non-UTF-8 kernel.toml", append("kernel.toml", b"\n# \xff\xfe\n"), "kernel.toml", "UTF-8"),
    ("latin-1 kernel.toml", write("kernel.toml", 'name = "caf\xe9"\n'.encode("latin-1")),
     "kernel.toml", "UTF-8"),
    ("non-UTF-8 template.cu", append("template.cu", b"// \xc3\x28\n"), "template.cu", "UTF-8"),
    ("non-UTF-8 baseline.cu", append("baseline.cu", b"\x80\x81"), "baseline.cu", "UTF-8"),
    ("non-UTF-8 reference.py", append("reference.py", b"# \xfe\n"), "reference.py", "UTF-8"),
    ("NUL bytes in reference.py", append("reference.py", b"\x00\x00"), "reference.py",
     "valid Python"),
    ("array nested 1e5 deep", append("kernel.toml", b"\nnest = " + b"[" * 100_000
                                     + b"]" * 100_000 + b"\n"), "kernel.toml", "nested"),
    ("inline table nested 1e4 deep", append("kernel.toml", b"\nnest = " + b"{a=" * 10_000
                                            + b"1" + b"}" * 10_000 + b"\n"), "kernel.toml",
     "nested"),
    ("template.cu symlinked outside", link_out("template.cu"), "template.cu", "inside the kernel folder"),
    ("baseline.cu symlinked outside", link_out("baseline.cu"), "baseline.cu", "inside the kernel folder"),
    ("reference.py symlinked outside", link_out("reference.py"), "reference.py",
     "inside the kernel folder"),
    ("kernel.toml symlinked outside", link_out("kernel.toml"), "kernel.toml",
     "inside the kernel folder"),
    ("template source is a directory", lambda f: (os.remove(f / "template.cu"),
                                                  os.mkdir(f / "template.cu")), "template.cu",
     "not a regular file"),
    ("source path escapes", edit_toml('source = "template.cu"', 'source = "../template.cu"'),
     "kernel.toml", "a file name inside the kernel folder"),
    ("source absolute", edit_toml('source = "template.cu"', 'source = "/etc/passwd"'),
     "kernel.toml", "a file name inside the kernel folder"),
    ("bytes_moved divides by zero", edit_toml(BYTES, '"tokens // 0"'), "kernel.toml",
     "division by zero"),
    ("bytes_moved modulo zero", edit_toml(BYTES, '"tokens % (d - d)"'), "kernel.toml",
     "modulo by zero"),
    ("bytes_moved overflows to inf", edit_toml(BYTES, '"1e308 * 10"'), "kernel.toml", "inf"),
    ("bytes_moved is nan", edit_toml(BYTES, '"1e308 * 10 - 1e308 * 10"'), "kernel.toml", "nan"),
    ("bytes_moved times huge float", edit_toml(BYTES, '"tokens * 1e308 * d"'), "kernel.toml",
     "inf"),
    ("bytes_moved zero", edit_toml(BYTES, '"0 * tokens"'), "kernel.toml",
     "a positive number of bytes"),
    ("bytes_moved negative", edit_toml(BYTES, '"-3 * tokens * d"'), "kernel.toml",
     "a positive number of bytes"),
    ("bytes_moved int64 overflow", edit_toml(BYTES, '"tokens * 9223372036854775807"'),
     "kernel.toml", "outside the 64-bit range"),
    ("negative buffer dimension", edit_toml(OUT_SHAPE, 'shape = ["tokens", "-d"]\nrole = "out"'),
     "kernel.toml", "a non-negative integer"),
    ("negative dimension at one shape", edit_toml(OUT_SHAPE,
                                                  'shape = ["tokens", "d - 300"]\nrole = "out"'),
     "kernel.toml", "a non-negative integer"),
    ("fractional dimension", edit_toml(OUT_SHAPE, 'shape = ["tokens", "d / 7"]\nrole = "out"'),
     "kernel.toml", "d / 7"),
    ("infinite dimension", edit_toml(OUT_SHAPE, 'shape = ["tokens", "1e400"]\nrole = "out"'),
     "kernel.toml", "inf"),
    ("i32 scalar inf", edit_toml(TOKENS_VALUE, 'value = "1e308 * 10"'), "kernel.toml", "inf"),
    ("i32 scalar nan", edit_toml(TOKENS_VALUE, 'value = "1e308 * 10 - 1e308 * 10"'),
     "kernel.toml", "nan"),
    ("i32 scalar too large", edit_toml(TOKENS_VALUE, 'value = "2147483648"'), "kernel.toml",
     "fits i32"),
    ("i32 scalar too small", edit_toml(TOKENS_VALUE, 'value = "-2147483649"'), "kernel.toml",
     "fits i32"),
    ("i32 scalar fractional", edit_toml(TOKENS_VALUE, 'value = "tokens / 2"'), "kernel.toml",
     "fits i32"),
    ("i32 scalar 1e30", edit_toml(TOKENS_VALUE, 'value = "1e30"'), "kernel.toml", "fits i32"),
    ("shape size negative", edit_toml("small   = { tokens = 7,", "small   = { tokens = -7,"),
     "kernel.toml", "a positive integer"),
    ("shape size a float", edit_toml("small   = { tokens = 7,", "small   = { tokens = 7.5,"),
     "kernel.toml", "a positive integer"),
    ("shape size a string", edit_toml("small   = { tokens = 7,", 'small   = { tokens = "7",'),
     "kernel.toml", "a positive integer"),
    ("launch grid overflows", edit_toml('grid = ["tokens"]', 'grid = ["1e308 * 10"]'),
     "kernel.toml", "inf"),
    ("huge expression", edit_toml(BYTES, '"' + "tokens + " * 400 + 'tokens"'), "kernel.toml",
     "limit is 2000"),
    ("expression calls eval", edit_toml(BYTES, '"eval(\'1\')"'), "kernel.toml",
     "not allowed"),
    ("expression reads an attribute", edit_toml(BYTES, '"tokens.__class__"'), "kernel.toml",
     "not allowed"),
    ("expression subscript", edit_toml(BYTES, '"tokens[0]"'), "kernel.toml", "not allowed"),
    ("expression lambda", edit_toml(BYTES, '"(lambda: 1)()"'), "kernel.toml", "not allowed"),
    ("constraint with import", edit_toml('"VEC_BYTES >= elem_bytes",',
                                         '"__import__(\'os\').system(\'x\') == 0",'),
     "kernel.toml", "not allowed"),
    ("parameter name with a newline", edit_toml("[template.params.UNROLL]",
                                                '[template.params."UN\\nROLL"]'),
     "kernel.toml", "template.params"),
    ("parameter default outside range", edit_toml("max = 1024\ndefault = 1024",
                                                  "max = 1024\ndefault = 4096"),
     "kernel.toml", "template.params.BLOCK_THREADS"),
    ("tolerance negative", edit_toml("bf16 = { rtol = 2e-2", "bf16 = { rtol = -2e-2"),
     "kernel.toml", "a non-negative number"),
    ("unknown top-level key", edit_toml('name = "silu_and_mul"',
                                        'name = "silu_and_mul"\nshell = "rm -rf /"'),
     "kernel.toml", "one of"),
    ("unknown parameter key", append("kernel.toml", b'\nshell = "rm -rf /"\n'), "kernel.toml",
     "unknown key 'shell'"),
]


@pytest.mark.parametrize(("case", "mutate", "file", "words"), CASES, ids=[c[0] for c in CASES])
def test_malformed_folder_is_a_clean_error(case: str, mutate: Callable[[Path], None],
                                           file: str, words: str, kernel_copy: Path) -> None:
    mutate(kernel_copy)
    with pytest.raises(KernelFolderError) as info:
        load_kernel_folder(kernel_copy)
    text = str(info.value)
    assert any(p.file == file for p in info.value.problems), text
    assert words in text, text


@pytest.mark.parametrize("text", [
    "1e308 * 10", "max(1e400, 1)", "1e308 * 10 - 1e308 * 10", "-(1e308 * 10)",
    "tokens * 1e308", "min(1e400, 1e400)"])
def test_non_finite_expression_values_are_refused(text: str) -> None:
    expr = parse_expr(text, known_names=["tokens"])
    with pytest.raises(ExpressionError, match="finite number"):
        expr.evaluate({"tokens": 7})


@pytest.mark.parametrize("text", [
    "(" * 100_000 + "1" + ")" * 100_000, "-" * 100_000 + "1", "not " * 5000 + "1",
    "1 " + "+ 1 " * 3000, "2 ** 100000", "1 << 64", "9" * 3000,
    "[1, 2][0]", "{'a': 1}", "f'x'", "__builtins__", "open('x')", "x := 1",
    "lambda: 0", "await x", "yield 1", "1 if tokens else (1 for _ in ())",
])
def test_hostile_expressions_are_refused_cleanly(text: str) -> None:
    with pytest.raises(ExpressionError):
        parse_expr(text, known_names=["tokens"]).evaluate({"tokens": 7})
    with pytest.raises(ExpressionError):
        parse_constraint(text, known_names=["tokens"])
