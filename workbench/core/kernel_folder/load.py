"""Loading a kernel folder: kernel.toml and its sources into a validated KernelFolder.

Every problem is collected (:class:`~workbench.core.kernel_folder.fields.Collector`) and
raised at once as a :class:`~workbench.core.errors.KernelFolderError`, each naming the file,
the key, the value found and what was expected. The checks that need the whole folder (the
template's defaults at every shape, reference.py) are
:mod:`workbench.core.kernel_folder.checks`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.core.cuda_source import CudaSource
from workbench.core.dtypes import ARG_DTYPES, ELEM_BYTES, INTEGER_DTYPES
from workbench.core.errors import ExpressionError, KernelFolderError, ParameterError, Problem
from workbench.core.expr import parse_constraint
from workbench.core.hardware import default_device, device_env
from workbench.core.kernel_folder.checks import check_defaults, check_reference
from workbench.core.kernel_folder.fields import (
    Collector,
    parse_source,
    read_entry,
    read_expr,
    read_expr_list,
    read_int_tolerance,
    read_launch,
    read_source,
    read_text,
    read_tolerance,
)
from workbench.core.kernel_folder.schema import (
    ARG_KEYS,
    COMPARES,
    IDENT,
    LAUNCH_KEYS,
    ROLES,
    SCALAR_DTYPES,
    TOP_KEYS,
    ArgSpec,
    KernelFolder,
    Tolerance,
    default_bytes_moved,
)
from workbench.core.module_constants import (
    ConstantSpec,
    check_constant_counts,
    module_globals,
    read_constants,
)
from workbench.core.params import Parameter, parameter_from_dict
from workbench.core.shape_params import ShapeBounds, hull, split_shape_bounds
from workbench.core.template import KernelTemplate


def load_kernel_folder(path: str | Path) -> KernelFolder:
    """Load and validate a kernel folder, reporting every problem at once."""
    folder = Path(path)
    c = Collector()
    toml_path = folder / "kernel.toml"
    if not folder.is_dir():
        raise KernelFolderError(str(folder), [Problem(str(folder), "", "not a directory",
                                                      "a kernel folder")])
    if not toml_path.is_file():
        raise KernelFolderError(str(folder), [Problem("kernel.toml", "", "missing file",
                                                      "kernel.toml describing the kernel")])
    toml_text = read_text(c, folder, "kernel.toml", "kernel.toml describing the kernel")
    if toml_text is None:
        raise KernelFolderError(str(folder), c.problems)
    try:
        data = tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError as exc:
        raise KernelFolderError(str(folder), [Problem("kernel.toml", "", str(exc),
                                                      "valid TOML")]) from exc
    except RecursionError:
        raise KernelFolderError(str(folder), [Problem(
            "kernel.toml", "", "arrays or tables nested too deeply to read",
            "TOML nested a few levels deep")]) from None

    for key in sorted(set(data) - TOP_KEYS):
        c.add("kernel.toml", key, "unknown key", f"one of {sorted(TOP_KEYS)}")

    name = data.get("name")
    if not isinstance(name, str) or not IDENT.fullmatch(name):
        c.add("kernel.toml", "name", name, "a C identifier naming the kernel")
        name = "kernel"
    description = data.get("description", "")
    if not isinstance(description, str):
        c.add("kernel.toml", "description", description, "a string")
        description = ""

    dtypes_raw = data.get("dtypes")
    dtypes: list[str] = []
    if not isinstance(dtypes_raw, list) or not dtypes_raw:
        c.add("kernel.toml", "dtypes", dtypes_raw, f"a non-empty list drawn from {sorted(ELEM_BYTES)}")
    else:
        for i, d in enumerate(dtypes_raw):
            if d not in ELEM_BYTES:
                c.add("kernel.toml", f"dtypes[{i}]", d, f"one of {sorted(ELEM_BYTES)}")
            elif d not in dtypes:
                dtypes.append(d)

    # Shapes: every shape names the same integer problem sizes.
    shapes: dict[str, dict[str, int]] = {}
    names_by_shape: dict[str, frozenset[str]] = {}
    shapes_raw = data.get("shapes")
    if not isinstance(shapes_raw, dict) or not shapes_raw:
        c.add("kernel.toml", "shapes", shapes_raw, "a table of named shapes, e.g. small = { tokens = 7, d = 256 }")
    else:
        for sname, sval in shapes_raw.items():
            if not isinstance(sval, dict) or not sval:
                c.add("kernel.toml", f"shapes.{sname}", sval, "a table of positive integers")
                continue
            good = {}
            for k, v in sval.items():
                if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                    c.add("kernel.toml", f"shapes.{sname}.{k}", v, "a positive integer")
                elif not IDENT.fullmatch(k) or k.startswith("_"):
                    c.add("kernel.toml", f"shapes.{sname}.{k}", k, "a lower-case identifier")
                else:
                    good[k] = v
            shapes[sname] = good
            names_by_shape[sname] = frozenset(sval)
        keysets = set(names_by_shape.values())
        if len(keysets) > 1:
            c.add("kernel.toml", "shapes", {k: sorted(v) for k, v in names_by_shape.items()},
                  "every shape to name the same problem sizes")
    # names from every shape, valid values or not (a placeholder value is one problem, not
    # one more for each expression that names the size)
    size_names = sorted({k for v in names_by_shape.values() for k in v if IDENT.fullmatch(k)})
    env_names = [*size_names, "elem_bytes", *device_env(default_device())]

    check_shape = data.get("check_shape")
    if not isinstance(check_shape, str) or check_shape not in shapes:
        c.add("kernel.toml", "check_shape", check_shape, f"one of the shapes {sorted(shapes)}")
        check_shape = next(iter(shapes), "")

    tolerances: dict[str, Tolerance] = {}
    tol_raw = data.get("tolerances")
    if not isinstance(tol_raw, dict):
        c.add("kernel.toml", "tolerances", tol_raw, "a table of { rtol, atol } per dtype")
    else:
        for d in dtypes:
            if d not in tol_raw:
                c.add("kernel.toml", f"tolerances.{d}", "missing", "a { rtol, atol } table")
            else:
                t = read_tolerance(c, tol_raw[d], f"tolerances.{d}")
                if t:
                    tolerances[d] = t
        for d in tol_raw:
            if d not in ELEM_BYTES:
                c.add("kernel.toml", f"tolerances.{d}", d, f"a dtype in {sorted(ELEM_BYTES)}")

    bytes_moved_raw = data.get("bytes_moved")

    args: list[ArgSpec] = []
    args_raw = data.get("args")
    if not isinstance(args_raw, list) or not args_raw:
        c.add("kernel.toml", "args", args_raw, "an array of [[args]] tables")
    else:
        seen: set[str] = set()
        for i, a in enumerate(args_raw):
            key = f"args[{i}]"
            if not isinstance(a, dict):
                c.add("kernel.toml", key, a, "a table")
                continue
            for k in sorted(set(a) - ARG_KEYS):
                c.add("kernel.toml", f"{key}.{k}", "unknown key", f"one of {sorted(ARG_KEYS)}")
            aname = a.get("name")
            if not isinstance(aname, str) or not IDENT.fullmatch(aname):
                c.add("kernel.toml", f"{key}.name", aname, "a C identifier")
                continue
            key = f"args[{i}] ({aname})"
            if aname in seen:
                c.add("kernel.toml", f"{key}.name", aname, "a unique argument name")
            seen.add(aname)
            role, adtype = a.get("role"), a.get("dtype")
            if role not in ROLES:
                c.add("kernel.toml", f"{key}.role", role, f"one of {list(ROLES)}")
                continue
            if adtype not in ARG_DTYPES:
                c.add("kernel.toml", f"{key}.dtype", adtype, f"one of {list(ARG_DTYPES)}")
                continue
            tol = None
            if "tolerance" in a:
                tol = (read_int_tolerance(c, a["tolerance"], f"{key}.tolerance", adtype)
                       if adtype in INTEGER_DTYPES
                       else read_tolerance(c, a["tolerance"], f"{key}.tolerance"))
            compare = a.get("compare", "elementwise")
            if compare not in COMPARES:
                c.add("kernel.toml", f"{key}.compare", compare, f"one of {list(COMPARES)}")
                continue
            if compare != "elementwise" and role not in ("out", "inout"):
                c.add("kernel.toml", f"{key}.compare", compare,
                      f"no compare for a {role} argument (only outputs are compared)")
                continue
            if role == "scalar" and adtype not in SCALAR_DTYPES:
                c.add("kernel.toml", f"{key}.dtype", adtype,
                      f"a scalar dtype, one of {list(SCALAR_DTYPES)}")
                continue
            if role == "scalar":
                if "shape" in a:
                    c.add("kernel.toml", f"{key}.shape", a["shape"], "no shape for a scalar")
                val = read_expr(c, a.get("value"), f"{key}.value", env_names)
                if val is not None:
                    args.append(ArgSpec(aname, adtype, role, (), val, tol))
            else:
                if "value" in a:
                    c.add("kernel.toml", f"{key}.value", a["value"], "no value for a buffer")
                shp = read_expr_list(c, a.get("shape"), f"{key}.shape", env_names, 1, 8)
                if shp is not None:
                    args.append(ArgSpec(aname, adtype, role, tuple(shp), None, tol, compare))
        if len(args) == len(args_raw) and not any(a.role in ("out", "inout") for a in args):
            c.add("kernel.toml", "args", [a.name for a in args], "at least one out or inout argument")
    if bytes_moved_raw is None and args:
        bytes_moved_raw = default_bytes_moved(args)
    bytes_moved = read_expr(c, bytes_moved_raw, "bytes_moved", env_names)

    # Baseline.
    baseline: KernelTemplate | None = None
    bparsed: CudaSource | None = None
    bsrc_name: Any = "baseline.cu"
    bsec = data.get("baseline")
    if not isinstance(bsec, dict):
        c.add("kernel.toml", "baseline", bsec, "a [baseline] table with entry, grid, block")
    else:
        for k in sorted(set(bsec) - LAUNCH_KEYS):
            c.add("kernel.toml", f"baseline.{k}", "unknown key", f"one of {sorted(LAUNCH_KEYS)}")
        bsrc_name = bsec.get("source", "baseline.cu")
        bsrc = read_source(c, folder, bsrc_name, "baseline.source", "baseline.cu")
        bparsed = parse_source(c, bsrc, str(bsrc_name))
        bentry = read_entry(c, bsec, "baseline", bparsed, str(bsrc_name))
        blaunch = read_launch(c, bsec, "baseline", env_names)
        if bsrc is not None and bentry and blaunch:
            baseline = KernelTemplate(name=name, source=bsrc, entry=bentry, params=(),
                                      constraints=(), launch=blaunch, source_name=str(bsrc_name))

    # Template.
    template: KernelTemplate | None = None
    tparsed: CudaSource | None = None
    tsec = data.get("template")
    if tsec is None:
        template = baseline  # no template yet: the baseline, with no parameters
    elif not isinstance(tsec, dict):
        c.add("kernel.toml", "template", tsec, "a [template] table with entry, grid, block, params")
    else:
        allowed = LAUNCH_KEYS | {"params", "constraints"}
        for k in sorted(set(tsec) - allowed):
            c.add("kernel.toml", f"template.{k}", "unknown key", f"one of {sorted(allowed)}")
        tsrc_name = tsec.get("source", "template.cu")
        tsrc = read_source(c, folder, tsrc_name, "template.source", "template.cu")
        tparsed = parse_source(c, tsrc, str(tsrc_name))
        tentry = read_entry(c, tsec, "template", tparsed, str(tsrc_name))
        params: list[Parameter] = []
        bounds: list[ShapeBounds] = []
        praw = tsec.get("params")
        if not isinstance(praw, dict) or not praw:
            c.add("kernel.toml", "template.params", praw, "a table of parameter definitions")
        else:
            for pname, pdef in praw.items():
                if not isinstance(pdef, dict):
                    c.add("kernel.toml", f"template.params.{pname}", pdef, "a table")
                    continue
                try:
                    static, bound = split_shape_bounds(pname, pdef, env_names)
                    params.append(parameter_from_dict(pname, static))
                    if bound is not None:
                        bounds.append(bound)
                except (ParameterError, ValueError, TypeError) as exc:
                    c.add("kernel.toml", f"template.params.{pname}", pdef, str(exc))
                    continue
                if pname in env_names:
                    c.add("kernel.toml", f"template.params.{pname}", pname,
                          "a name that is not a shape size, elem_bytes or a device limit")
                if tsrc is not None and not re.search(rf"\b{re.escape(pname)}\b", tsrc):
                    c.add(str(tsrc_name), f"template.params.{pname}", pname,
                          "the parameter to be used in the template source")
        known = [*env_names, *(p.name for p in params)]
        cons = tsec.get("constraints", [])
        parsed_cons = []
        if not isinstance(cons, list):
            c.add("kernel.toml", "template.constraints", cons, "a list of constraint strings")
        else:
            for i, text in enumerate(cons):
                if not isinstance(text, str):
                    c.add("kernel.toml", f"template.constraints[{i}]", text, "a constraint string")
                    continue
                try:
                    parsed_cons.append(parse_constraint(text, known_names=known))
                except ExpressionError as exc:
                    c.add("kernel.toml", f"template.constraints[{i}]", text,
                          f"a valid constraint ({exc.message})")
        tlaunch = read_launch(c, tsec, "template", known)
        if tsrc is not None and tentry and tlaunch and isinstance(praw, dict) and \
                len(params) == len(praw):
            try:
                params = _shape_hulls(params, bounds, shapes, dtypes)
            except ParameterError as exc:
                c.add("kernel.toml", f"template.params.{exc.details.get('key', '')}",
                      exc.details.get("value"), exc.message)
            template = KernelTemplate(name=name, source=tsrc, entry=tentry, params=tuple(params),
                                      constraints=tuple(parsed_cons), launch=tlaunch,
                                      source_name=str(tsrc_name), shape_bounds=tuple(bounds))

    # Module globals read as inputs: [[constants]] plus the baseline's undeclared ones.
    constants: list[ConstantSpec] = []
    if baseline is not None or "constants" in data:
        constants, found = read_constants(data.get("constants"), env_names, bparsed,
                                          str(bsrc_name), [a.name for a in args])
        c.problems.extend(found)
        if template is not None and template is not baseline and tparsed is not None:
            held = module_globals(tparsed)
            for spec in constants:
                if spec.name not in held:
                    c.add(str(tsrc_name), "", f"no module global {spec.name}",
                          f"the template to keep the baseline's {spec.name} (an input "
                          "uploaded before every run)")

    check_reference(c, folder)

    if c.problems or baseline is None or template is None or bytes_moved is None:
        if not c.problems:  # pragma: no cover - every None above records a problem
            c.add("kernel.toml", "", "incomplete", "a complete kernel folder")
        raise KernelFolderError(str(folder), c.problems)

    kf = KernelFolder(path=folder, name=name, description=description, dtypes=tuple(dtypes),
                      shapes=shapes, tolerances=tolerances, args=tuple(args),
                      bytes_moved=bytes_moved, check_shape=check_shape, baseline=baseline,
                      template=template, raw=data, has_template=tsec is not None,
                      constants=tuple(constants))
    check_defaults(c, kf)
    for shape in kf.shapes:
        if c.problems:
            break
        c.problems.extend(check_constant_counts(kf.constants, bparsed, kf.env(shape, dtypes[0]),
                                                str(bsrc_name), f"at shape {shape!r}"))
    if c.problems:
        raise KernelFolderError(str(folder), c.problems)
    return kf


def _shape_hulls(params: list[Parameter], bounds: list[ShapeBounds],
                 shapes: Mapping[str, Mapping[str, int]], dtypes: list[str]) -> list[Parameter]:
    """Static parameters for shape-aware ones: the hull over the named shapes and dtypes on
    the default device (workbench.core.shape_params)."""
    if not bounds:
        return params
    spec = default_device()
    envs = [{**device_env(spec), **sizes, "elem_bytes": ELEM_BYTES[d]}
            for sizes in shapes.values() for d in dtypes if d in ELEM_BYTES]
    by = {b.name: b for b in bounds}
    return [hull(p, by[p.name], envs) if p.name in by else p for p in params]


