"""Builders for the small kernel folders the stage-1 tests write (constants, verify hooks,
the gate): the ``kernel.toml`` pieces and the folder itself, in one place."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def toml_head(name: str, small: str, fp32_tolerance: str) -> str:
    """The lines of ``kernel.toml`` before the ``[[args]]``: one fp32 dtype, one shape
    ``small`` (``small`` is the inside of its inline table, e.g. ``"n = 100"``)."""
    return (f'name = "{name}"\ndtypes = ["fp32"]\ncheck_shape = "small"\n[shapes]\n'
            f"small = {{ {small} }}\n[tolerances]\nfp32 = {{ {fp32_tolerance} }}\n")


def toml_arg(name: str, dtype: str, role: str, *, shape: tuple[str, ...] = (),
             value: str | None = None, compare: str | None = None) -> str:
    """One ``[[args]]`` table, one key a line, ending in a newline."""
    lines = ["[[args]]", f'name = "{name}"', f'dtype = "{dtype}"', f'role = "{role}"']
    if shape:
        lines.append("shape = [" + ", ".join(f'"{s}"' for s in shape) + "]")
    if value is not None:
        lines.append(f'value = "{value}"')
    if compare is not None:
        lines.append(f'compare = "{compare}"')
    return "\n".join(lines) + "\n"


def scalar_arg(name: str) -> str:
    """An ``i32`` scalar argument whose value is the problem size of the same name."""
    return toml_arg(name, "i32", "scalar", value=name)


def blur3_toml(baseline_source: str) -> str:
    """``kernel.toml`` of the 3 x 3 box blur ``blur3(out, in, h, w)`` on a 45 x 61 image,
    its baseline ``baseline_source`` launched on 16 x 16 blocks (no ``[template]``)."""
    return (toml_head("blur3", "h = 45, w = 61", "rtol = 1e-5, atol = 1e-6")
            + toml_arg("out", "f32", "out", shape=("h", "w"))
            + toml_arg("in", "f32", "in", shape=("h", "w"))
            + scalar_arg("h") + scalar_arg("w")
            + f'[baseline]\nsource = "{baseline_source}"\nentry = "blur3"\n'
            + 'grid = ["ceil_div(w, 16)", "ceil_div(h, 16)"]\nblock = ["16", "16"]\n')


def write_folder(path: Path, files: Mapping[str, str | None]) -> Path:
    """``path`` (created if missing) holding each named file; a ``None`` text is skipped."""
    path.mkdir(exist_ok=True)
    for name, text in files.items():
        if text is not None:
            (path / name).write_text(text)
    return path
