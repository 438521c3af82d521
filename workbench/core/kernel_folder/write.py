"""Writing an approved template into its kernel folder: ``template.cu`` + ``[template]``.

What ``workbench propose --write`` and the panel's Approve do with a proposal. The rest of
``kernel.toml`` (the user's shapes, tolerances, comments) is kept byte for byte; only the
``[template]`` table and its sub-tables are replaced (or appended when there is none). The
written folder is loaded again before the call returns; if it does not load, the previous
files are put back and the loader's error is raised.

Every file goes through the one write policy (:mod:`workbench.core.write_policy`) with the
kernel folder as the root: replacing the folder's own ``kernel.toml`` and template source is
the intended update, but a symlinked ``kernel.toml``, template source, sub-folder or kernel
folder is refused before anything is read or written, and the rollback writes under the same
rule. (A file at a path a user named, a report or an export, is
:func:`workbench.core.write_policy.write_beside`.)
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.core.kernel_folder.load import load_kernel_folder
from workbench.core.kernel_folder.schema import KernelFolder
from workbench.core.template import KernelTemplate
from workbench.core.write_policy import (
    check_target,
    inside_root,
    refuse_linked_folder,
    write_file,
)

__all__ = ["WrittenTemplate", "template_table", "template_targets", "with_template_table",
           "write_template"]

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


def template_targets(folder: KernelFolder | str | Path,
                     source_name: str = "template.cu") -> tuple[Path, Path]:
    """The checked ``kernel.toml`` and template source paths :func:`write_template` would
    write (a write refused there raises here, before anything is approved or written)."""
    path = Path(os.path.abspath(folder.path if isinstance(folder, KernelFolder) else folder))
    refuse_linked_folder(path, path / "kernel.toml")
    return (check_target(path, "kernel.toml", overwrite=True),
            check_target(path, source_name, overwrite=True))


def write_template(folder: KernelFolder | str | Path, template: KernelTemplate,
                   source_name: str = "template.cu") -> WrittenTemplate:
    """Write ``template`` into the folder; return the folder loaded from the new files.

    Both targets are checked before either is read or written (a symlink anywhere between
    the folder and them, the folder itself included, raises
    :class:`~workbench.core.errors.WriteRefusedError` and nothing changes)."""
    path = Path(os.path.abspath(folder.path if isinstance(folder, KernelFolder) else folder))
    toml_path, source_path = template_targets(path, source_name)
    old_toml = toml_path.read_text(encoding="utf-8")
    old_source = source_path.read_bytes() if source_path.is_file() else None
    write_file(path, source_path, template.source, overwrite=True)
    try:
        write_file(path, toml_path, with_template_table(old_toml, template_table(template,
                                                                                  source_name)),
                   overwrite=True)
        loaded = load_kernel_folder(path)
    except Exception:
        write_file(path, toml_path, old_toml, overwrite=True)
        if old_source is None:
            inside_root(path, source_path).unlink(missing_ok=True)
        else:
            write_file(path, source_path, old_source, overwrite=True)
        raise
    return WrittenTemplate(source_path, toml_path, loaded)
