"""A Kernel Tuner script written as a kernel folder: ``kernel.toml``, ``template.cu`` and
``baseline.cu`` (:func:`import_kt`, what ``workbench import-kt`` and
``workbench.import_kt(...)`` call).

The plan comes from :func:`workbench.core.kt_import.plan_kt_import` (the script is read as
data, never run). The folder is written only once it loads: the three files are first
written to a temporary folder and loaded there (every loader check, the template's defaults
at every shape), then written through the one write policy with the nearest existing folder
above the kernel folder as the root. An existing file is replaced only with ``force``; a
symlinked folder or file is refused either way.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workbench.core.hardware import default_device, device_env
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.kernel_folder.write import template_table
from workbench.core.kt_import import KtImport, plan_kt_import
from workbench.core.kt_literals import MAX_SCRIPT_BYTES, KtImportError
from workbench.core.template import KernelTemplate
from workbench.core.write_policy import check_target, ensure_folder, write_file

__all__ = ["KtImported", "import_kt", "kernel_toml", "template_of"]

SHAPE = "script"  # the one shape: the script's own problem sizes
_FILES = ("baseline.cu", "template.cu", "kernel.toml")


@dataclass(frozen=True)
class KtImported:
    """The written folder, as loaded, and the plan it was written from."""

    folder: KernelFolder
    plan: KtImport


def _q(text: str) -> str:
    """A TOML basic string (JSON escapes are valid TOML)."""
    return json.dumps(text, ensure_ascii=True)


def _list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"


def template_of(plan: KtImport) -> KernelTemplate:
    """The plan's template, parsed by the workbench's own expression parser."""
    known = [*plan.sizes, "elem_bytes", *device_env(default_device())]
    return KernelTemplate.build(name=plan.name, source=plan.template_source, entry=plan.entry,
                                params=plan.params, constraints=plan.constraints,
                                grid=plan.grid, block=plan.block, smem_bytes=plan.smem_bytes,
                                known_names=known)


def kernel_toml(plan: KtImport) -> str:
    """The kernel.toml text: sizes, tolerances, arguments, baseline and [template]."""
    sizes = ", ".join(f"{k} = {v}" for k, v in plan.sizes.items())
    lines = [f"# Imported by `workbench import-kt` from the Kernel Tuner script {_q(plan.script)}",
             f"# ({plan.configs} configs at its problem size). Review the template, then:",
             "# workbench tune <folder>.",
             f"name = {_q(plan.name)}",
             f"description = {_q(f'{plan.entry}: imported from {plan.script} (Kernel Tuner)')}",
             'dtypes = ["fp32"]',
             f"check_shape = {_q(SHAPE)}",
             "",
             "# The script's problem size; add shapes beside it (the same names).",
             "[shapes]",
             f"{SHAPE} = {{ {sizes} }}",
             "",
             "# Kernel Tuner's check: numpy.allclose with the script's atol (rtol 1e-5).",
             "[tolerances]",
             f"fp32 = {{ rtol = 1e-05, atol = {plan.atol!r} }}"]
    for arg in plan.args:
        why = "".join(ch if " " <= ch <= "~" else "?" for ch in arg.why)
        lines += ["", "[[args]]", f"name = {_q(arg.name)}", f"dtype = {_q(arg.dtype)}",
                  f"role = {_q(arg.role)}  # {why}"]
        if arg.role == "scalar":
            lines.append(f"value = {_q(arg.value or '0')}")
        else:
            lines.append(f"shape = {_list(arg.shape)}")
    lines += ["", "# The kernel at the template's defaults.", "[baseline]",
              'source = "baseline.cu"', f"entry = {_q(plan.entry)}",
              f"grid = {_list(plan.baseline_grid)}", f"block = {_list(plan.baseline_block)}",
              f"smem_bytes = {_q(plan.baseline_smem_bytes)}", "",
              "# tune_params, restrictions and the launch rules of the script."]
    return "\n".join(lines) + "\n" + template_table(template_of(plan))


def _files(plan: KtImport) -> dict[str, str]:
    return {"baseline.cu": plan.template_source, "template.cu": plan.template_source,
            "kernel.toml": kernel_toml(plan)}


def _read_script(path: Path) -> str:
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is None or not stat.S_ISREG(info.st_mode):
        raise KtImportError(f"{path}: no such file; expected a Kernel Tuner script (.py)",
                            file=str(path), line=0, expected="a Kernel Tuner script")
    if info.st_size > MAX_SCRIPT_BYTES:
        raise KtImportError(f"{path}: {info.st_size} bytes; expected at most "
                            f"{MAX_SCRIPT_BYTES}", file=str(path), line=0,
                            expected=f"at most {MAX_SCRIPT_BYTES} bytes")
    with open(path, "rb") as fh:
        data = fh.read(MAX_SCRIPT_BYTES + 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KtImportError(f"{path}: not UTF-8 (byte {exc.start})", file=str(path), line=0,
                            expected="UTF-8 text") from None


def _root_of(folder: Path) -> Path:
    root = folder.parent
    while not os.path.lexists(root) and root != root.parent:
        root = root.parent
    return root


def import_kt(script: str | Path, out: str | Path | None = None, *,
              defaults: dict[str, str] | None = None, name: str | None = None,
              force: bool = False) -> KtImported:
    """Write a kernel folder from the Kernel Tuner script ``script`` (never run) and return
    it loaded. ``out`` defaults to a folder named after the script beside it; ``defaults``
    sets parameters' defaults (``{"block_size_x": "128"}``); ``force`` replaces existing
    files (never a symlink)."""
    path = Path(script)
    plan = plan_kt_import(_read_script(path), path, defaults=defaults, name=name)
    files = _files(plan)
    with tempfile.TemporaryDirectory(prefix="workbench-import-kt-") as tmp:
        for fname, text in files.items():
            write_file(tmp, Path(tmp) / fname, text)
        load_kernel_folder(tmp)  # the folder loads before anything is written
    folder = Path(os.path.abspath(out if out is not None else path.parent / path.stem))
    if os.path.lexists(folder) and (os.path.islink(folder) or not folder.is_dir()):
        raise KtImportError(f"{folder} exists and is not a folder (or is a symlink); choose "
                            "another folder with --out DIR", file=str(folder), line=0,
                            expected="a new or existing folder")
    root = _root_of(folder)
    for fname in _FILES:
        target = folder / fname
        if os.path.lexists(target) and not force:
            raise KtImportError(f"{target} exists; pass --force to overwrite it (or --out DIR)",
                                file=str(target), line=0, expected="a folder without it")
        check_target(root, target, overwrite=force)
    ensure_folder(root, folder)
    for fname, text in files.items():
        write_file(root, folder / fname, text, overwrite=force)
    return KtImported(load_kernel_folder(folder), plan)
