"""Writing an approved template into its kernel folder: ``template.cu`` + ``[template]``.

What ``workbench propose --write`` and the panel's Approve do with a proposal. The rest of
``kernel.toml`` (the user's shapes, tolerances, comments) is kept byte for byte; only the
``[template]`` table and its sub-tables are replaced (or appended when there is none). The
written folder is loaded again before the call returns; if it does not load, the previous
files are put back and the loader's error is raised.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.template import KernelTemplate

__all__ = ["WrittenTemplate", "template_table", "with_template_table", "write_template"]

_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\" -]+?)\s*\]\]?\s*(#.*)?$")


@dataclass(frozen=True)
class WrittenTemplate:
    """The files written and the folder as loaded from them."""

    source_path: Path
    toml_path: Path
    folder: KernelFolder


def _value(value: Any) -> str:
    """A TOML value: strings as basic strings (JSON escapes are valid TOML), lists inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def template_table(template: KernelTemplate, source_name: str = "template.cu") -> str:
    """The ``[template]`` table (and one ``[template.params.NAME]`` per parameter)."""
    launch = template.launch.to_dict()
    lines = ["[template]", f"source = {_value(source_name)}", f"entry = {_value(template.entry)}",
             f"grid = {_value(launch['grid'])}", f"block = {_value(launch['block'])}",
             f"smem_bytes = {_value(launch['smem_bytes'])}"]
    if template.constraints:
        lines.append("constraints = [")
        lines += [f"    {_value(c.text)}," for c in template.constraints]
        lines.append("]")
    for p in template.params:
        lines += ["", f"[template.params.{p.name}]"]
        lines += [f"{k} = {_value(v)}" for k, v in p.to_dict().items() if v is not None]
    return "\n".join(lines) + "\n"


def _is_template_header(line: str) -> bool | None:
    """True for [template] / [template.x], False for any other table header, None otherwise."""
    match = _HEADER.match(line)
    if match is None:
        return None
    name = match.group(1).strip().strip('"')
    return name == "template" or name.startswith("template.")


def with_template_table(toml_text: str, table: str) -> str:
    """``toml_text`` with its [template] tables replaced by ``table`` (appended if absent).
    Comment lines just above a replaced table go with it."""
    lines = toml_text.splitlines()
    kept: list[str] = []
    inside = False
    placed = False
    for line in lines:
        header = _is_template_header(line)
        if header is True:
            while kept and kept[-1].lstrip().startswith("#"):
                kept.pop()
            if not placed:
                kept += table.rstrip("\n").splitlines()
                placed = True
            inside = True
            continue
        if header is False:
            inside = False
        if not inside:
            kept.append(line)
    if not placed:
        while kept and not kept[-1].strip():
            kept.pop()
        kept += ["", *table.rstrip("\n").splitlines()]
    return "\n".join(kept) + "\n"


def write_template(folder: KernelFolder | str | Path, template: KernelTemplate,
                   source_name: str = "template.cu") -> WrittenTemplate:
    """Write ``template`` into the folder; return the folder loaded from the new files."""
    path = Path(folder.path if isinstance(folder, KernelFolder) else folder)
    toml_path, source_path = path / "kernel.toml", path / source_name
    old_toml = toml_path.read_text()
    old_source = source_path.read_text() if source_path.is_file() else None
    source_path.write_text(template.source)
    toml_path.write_text(with_template_table(old_toml, template_table(template, source_name)))
    try:
        loaded = load_kernel_folder(path)
    except Exception:
        toml_path.write_text(old_toml)
        if old_source is None:
            source_path.unlink()
        else:
            source_path.write_text(old_source)
        raise
    return WrittenTemplate(source_path, toml_path, loaded)
