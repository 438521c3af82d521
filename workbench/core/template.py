"""Kernel templates: CUDA source + parameters + constraints + launch rules.

Rendering a config prepends a ``#define`` block and ``#line 1`` to the author's source, so
the template stays valid CUDA at its defaults and compiler errors point at the author's
lines (the Kernel Tuner / CLTune convention).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.core.defines import define_lines
from workbench.core.dtypes import CUDA_TYPES, ELEM_BYTES
from workbench.core.errors import ExpressionError, TemplateError
from workbench.core.expr import Constraint, Expr, parse_constraint, parse_expr
from workbench.core.params import Parameter
from workbench.core.records import Config, Value
from workbench.core.shape_params import ShapeBounds, accepting, resolve_params
from workbench.core.space import SearchSpace


@dataclass(frozen=True)
class Launch:
    """Concrete launch dimensions for one kernel call."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem_bytes: int
    #: launched with programmatic dependent launch (the kernel may start while the previous
    #: kernel on its stream finishes; it must wait with ``griddepcontrol.wait`` before it
    #: touches memory that kernel writes)
    pdl: bool = False

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


def _pad3(values: Sequence[int]) -> tuple[int, int, int]:
    padded = [*values, 1, 1, 1][:3]
    return (padded[0], padded[1], padded[2])


@dataclass(frozen=True)
class LaunchRules:
    """Grid, block and dynamic shared memory as expressions of parameters and problem sizes."""

    grid: tuple[Expr, ...]
    block: tuple[Expr, ...]
    smem_bytes: Expr
    pdl: Expr | None = None  # true: programmatic dependent launch (Launch.pdl)

    @classmethod
    def parse(cls, grid: Sequence[str], block: Sequence[str], smem_bytes: str = "0",
              *, known_names: Sequence[str] | None = None) -> LaunchRules:
        for label, dims in (("grid", grid), ("block", block)):
            if not 1 <= len(dims) <= 3:
                raise TemplateError(f"launch {label} needs 1 to 3 expressions, got {len(dims)}",
                                    key=label, value=list(dims))
        return cls(
            grid=tuple(parse_expr(str(g), known_names=known_names) for g in grid),
            block=tuple(parse_expr(str(b), known_names=known_names) for b in block),
            smem_bytes=parse_expr(str(smem_bytes), known_names=known_names),
        )

    @property
    def names(self) -> frozenset[str]:
        out: set[str] = set(self.smem_bytes.names) | (self.pdl.names if self.pdl else set())
        for e in (*self.grid, *self.block):
            out |= e.names
        return frozenset(out)

    def evaluate(self, env: Mapping[str, Any]) -> Launch:
        """Evaluate every dimension; each must be a non-negative integer."""

        def as_int(expr: Expr, what: str) -> int:
            value = expr.evaluate(env)
            if isinstance(value, float):
                if not value.is_integer():
                    raise TemplateError(f"launch {what} = {expr.text!r} gave {value}; expected an integer",
                                        key=what, value=value, expr=expr.text)
                value = int(value)
            if int(value) < 0:
                raise TemplateError(f"launch {what} = {expr.text!r} gave {value}; expected >= 0",
                                    key=what, value=value, expr=expr.text)
            return int(value)

        grid = _pad3([as_int(e, f"grid[{i}]") for i, e in enumerate(self.grid)])
        block = _pad3([as_int(e, f"block[{i}]") for i, e in enumerate(self.block)])
        return Launch(grid=grid, block=block, smem_bytes=as_int(self.smem_bytes, "smem_bytes"),
                      pdl=bool(self.pdl.evaluate(env)) if self.pdl is not None else False)

    def evaluate_config(self, config: Mapping[str, Value], env: Mapping[str, Any]) -> Launch:
        """The launch of ``config`` in a problem environment (shape sizes, ``elem_bytes``,
        device limits): the one evaluator every caller uses. A bool parameter counts as
        0/1, as in the rendered ``#define``; a failure is a TemplateError naming the config."""
        full = {**env, **{k: (int(v) if isinstance(v, bool) else v) for k, v in config.items()}}
        try:
            return self.evaluate(full)
        except ExpressionError as exc:
            raise TemplateError(f"launch rules failed for {dict(config)}: {exc}",
                                config=dict(config), expr=exc.text) from exc

    def to_dict(self) -> dict[str, Any]:
        return {"grid": [e.text for e in self.grid], "block": [e.text for e in self.block],
                "smem_bytes": self.smem_bytes.text,
                **({"pdl": self.pdl.text} if self.pdl is not None else {})}


@dataclass(frozen=True)
class KernelInstance:
    """A rendered, compilable kernel: one config of one template at one element dtype."""

    name: str
    entry: str
    source: str
    config: Config
    dtype: str
    hash: str


def render_source(name: str, source: str, config: Mapping[str, Value], dtype: str,
                  source_name: str = "template.cu") -> str:
    """The ``#define`` block, ``#line 1`` and the author's source."""
    if dtype not in CUDA_TYPES:
        raise TemplateError(f"unknown dtype {dtype!r}; expected one of {sorted(CUDA_TYPES)}",
                            key="dtype", value=dtype)
    lines = [
        f"#define WB_KERNEL_NAME {name}",
        f"#define SCALAR_T {CUDA_TYPES[dtype]}",
        f"#define ELEM_BYTES {ELEM_BYTES[dtype]}",
    ]
    lines += define_lines(sorted(config.items()))
    lines.append(f'#line 1 "{source_name}"')
    return "\n".join(lines) + "\n" + source


@dataclass(frozen=True)
class KernelTemplate:
    """CUDA source + parameters + constraints + launch rules + default config."""

    name: str
    source: str
    entry: str
    params: tuple[Parameter, ...]
    constraints: tuple[Constraint, ...]
    launch: LaunchRules
    source_name: str = "template.cu"
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # shape-aware bounds and choices (workbench.core.shape_params); ``params`` then holds
    # their hull over the folder's shapes, and for_env gives one problem's exact ranges
    shape_bounds: tuple[ShapeBounds, ...] = ()

    @classmethod
    def build(cls, *, name: str, source: str, entry: str, params: Sequence[Parameter] = (),
              constraints: Sequence[str | Constraint] = (), grid: Sequence[str],
              block: Sequence[str], smem_bytes: str = "0", source_name: str = "template.cu",
              known_names: Sequence[str] | None = None) -> KernelTemplate:
        """Parse constraint and launch strings once (safe parser) and assemble a template."""
        names = None if known_names is None else [*known_names, *(p.name for p in params)]
        parsed = tuple(c if isinstance(c, Constraint) else parse_constraint(c, known_names=names)
                       for c in constraints)
        return cls(name=name, source=source, entry=entry, params=tuple(params),
                   constraints=parsed,
                   launch=LaunchRules.parse(grid, block, smem_bytes, known_names=names),
                   source_name=source_name)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def source_sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    def default_config(self) -> Config:
        return Config({p.name: p.default for p in self.params})

    def for_env(self, env: Mapping[str, Any]) -> KernelTemplate:
        """This template with its shape-aware ranges resolved for one problem (``env``:
        sizes, elem_bytes, device limits); itself when it has none."""
        if not self.shape_bounds:
            return self
        return replace(self, params=resolve_params(self.params, self.shape_bounds, env),
                       shape_bounds=())

    def space(self, env: Mapping[str, Any]) -> SearchSpace:
        return SearchSpace(self.for_env(env).params, self.constraints, env)

    def launch_twins(self, configs: Sequence[Config], env: Mapping[str, Any]) -> list[Config]:
        """Each of ``configs`` with each other value of the knobs that set a launch attribute
        (those the ``pdl`` expression names), where the space holds it. Such a knob changes
        how a launch overlaps its neighbours on the stream, which one kernel's timer cannot
        see: the search measures launches one at a time, so the confirmation times the
        twins under conditions that can (back to back, in a CUDA graph)."""
        if self.launch.pdl is None:
            return []
        space = self.space(env)
        by_name = {p.name: p for p in space.params}
        twins = []
        for config in configs:
            for name in sorted(self.launch.pdl.names & set(by_name)):
                for value in by_name[name].values():
                    twin = config.replace(**{name: value})
                    if twin != config and twin in space:
                        twins.append(twin)
        return twins

    def validate_config(self, config: Mapping[str, Value]) -> Config:
        """Check names and values against the parameters (not the constraints)."""
        missing = [p.name for p in self.params if p.name not in config]
        unknown = [k for k in config if k not in self.param_names]
        if missing or unknown:
            raise TemplateError(
                f"config for {self.name} is missing {missing} and has unknown {unknown}; "
                f"expected exactly {list(self.param_names)}",
                missing=missing, unknown=unknown)
        bounds = {b.name: b for b in self.shape_bounds}
        return Config({p.name: (accepting(p, bounds[p.name], config[p.name])
                                if p.name in bounds else p).validate(config[p.name])
                       for p in self.params})

    def render(self, config: Mapping[str, Value], dtype: str) -> KernelInstance:
        cfg = self.validate_config(config)
        text = render_source(self.name, self.source, cfg, dtype, self.source_name)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        return KernelInstance(name=self.name, entry=self.entry, source=text, config=cfg,
                              dtype=dtype, hash=digest)

    def launch_for(self, config: Mapping[str, Value], env: Mapping[str, Any]) -> Launch:
        """Launch dimensions for a config in a problem environment (shape, elem_bytes, device)."""
        try:
            return self.launch.evaluate_config(config, env)
        except TemplateError as exc:
            if not isinstance(exc.__cause__, ExpressionError):
                raise  # a dimension's own check (not an integer, negative)
            raise TemplateError(f"launch rules of {self.name} failed for {dict(config)}: "
                                f"{exc.__cause__}", config=dict(config)) from exc.__cause__

    def to_dict(self) -> dict[str, Any]:
        """The one dict form: feeds the prompt, the store and the UI."""
        return {
            "name": self.name,
            "entry": self.entry,
            "source_name": self.source_name,
            "source_sha256": self.source_sha256,
            "params": {p.name: p.to_dict() for p in self.params},
            "constraints": [c.text for c in self.constraints],
            "launch": self.launch.to_dict(),
        }

    def with_params(self, params: Sequence[Parameter]) -> KernelTemplate:
        """Same template with edited parameter ranges (names must stay the same).

        A shape-aware parameter left as it was keeps its expressions (a shape outside the
        folder's still gets its own compiled-in size); one whose range was edited takes the
        edited range as written, at every shape."""
        if sorted(p.name for p in params) != sorted(self.param_names):
            raise TemplateError("edited parameters must keep the same names",
                                expected=list(self.param_names), got=[p.name for p in params])
        before = {p.name: p for p in self.params}
        after = {p.name: p for p in params}
        kept = tuple(b for b in self.shape_bounds if after[b.name] == before[b.name])
        return replace(self, params=tuple(params), shape_bounds=kept)
