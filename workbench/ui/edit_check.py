"""Compile check of a range edit: the corner configs that put new values before the compiler.

Constraints and launch limits are arithmetic (``params_editor.summarize_space``); whether a
value *compiles* only nvcc can say (a template may ``static_assert`` on it: silu_and_mul's
``VEC_BYTES`` must hold whole elements, so ``VEC_BYTES = 3`` passes every constraint and
fails the compile). An edit changes what the compiler sees exactly when it adds a value no
parameter had before; for each such value :func:`corner_configs` picks one feasible config
that carries it (the default config where the constraints allow, else the feasible config
closest to it) and :func:`check_corners` compiles them, naming the parameter and value of
every failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.records import Config, Value

# Corners per edit: one per new value, capped so an edit of a wide range stays a few
# compiles (the search compiles and classifies every other value anyway).
MAX_CORNERS = 8
# Feasible configs scanned for a corner when the default config with the new value is not.
MAX_SCAN = 200_000


@dataclass(frozen=True)
class Corner:
    """A config chosen to put ``param = value`` before the compiler."""

    param: str
    value: Value
    config: Config


@dataclass(frozen=True)
class CornerFailure:
    """A corner that did not compile: which value, and the compiler's deciding line."""

    param: str
    value: Value
    config: Config
    error_kind: str
    summary: str
    log_path: str | None = None

    @property
    def message(self) -> str:
        """What was wrong, in the compiler's words (its deciding line), not only the class
        of error ("(syntax)" said nothing about a static_assert or a too-large array)."""
        said = self.summary.splitlines()[0] if self.summary.strip() else self.error_kind
        return f"{self.param} = {self.value!r} does not compile: {said}"


@dataclass(frozen=True)
class CompileCheck:
    """The outcome of compiling an edit's corners (``failures`` empty: every corner built)."""

    corners: tuple[Corner, ...]
    failures: tuple[CornerFailure, ...]
    note: str = ""  # why nothing was compiled (no nvcc, too many values), when so

    @property
    def ok(self) -> bool:
        return not self.failures


def new_values(before: Sequence[Any], after: Sequence[Any]) -> dict[str, tuple[Value, ...]]:
    """Per parameter, the values ``after`` has that ``before`` did not (in ``after``'s order)."""
    old = {p.name: set(p.values()) for p in before}
    out: dict[str, tuple[Value, ...]] = {}
    for p in after:
        added = tuple(v for v in p.values() if v not in old.get(p.name, set()))
        if added:
            out[p.name] = added
    return out


def corner_configs(template: Any, params: Sequence[Any], env: Mapping[str, Any],
                   added: Mapping[str, Sequence[Value]]) -> tuple[list[Corner], list[str]]:
    """One feasible config per added value, and the values no feasible config carries.

    A value that every constraint combination rules out never reaches the compiler (the
    search would prune it), so it is reported as unreachable rather than compiled.
    """
    from workbench.core.space import SearchSpace

    space = SearchSpace(params, template.constraints, env)
    default = Config({p.name: p.default for p in params})
    corners: list[Corner] = []
    unreachable: list[str] = []
    wanted = [(name, value) for name, values in added.items() for value in values]
    pending = []
    for name, value in wanted[:MAX_CORNERS]:
        candidate = Config({**default, name: value})
        if space.rejection(candidate) is None:
            corners.append(Corner(name, value, candidate))
        else:
            pending.append((name, value))
    if pending:
        best: dict[tuple[str, Value], tuple[int, Config]] = {}
        for i, config in enumerate(space):
            if i >= MAX_SCAN:
                break
            for name, value in pending:
                if config[name] != value:
                    continue
                distance = sum(config[k] != default[k] for k in default)
                if (name, value) not in best or distance < best[(name, value)][0]:
                    best[(name, value)] = (distance, config)
        for name, value in pending:
            if (name, value) in best:
                corners.append(Corner(name, value, best[(name, value)][1]))
            else:
                unreachable.append(f"{name} = {value!r}")
    return corners, unreachable


def check_corners(template: Any, corners: Sequence[Corner], dtype: str,
                  compiler: Any) -> CompileCheck:
    """Compile every corner with ``compiler`` (a ``workbench.engine.compiler.Compiler``)."""
    instances = {template.render(c.config, dtype).hash: c for c in corners}
    rendered = [template.render(c.config, dtype) for c in corners]
    failures: list[CornerFailure] = []
    for result in compiler.compile_many(rendered, workers=min(2, max(len(rendered), 1))):
        if result.ok:
            continue
        corner = instances[result.instance_hash]
        failures.append(CornerFailure(
            param=corner.param, value=corner.value, config=corner.config,
            error_kind=str(result.error_kind), summary=result.error_summary.strip()[:300],
            log_path=result.log_path))
    order = {(c.param, c.value): i for i, c in enumerate(corners)}
    failures.sort(key=lambda f: order[(f.param, f.value)])
    return CompileCheck(corners=tuple(corners), failures=tuple(failures))


def check_edit(template: Any, before: Sequence[Any], after: Sequence[Any],
               env: Mapping[str, Any], dtype: str, arch: str) -> CompileCheck:
    """Compile the corners of an edit from ``before`` to ``after`` (nothing new: no compile)."""
    from workbench.core.errors import CompilerNotFoundError
    from workbench.engine.compiler import Compiler

    added = new_values(before, after)
    if not added:
        return CompileCheck(corners=(), failures=())
    edited = template.with_params(after)
    corners, unreachable = corner_configs(edited, after, env, added)
    note = (f"no feasible config carries {', '.join(unreachable)}: the search never "
            "compiles it" if unreachable else "")
    try:
        compiler = Compiler(arch)
    except CompilerNotFoundError as exc:
        return CompileCheck(corners=tuple(corners), failures=(),
                            note=f"new values not compiled: {exc.message}")
    result = check_corners(edited, corners, dtype, compiler)
    return CompileCheck(corners=result.corners, failures=result.failures, note=note)
