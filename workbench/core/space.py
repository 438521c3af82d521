"""The search space: the cartesian product of parameter values, filtered by constraints.

Points are numbered in a mixed radix: the first declared parameter is the most significant
digit and each digit indexes that parameter's ``values()``. Raw index order is therefore the
stable lexicographic iteration order. Filtering runs once, at construction, over blocks of
consecutive raw indices with every constraint evaluated vectorized (numpy) over a broadcast
grid of the parameters it names; only the raw indices of the feasible points are kept (8
bytes each), and :class:`Config` objects are made on demand.

:meth:`SearchSpace.rejection` answers from the same pass: it also keeps, for every raw point,
the index of the first constraint that rejects it (1 byte a point while there are fewer than
128 constraints), so naming why a config is out costs a lookup, not a scalar evaluation.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from workbench.core.errors import EmptySpaceError, ExpressionError, ParameterError, SpaceError
from workbench.core.expr import Constraint, parse_constraint
from workbench.core.params import Parameter
from workbench.core.records import Config, Value

__all__ = ["MAX_RAW_SIZE", "SearchSpace"]

MAX_RAW_SIZE = 20_000_000
_CHUNK = 1 << 18  # raw points per block (about): bounds temporary memory to a few MB
_FEASIBLE = -1  # first-failing code of a point no constraint rejects
_UNEVALUABLE = -2  # first-failing code where that constraint cannot be evaluated


class SearchSpace:
    """Feasible configurations of ``params`` under ``constraints``.

    Constraints may name parameters and anything in ``env`` (shape names, ``elem_bytes``,
    device limits); any other name raises ExpressionError here. A point where a constraint
    cannot be evaluated (division by zero, overflow) counts as rejected by it.
    """

    def __init__(self, params: Sequence[Parameter], constraints: Sequence[str | Constraint] = (),
                 env: Mapping[str, int | float] = MappingProxyType({})) -> None:
        self.params: tuple[Parameter, ...] = tuple(params)
        names = [p.name for p in self.params]
        for p in self.params:
            if not isinstance(p, Parameter):
                raise SpaceError(f"not a Parameter: {p!r}", value=p)
            if names.count(p.name) > 1:
                raise SpaceError(f"parameter {p.name} is declared more than once", name=p.name)
        self.env: Mapping[str, int | float] = MappingProxyType(dict(env))
        clash = sorted(set(names) & set(self.env))
        if clash:
            raise SpaceError(f"parameter {clash[0]} has the same name as a problem or device "
                             f"name in the environment", name=clash[0])
        self._by_name = {p.name: p for p in self.params}
        known = set(names) | set(self.env)
        parsed: list[Constraint] = []
        for item in constraints:
            constraint = (item if isinstance(item, Constraint)
                          else parse_constraint(item, known_names=known))
            unknown = sorted(constraint.names - known)
            if unknown:
                raise ExpressionError(
                    f"unknown name `{unknown[0]}` in constraint `{constraint.text}`; known "
                    f"names: {', '.join(sorted(known))}", text=constraint.text, piece=unknown[0])
            if all(c.text != constraint.text for c in parsed):  # identical text is redundant
                parsed.append(constraint)
        self.constraints: tuple[Constraint, ...] = tuple(parsed)

        self._sizes = tuple(p.size for p in self.params)
        raw_size = 1
        for size in self._sizes:
            raw_size *= size
        if raw_size > MAX_RAW_SIZE:
            raise SpaceError(
                f"search space has {raw_size} raw points; the limit is {MAX_RAW_SIZE}: narrow "
                f"some ranges ({', '.join(f'{p.name}: {p.size}' for p in self.params)})",
                raw_size=raw_size, limit=MAX_RAW_SIZE)
        self.raw_size: int = raw_size
        strides = []
        stride = 1
        for size in reversed(self._sizes):
            strides.append(stride)
            stride *= size
        self._strides: tuple[int, ...] = tuple(reversed(strides))
        self._arrays = {p.name: np.asarray(p.values()) for p in self.params}
        # (exact type, value) -> digit: a hit is a value `Parameter.index` accepts, found
        # without its validation (numpy scalars and misses take `index`)
        self._digit_of: tuple[dict[tuple[type, Value], int], ...] = tuple(
            {(type(v), v): i for i, v in enumerate(p.values())} for p in self.params)
        self._feasible: np.ndarray | None = None  # sorted raw indices; None = every point
        self._rejections = {c.text: 0 for c in self.constraints}
        self._sole_rejections = {c.text: 0 for c in self.constraints}
        self._first_failing_codes: np.ndarray | None = None  # per raw point; None: no constraints
        self._filter()
        self.size: int = self.raw_size if self._feasible is None else int(self._feasible.size)

    # ------------------------------------------------------------------ enumeration

    def _blocks(self) -> Iterator[tuple[int, dict[str, Any], tuple[int, ...]]]:
        """``(first raw index, env, shape)`` of each block of raw points, in raw order.

        A block fixes the leading parameters, takes a run of values of one parameter and
        every value of the trailing ones (up to about _CHUNK points): its points are
        consecutive raw indices. Each parameter a constraint reads is one axis of a
        broadcast grid, so a constraint is evaluated over the values of the parameters it
        names, not over every point.
        """
        if not self.params:
            yield 0, dict(self.env), ()
            return
        axis = len(self.params) - 1  # the parameter whose values a block takes a run of
        while axis > 0 and self._strides[axis - 1] <= _CHUNK:
            axis -= 1
        step = max(1, _CHUNK // self._strides[axis])
        used = set().union(*(c.names for c in self.constraints))
        for leading in itertools.product(*(range(size) for size in self._sizes[:axis])):
            for first in range(0, self._sizes[axis], step):
                digits = (*leading, first)
                runs = [slice(d, d + 1) for d in leading]
                runs += [slice(first, first + step), *(slice(None) for _ in self._sizes[axis + 1:])]
                env: dict[str, Any] = dict(self.env)
                for a, (p, run) in enumerate(zip(self.params, runs, strict=True)):
                    if p.name in used:
                        values = self._arrays[p.name][run]
                        env[p.name] = values.reshape([-1 if a == b else 1
                                                      for b in range(len(runs))])
                shape = (*([1] * axis), min(step, self._sizes[axis] - first),
                         *self._sizes[axis + 1:])
                yield sum(d * s for d, s in zip(digits, self._strides, strict=False)), env, shape

    def _fails(self, env: Mapping[str, Any], shape: tuple[int, ...],
               ) -> tuple[np.ndarray, np.ndarray]:
        """``(fails, invalid)``, each (constraints, points of the block ``shape``, in raw
        order): constraint i rejects point j (false or not evaluable), and constraint i
        cannot be evaluated there."""
        points = int(np.prod(shape))
        fails = np.empty((len(self.constraints), points), dtype=bool)
        invalids = np.empty((len(self.constraints), points), dtype=bool)
        for i, constraint in enumerate(self.constraints):
            satisfied, invalid = constraint.holds_masked(env)
            invalids[i] = np.broadcast_to(invalid, shape).reshape(-1)
            fails[i] = np.broadcast_to(~satisfied | invalid, shape).reshape(-1)
        return fails, invalids

    def _filter(self) -> None:
        if not self.constraints:
            return
        kept: list[np.ndarray] = []
        codes: list[np.ndarray] = []
        code_type = np.min_scalar_type(-max(len(self.constraints), 2))  # holds -2..n-1
        rejections = np.zeros(len(self.constraints), dtype=np.int64)
        sole = np.zeros(len(self.constraints), dtype=np.int64)
        for start, env, shape in self._blocks():
            fails, invalid = self._fails(env, shape)
            rejections += fails.sum(axis=1)
            fail_count = fails.sum(axis=0)
            sole += fails[:, fail_count == 1].sum(axis=1)
            kept.append(start + np.flatnonzero(fail_count == 0))
            code = np.full(fail_count.size, _FEASIBLE, dtype=code_type)
            for i in reversed(range(len(self.constraints))):  # the first failing one wins
                np.putmask(code, fails[i], i)
                np.putmask(code, invalid[i], _UNEVALUABLE)
            codes.append(code)
        self._feasible = np.concatenate(kept)
        self._first_failing_codes = np.concatenate(codes)
        for i, constraint in enumerate(self.constraints):
            self._rejections[constraint.text] = int(rejections[i])
            self._sole_rejections[constraint.text] = int(sole[i])

    def _first_failing(self, raw: int) -> int:
        """Index of the first constraint (declared order) rejecting the raw point, or
        _FEASIBLE, or _UNEVALUABLE where that constraint cannot be evaluated there."""
        if self._first_failing_codes is None:
            return _FEASIBLE
        return int(self._first_failing_codes[raw])

    def _raw_at(self, position: int) -> int:
        return position if self._feasible is None else int(self._feasible[position])

    def _config_from_raw(self, raw: int) -> Config:
        values: dict[str, Value] = {}
        for p, stride, size in zip(self.params, self._strides, self._sizes, strict=True):
            values[p.name] = p.values()[(raw // stride) % size]
        return Config(values)

    def _position_of_raw(self, raw: int) -> int | None:
        if self._feasible is None:
            return raw
        position = int(np.searchsorted(self._feasible, raw))
        if position < self._feasible.size and int(self._feasible[position]) == raw:
            return position
        return None

    def _digits(self, config: Mapping[str, object]) -> list[int]:
        """Value indices of ``config`` (SpaceError naming the parameter if out of range)."""
        digits = self._digits_or_problem(config)
        if isinstance(digits, str):
            raise SpaceError(digits, config=dict(config))
        return digits

    def _raw_index(self, config: Mapping[str, object]) -> int:
        digits = self._digits(config)
        return sum(d * s for d, s in zip(digits, self._strides, strict=True))

    def _digits_or_problem(self, config: object) -> list[int] | str:
        """Value indices of ``config``, or the message naming why it is out of range."""
        if not isinstance(config, Mapping):
            return f"not a mapping of parameter values: {config!r}"
        values = dict(config)
        extra = sorted(set(values) - set(self._by_name))
        if extra:
            return (f"unknown parameter {extra[0]}; parameters: "
                    f"{', '.join(p.name for p in self.params) or '(none)'}")
        digits = []
        for p, digit_of in zip(self.params, self._digit_of, strict=True):
            if p.name not in values:
                return f"missing parameter {p.name} ({p.describe_values()})"
            value = values[p.name]
            try:
                digit = digit_of.get((type(value), value))
            except TypeError:  # unhashable, so not one of the values; index names why
                digit = None
            if digit is None:
                try:
                    digit = p.index(value)
                except ParameterError:
                    return f"{p.name}={value!r} is outside its values ({p.describe_values()})"
            digits.append(digit)
        return digits

    # ------------------------------------------------------------------ public API

    def __iter__(self) -> Iterator[Config]:
        """Feasible configs in lexicographic order (declared parameter order)."""
        if self._feasible is None:
            return (self._config_from_raw(raw) for raw in range(self.raw_size))
        return (self._config_from_raw(int(raw)) for raw in self._feasible)

    def __len__(self) -> int:
        return self.size

    def __contains__(self, config: object) -> bool:
        digits = self._digits_or_problem(config)
        if isinstance(digits, str):
            return False
        raw = sum(d * s for d, s in zip(digits, self._strides, strict=True))
        return self._position_of_raw(raw) is not None

    def __repr__(self) -> str:
        return (f"SearchSpace({', '.join(p.name for p in self.params)}; "
                f"{len(self.constraints)} constraints; {self.size} of {self.raw_size} points)")

    def config_at(self, index: int) -> Config:
        """The ``index``-th feasible config in iteration order (IndexError if out of range)."""
        if not -self.size <= index < self.size:
            raise IndexError(f"config index {index} out of range for {self.size} configs")
        return self._config_from_raw(self._raw_at(index % self.size))

    def index_of(self, config: Mapping[str, object]) -> int:
        """Position of a feasible ``config`` in iteration order (SpaceError if infeasible)."""
        position = self._position_of_raw(self._raw_index(config))
        if position is None:
            raise SpaceError(f"config is not feasible: rejected by {self.rejection(config)}",
                             config=dict(config))
        return position

    def rejection(self, config: Mapping[str, object]) -> str | None:
        """Why ``config`` is not in the space: the text of the first constraint (declared
        order) that rejects it, a range message naming the parameter, or None if feasible."""
        digits = self._digits_or_problem(config)
        if isinstance(digits, str):
            return digits
        first = self._first_failing(sum(d * s for d, s in zip(digits, self._strides,
                                                                strict=True)))
        if first == _FEASIBLE:
            return None
        if first != _UNEVALUABLE:
            return self.constraints[first].text
        # the scalar evaluation names why the constraint cannot be evaluated here
        env: dict[str, Any] = dict(self.env)
        env.update(config)
        for constraint in self.constraints:
            try:
                if not constraint.holds(env):
                    return constraint.text
            except ExpressionError as exc:
                return f"{constraint.text} (cannot be evaluated: {exc.message})"
        return None

    def sample(self, n: int, seed: int) -> list[Config]:
        """``min(n, size)`` distinct feasible configs, drawn uniformly; same seed, same list."""
        if n < 0:
            raise SpaceError(f"sample size must be >= 0, got {n}", value=n)
        count = min(n, self.size)
        rng = np.random.default_rng(seed)
        if count == 0:
            return []
        positions = rng.choice(self.size, size=count, replace=False)
        return [self._config_from_raw(self._raw_at(int(p))) for p in positions]

    def neighbours(self, config: Mapping[str, object]) -> list[Config]:
        """Feasible configs that differ from ``config`` in exactly one parameter by one step
        in that parameter's ``values()`` order (parameter order, lower step first)."""
        digits = self._digits(config)
        raw = sum(d * s for d, s in zip(digits, self._strides, strict=True))
        out = []
        for digit, stride, size in zip(digits, self._strides, self._sizes, strict=True):
            for delta in (-1, 1):
                if 0 <= digit + delta < size:
                    other = raw + delta * stride
                    if self._position_of_raw(other) is not None:
                        out.append(self._config_from_raw(other))
        return out

    def rejections_by_constraint(self) -> dict[str, int]:
        """Raw points each constraint rejects, each counted independently of the others."""
        return dict(self._rejections)

    def rejections_only_by_constraint(self) -> dict[str, int]:
        """Raw points rejected by this constraint and no other: how many configs removing
        the constraint would add."""
        return dict(self._sole_rejections)

    def default_config(self) -> Config:
        """Every parameter at its default (not necessarily feasible; see :meth:`rejection`)."""
        return Config({p.name: p.default for p in self.params})

    def with_params(self, params: Sequence[Parameter]) -> SearchSpace:
        """A new space over ``params`` with the same constraints and environment."""
        return SearchSpace(params, self.constraints, self.env)

    def require_nonempty(self) -> SearchSpace:
        """Return self, or raise EmptySpaceError naming the binding constraint."""
        if self.size:
            return self
        sole = self._sole_rejections
        counts = self._rejections
        if any(sole.values()):
            binding = max(sole, key=lambda text: sole[text])
            why = (f"removing `{binding}` alone would leave {sole[binding]} config(s) "
                   f"(it rejects {counts[binding]} of {self.raw_size} raw points)")
        else:
            binding = max(counts, key=lambda text: counts[text])
            why = (f"`{binding}` rejects the most points ({counts[binding]} of "
                   f"{self.raw_size}); no single constraint's removal makes the space "
                   f"non-empty")
        per = "; ".join(f"`{t}` rejects {n}" for t, n in counts.items())
        raise EmptySpaceError(
            f"no configuration satisfies all {len(self.constraints)} constraints over "
            f"{self.raw_size} raw points: {why}. Per constraint: {per}",
            binding=binding, rejections=dict(counts), sole_rejections=dict(sole),
            raw_size=self.raw_size)

