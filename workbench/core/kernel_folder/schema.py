"""The kernel folder's schema: the typed records a loaded folder is, and kernel.toml's keys.

:class:`KernelFolder` (the validated folder), :class:`ArgSpec` (one kernel argument),
:class:`Tolerance`, the keys kernel.toml may hold at each level and the values its fields
take (roles, scalar dtypes, compare modes, the ``FILL_IN`` placeholder). Reading a folder
into these records is :mod:`workbench.core.kernel_folder.load`.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from workbench.core.dtypes import ELEM_BYTES, INTEGER_DTYPES
from workbench.core.errors import KernelFolderError, Problem, WorkbenchError
from workbench.core.expr import Expr
from workbench.core.hardware import DeviceSpec, default_device, device_env
from workbench.core.module_constants import ConstantSpec, constants_plan
from workbench.core.space import SearchSpace
from workbench.core.template import KernelTemplate

ROLES = ("in", "out", "inout", "scalar")
SCALAR_DTYPES = ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "f32")
#: What ``workbench init`` writes where only the user knows the value.
PLACEHOLDER = "FILL_IN"
DEFAULT_DEVICE = "h100_sxm"
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # used with fullmatch (no trailing "\n")
TOP_KEYS = {"name", "description", "dtypes", "bytes_moved", "check_shape", "shapes",
            "tolerances", "args", "constants", "baseline", "template"}
ARG_KEYS = {"name", "dtype", "shape", "role", "value", "tolerance", "compare"}
#: How an output is compared with the baseline's: element by element, or (``sum``) by the
#: sum over the array, for outputs whose layout the config changes (one partial sum per
#: block): see workbench.engine.output_compare.compare_sum.
COMPARES = ("elementwise", "sum")
#: The functions reference.py may define.
REFERENCE_FUNCTIONS = ("make_inputs", "reference", "verify")
LAUNCH_KEYS = {"source", "entry", "grid", "block", "smem_bytes", "pdl"}


@dataclass(frozen=True)
class Tolerance:
    """|got - want| <= atol + rtol * |want|. Integer outputs use rtol = 0 and an integral
    atol (0: exact), compared as integers, never through float32."""

    rtol: float
    atol: float

    def to_dict(self) -> dict[str, float]:
        return {"rtol": self.rtol, "atol": self.atol}


EXACT = Tolerance(0.0, 0.0)


@dataclass(frozen=True)
class ArgSpec:
    """One kernel argument, in call order."""

    name: str
    dtype: str  # "T" (the element dtype) or one of core.dtypes.ARG_DTYPES
    role: str  # in | out | inout | scalar
    shape: tuple[Expr, ...] = ()
    value: Expr | None = None  # scalars only
    tolerance: Tolerance | None = None
    compare: str = "elementwise"  # one of COMPARES (outputs only)

    @property
    def is_buffer(self) -> bool:
        return self.role != "scalar"

    def resolved_dtype(self, dtype: str) -> str:
        """The concrete dtype name: the element dtype for "T"."""
        return dtype if self.dtype == "T" else self.dtype

    def shape_for(self, env: Mapping[str, Any]) -> tuple[int, ...]:
        return tuple(int(e.evaluate(env)) for e in self.shape)


@dataclass(frozen=True)
class KernelFolder:
    """A loaded, validated kernel folder."""

    path: Path
    name: str
    description: str
    dtypes: tuple[str, ...]
    shapes: Mapping[str, Mapping[str, int]]
    tolerances: Mapping[str, Tolerance]
    args: tuple[ArgSpec, ...]
    bytes_moved: Expr
    check_shape: str
    baseline: KernelTemplate
    template: KernelTemplate
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    has_template: bool = True  # False: no [template] yet; ``template`` is the baseline
    constants: tuple[ConstantSpec, ...] = ()  # module globals read as inputs

    def constant_layout(self, shape: str, dtype: str) -> list[dict[str, Any]]:
        """Every module-global input at (shape, dtype): name, concrete dtype and shape (the
        form the GPU worker uploads; workbench.core.module_constants)."""
        return constants_plan(self.constants, self.env(shape, dtype), dtype)

    @property
    def reference_functions(self) -> frozenset[str]:
        """Which of make_inputs / reference / verify the folder's reference.py defines
        (none: no file)."""
        ref = self.path / "reference.py"
        if not ref.is_file():
            return frozenset()
        try:
            tree = ast.parse(ref.read_text())
        except SyntaxError:
            return frozenset()
        return frozenset(n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                         and n.name in REFERENCE_FUNCTIONS)

    @property
    def shape_names(self) -> tuple[str, ...]:
        return tuple(self.shapes)

    def shape_values(self, shape: str) -> dict[str, int]:
        if shape not in self.shapes:
            raise WorkbenchError(f"unknown shape {shape!r} for {self.name}; "
                                 f"expected one of {list(self.shapes)}",
                                 key="shape", value=shape, choices=list(self.shapes))
        return dict(self.shapes[shape])

    def check_dtype(self, dtype: str) -> str:
        if dtype not in self.dtypes:
            raise WorkbenchError(f"{self.name} does not support dtype {dtype!r}; "
                                 f"expected one of {list(self.dtypes)}",
                                 key="dtype", value=dtype, choices=list(self.dtypes))
        return dtype

    def env(self, shape: str, dtype: str, device: DeviceSpec | None = None) -> dict[str, Any]:
        """Names visible to expressions: problem sizes, elem_bytes and device limits."""
        self.check_dtype(dtype)
        spec = device or default_device()
        return {**device_env(spec), **self.shape_values(shape), "elem_bytes": ELEM_BYTES[dtype]}

    def bytes_moved_for(self, shape: str, dtype: str) -> int:
        return int(self.bytes_moved.evaluate(self.env(shape, dtype)))

    def space(self, shape: str, dtype: str, device: DeviceSpec | None = None) -> SearchSpace:
        return self.template.space(self.env(shape, dtype, device))

    def tolerance_for(self, arg: ArgSpec, dtype: str) -> Tolerance:
        """The argument's own tolerance, else exact for integers, else the dtype's."""
        if arg.tolerance is not None:
            return arg.tolerance
        return EXACT if arg.resolved_dtype(dtype) in INTEGER_DTYPES else self.tolerances[dtype]

    def arg_layout(self, shape: str, dtype: str) -> list[dict[str, Any]]:
        """Every argument at (shape, dtype): name, role, concrete dtype, tolerance, and the
        buffer's shape or the scalar's value (the form the GPU worker and profiler take)."""
        env = self.env(shape, dtype)
        out = []
        for arg in self.args:
            tol = self.tolerance_for(arg, dtype)
            out.append({"name": arg.name, "role": arg.role, "dtype": arg.resolved_dtype(dtype),
                        "rtol": tol.rtol, "atol": tol.atol,
                        "shape": list(arg.shape_for(env)) if arg.is_buffer else [],
                        "value": None if arg.is_buffer or arg.value is None
                        else arg.value.evaluate(env),
                        **({"compare": arg.compare} if arg.compare != "elementwise" else {})})
        return out

    def load_reference(self) -> ModuleType:
        """Import reference.py (trusted, user-written numpy code) as a private module."""
        path = self.path / "reference.py"
        spec = importlib.util.spec_from_file_location(f"_workbench_reference_{self.name}", path)
        if spec is None or spec.loader is None:
            raise KernelFolderError(str(self.path), [Problem("reference.py", "", "unloadable",
                                                             "an importable Python file")])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


def default_bytes_moved(args: list[ArgSpec]) -> str:
    """Bytes a kernel must move at least: every buffer read once (in), written once (out)
    or both (inout), at its dtype's size; the default for kernel.toml's ``bytes_moved``."""
    from workbench.core.dtypes import arg_storage

    terms = []
    for arg in args:
        if not arg.is_buffer:
            continue
        size = "elem_bytes" if arg.dtype == "T" else str(arg_storage(arg.dtype).itemsize)
        times = "2 * " if arg.role == "inout" else ""
        terms.append(f"{times}{size} * " + " * ".join(f"({e.text})" for e in arg.shape))
    return " + ".join(terms) or "0"


