"""Whole-folder checks after the fields are read: the template's defaults and reference.py.

The template's defaults must satisfy its constraints and launch at every shape and dtype,
every expression of kernel.toml must evaluate there (a failure names the key that holds the
expression) and hold what it stands for (bytes, dimensions, scalar ranges); reference.py,
when present, must define make_inputs / reference / verify with the right signatures.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.core.errors import TemplateError, WorkbenchError
from workbench.core.expr import Expr
from workbench.core.kernel_folder.fields import Collector, read_text
from workbench.core.kernel_folder.schema import REFERENCE_FUNCTIONS, KernelFolder


def check_reference(c: Collector, folder: Path) -> None:
    """reference.py is optional; when present it defines make_inputs(), reference() or both."""
    ref = folder / "reference.py"
    if not ref.exists() and not ref.is_symlink():
        return
    text = read_text(c, folder, "reference.py",
                      "a numpy reference with make_inputs() and/or reference()")
    if text is None:
        return
    try:
        tree = ast.parse(text, filename=str(ref))
    except SyntaxError as exc:
        c.add("reference.py", f"line {exc.lineno}", exc.msg, "valid Python")
        return
    except (ValueError, RecursionError, MemoryError) as exc:
        c.add("reference.py", "", f"unparseable ({type(exc).__name__})", "valid Python")
        return
    defined = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if not set(defined) & set(REFERENCE_FUNCTIONS):
        c.add("reference.py", "", "none of make_inputs, reference, verify defined",
              "a top-level make_inputs(shape, dtype, rng), reference(inputs, shape, dtype) "
              "and/or verify(outputs, golden, shape)")
    verify = defined.get("verify")
    if verify is not None:
        positional = [*verify.args.posonlyargs, *verify.args.args]
        needed = len(positional) - len(verify.args.defaults)
        takes_three = verify.args.vararg is not None or len(positional) >= 3
        if not takes_three or needed > 3:
            c.add("reference.py", f"line {verify.lineno}",
                  f"verify({', '.join(a.arg for a in positional)})",
                  "verify(outputs, golden, shape): three positional parameters")


def check_defaults(c: Collector, kf: KernelFolder) -> None:
    """The template's defaults must satisfy its constraints and launch at every shape; an
    expression that does not evaluate is reported under the key that holds it."""
    default = kf.template.default_config()
    for shape in kf.shapes:
        for dtype in kf.dtypes:
            env = kf.env(shape, dtype)
            where = f"at shape {shape!r} / {dtype}"
            if not _expressions_evaluate(c, kf, env, where):
                return
            try:
                why = kf.template.space(env).rejection(default)
            except (WorkbenchError, ZeroDivisionError, OverflowError, ValueError) as exc:
                key = exc.details.get("key", "") if isinstance(exc, WorkbenchError) else ""
                c.add("kernel.toml", f"template.params.{key}" if key else "template.params",
                      f"{getattr(exc, 'message', exc)} {where}", "ranges that resolve")
                return
            if why is not None:
                c.add("kernel.toml", "template.params (defaults)", dict(default),
                      f"defaults that satisfy every constraint at shape {shape!r} / {dtype} "
                      f"(rejected by {why!r})")
                return
            if not _values_in_range(c, kf, shape, dtype, env):
                return


_EVAL_ERRORS = (WorkbenchError, ZeroDivisionError, OverflowError, ValueError, TypeError)


def _expressions_evaluate(c: Collector, kf: KernelFolder, env: Mapping[str, Any],
                          where: str) -> bool:
    """Evaluate every expression of kernel.toml at one problem (the template's at its
    defaults), each alone, so a failure names its own key (``args[1] (input).shape[0]``,
    ``template.grid[0]``, ``template.constraints[2]``), never the shape it failed at."""
    default = {k: int(v) if isinstance(v, bool) else v
               for k, v in kf.template.default_config().items()}
    config_env = {**env, **default}
    checks: list[tuple[str, Expr, Mapping[str, Any]]] = []
    for i, arg in enumerate(kf.args):
        key = f"args[{i}] ({arg.name})"
        checks.extend((f"{key}.shape[{j}]", e, env) for j, e in enumerate(arg.shape))
        if arg.value is not None:
            checks.append((f"{key}.value", arg.value, env))
    checks.append(("bytes_moved", kf.bytes_moved, env))
    sections = (("baseline", kf.baseline, env),
                ("template" if kf.has_template else "baseline", kf.template, config_env))
    for section, template, at in sections:
        rules = template.launch
        checks.extend((f"{section}.grid[{j}]", e, at) for j, e in enumerate(rules.grid))
        checks.extend((f"{section}.block[{j}]", e, at) for j, e in enumerate(rules.block))
        checks.append((f"{section}.smem_bytes", rules.smem_bytes, at))
        if rules.pdl is not None:
            checks.append((f"{section}.pdl", rules.pdl, at))
    for key, expr, at in checks:
        try:
            expr.evaluate(at)
        except _EVAL_ERRORS as exc:
            c.add("kernel.toml", key, f"{expr.text} {where}",
                  f"an expression that evaluates ({getattr(exc, 'message', exc)})")
            return False
    for i, constraint in enumerate(kf.template.constraints if kf.has_template else ()):
        try:
            constraint.holds(config_env)
        except _EVAL_ERRORS as exc:
            c.add("kernel.toml", f"template.constraints[{i}]",
                  f"{constraint.text} {where}, defaults {default}",
                  f"a constraint that evaluates to true or false "
                  f"({getattr(exc, 'message', exc)})")
            return False
    for section, template, at in sections:
        try:
            template.launch.evaluate(at)
        except TemplateError as exc:  # a value no launch can take (negative, fractional)
            c.add("kernel.toml", f"{section}.{exc.details.get('key', 'launch')}",
                  f"{exc.details.get('expr', '')} = {exc.details.get('value')!r} {where}",
                  "a non-negative integer")
            return False
    return True


_SCALAR_RANGES = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1)}


def _values_in_range(c: Collector, kf: KernelFolder, shape: str, dtype: str,
                     env: Mapping[str, Any]) -> bool:
    """bytes_moved, buffer dimensions and scalar values hold what they stand for."""
    where = f"at shape {shape!r} / {dtype}"
    return _check_ranges(c, kf, env, where)  # every expression evaluated (_check_defaults)


def _check_ranges(c: Collector, kf: KernelFolder, env: Mapping[str, Any], where: str) -> bool:
    moved = kf.bytes_moved.evaluate(env)
    if isinstance(moved, bool) or moved <= 0:
        c.add("kernel.toml", "bytes_moved", f"{kf.bytes_moved.text} = {moved} {where}",
              "a positive number of bytes")
        return False
    for index, arg in enumerate(kf.args):
        key = f"args[{index}] ({arg.name})"
        if arg.is_buffer:
            for i, expr in enumerate(arg.shape):
                dim = expr.evaluate(env)
                if isinstance(dim, bool) or dim < 0 or dim != int(dim):
                    c.add("kernel.toml", f"{key}.shape[{i}]",
                          f"{expr.text} = {dim} {where}", "a non-negative integer")
                    return False
        elif arg.value is not None:
            value = arg.value.evaluate(env)
            low, high = _SCALAR_RANGES.get(arg.dtype, (None, None))
            if low is not None and high is not None and (
                    value != int(value) or not low <= value <= high):
                c.add("kernel.toml", f"{key}.value",
                      f"{arg.value.text} = {value} {where}",
                      f"an integer that fits {arg.dtype} ({low} to {high})")
                return False
    return True
