"""Dispatch tables: many tuned shapes folded into few configs, and a dispatcher that maps any
problem size to one of them.

Given each tuned shape's measured configs, :func:`build_table` picks as few distinct
configs as it can such that every tuned shape's *bucket* gets one within ``tolerance_pct``
(greedy set cover: repeatedly the config that covers the most shapes not yet covered, ties to
the smaller summed slowdown), and each shape takes the chosen config that covers its bucket
best. A problem size is dispatched to the tuned shape nearest to it in log2 space (the sum
over sizes of |log2(size / tuned size)|), so a shape's bucket reaches half-way (in log2) to
each neighbouring tuned shape (:func:`neighbours`). A config's slowdown at a bucket edge is
interpolated log-linearly between the shape and that neighbour (the geometric mean of its
slowdowns at the two: :func:`bucket_ratio`), so a config that is fastest at its shape but
falls off towards the next one does not serve the shapes in between. A config covers a
shape when it is within the tolerance at the shape and its bucket ratio is within the
tolerance of the best bucket ratio any such config reaches there; where no config was
measured at a neighbour, the shape alone decides. Measuring each shape's fastest configs at
the other shapes (``workbench dispatch --cross K``) gives the interpolation its data.

:func:`leave_one_out` measures how well the table transfers: each tuned shape in turn is
left out (its measurements, and every config only its own search found), dispatched by a
table built from the others, and its loss is the measured time of the config it gets over
its own fastest.

Specialisation knobs (a compile-time size such as HIDDEN_CONST, whose choices offer the
shape's own value: :mod:`workbench.core.shape_params`) are kept symbolic: a config that
compiles in its shape's ``hidden`` is stored as ``HIDDEN_CONST = "=hidden"`` and becomes the
dispatched problem's own ``hidden`` (-1 in the C++ header's struct).

Exports: a C++ header with the configs as a struct array and a dispatcher function, JSON,
and Python source defining the same mapping. Data becomes code only after a check
(:meth:`DispatchTable.problems`): every name that enters an export (kernel, dtype, size,
shape and parameter names) passes :func:`workbench.core.identifiers.identifier_problem`,
with the names the generated code uses itself (:func:`generated_names`) reserved; every
parameter value is a C++ ``int`` (a bool as 0/1, or a symbolic ``"=<size>"``) and every
tuned size a positive ``long long``. Pure.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass

from workbench.core.errors import Problem, WorkbenchError
from workbench.core.expr import Expr
from workbench.core.identifiers import identifier_problem
from workbench.core.records import Config
from workbench.core.shape_params import ShapeBounds

#: shape name -> config -> measured median (us); a config absent at a shape was not measured
Times = Mapping[str, Mapping[Config, float]]

#: A parameter value in the header's config struct is a C++ ``int``.
INT_RANGE = (-(2**31), 2**31 - 1)
#: A tuned size in the header's shape table is a positive C++ ``long long``.
SIZE_RANGE = (1, 2**63 - 1)


class UnsafeExportError(WorkbenchError):
    """Data that would enter a generated header, JSON or module failed its check;
    ``problems`` names each key, value, where it came from and what was expected."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"dispatch refused {len(problems)} value(s) that would enter "
                         f"generated code; nothing was written:\n{lines}",
                         problems=list(problems))
        self.problems = list(problems)


def shown(value: object) -> str:
    """``value`` for a one-line message: repr (control characters escaped), at most 80."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def name_problems(names: Iterable[object], what: str, where: str,
                  reserved: Collection[str] = ()) -> list[Problem]:
    """A problem for each of ``names`` that cannot be a name in the generated code."""
    out = []
    for name in names:
        reason = identifier_problem(name, reserved)
        if reason is not None:
            out.append(Problem(where, what, shown(name), reason))
    return out


def value_problem(value: object, *, allow_bool: bool = True,
                  size_names: Collection[str] = ()) -> str | None:
    """Why ``value`` cannot be a parameter value in the header's ``int`` fields, or None.
    ``size_names``: the sizes a symbolic ``"=<size>"`` value may name."""
    lo, hi = INT_RANGE
    if isinstance(value, bool):
        return None if allow_bool else f"an integer in [{lo}, {hi}] (a C++ int; this knob is not a bool)"
    if isinstance(value, int) and lo <= value <= hi:
        return None
    if isinstance(value, str) and value.startswith("=") and value[1:] in size_names:
        return None
    return f"an integer in [{lo}, {hi}] (a C++ int)"


def config_problems(config: Mapping[str, object], where: str,
                    reserved: Collection[str] = (), bool_params: Collection[str] | None = None,
                    size_names: Collection[str] = ()) -> list[Problem]:
    """Problems of one config's names and values. ``bool_params``: the knobs that may hold
    a bool (None: any); ``size_names``: the sizes a symbolic value may name."""
    out = name_problems(config, "parameter name", where, reserved)
    for name, value in config.items():
        allow = bool_params is None or name in bool_params
        reason = value_problem(value, allow_bool=allow, size_names=size_names)
        if reason is not None:
            out.append(Problem(where, f"parameter {shown(name)}", shown(value), reason))
    return out


def size_problem(value: object) -> str | None:
    """Why ``value`` cannot be a tuned size (a positive ``long long``), or None."""
    lo, hi = SIZE_RANGE
    if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi:
        return None
    return f"an integer in [{lo}, {hi}] (a C++ long long)"


_PROBE_SIZE, _PROBE_PARAM, _PROBE_SHAPE = "wbprobesize", "WBPROBEPARAM", "wbprobeshape"
_CPP_NAME = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*")


@functools.lru_cache(maxsize=64)
def generated_names(kernel: str, dtype: str) -> frozenset[str]:
    """The names the exports of ``kernel``'s table use themselves (locals, types, functions,
    the include guard, the builtins the Python module calls), collected from the generators'
    own output: a size or knob named like one of them would shadow or redeclare it."""
    probe = DispatchTable(kernel=kernel, dtype=dtype, size_names=(_PROBE_SIZE,),
                          configs=(Config({_PROBE_PARAM: 1}),),
                          entries=((_PROBE_SHAPE, (1,), 0),), tolerance_pct=1.0)
    cpp = "\n".join(line.split("//", 1)[0] for line in probe._cpp_source().splitlines())
    names = set(_CPP_NAME.findall(cpp))
    for node in ast.walk(ast.parse(probe._python_source())):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name)
    return frozenset(names - {_PROBE_SIZE, _PROBE_PARAM, _PROBE_SHAPE})


@dataclass(frozen=True)
class DispatchTable:
    """Tuned shapes (their sizes) mapped onto a few configs."""

    kernel: str
    dtype: str
    size_names: tuple[str, ...]
    configs: tuple[Config, ...]
    entries: tuple[tuple[str, tuple[int, ...], int], ...]  # (shape, sizes, config index)
    tolerance_pct: float

    def nearest(self, sizes: Mapping[str, int]) -> tuple[str, Config]:
        """The tuned shape nearest to ``sizes`` (log2 distance) and its config."""
        missing = [n for n in self.size_names if n not in sizes]
        if missing:
            raise WorkbenchError(f"dispatch of {self.kernel} needs the sizes {missing}",
                                 key="sizes", value=dict(sizes), expected=list(self.size_names))
        want = [max(int(sizes[n]), 1) for n in self.size_names]

        def distance(entry: tuple[str, tuple[int, ...], int]) -> float:
            return sum(abs(math.log2(w / max(s, 1))) for w, s in zip(want, entry[1],
                                                                       strict=True))
        shape, _, index = min(self.entries, key=distance)
        return shape, self.configs[index]

    def lookup(self, sizes: Mapping[str, int]) -> Config:
        """The concrete config for ``sizes`` (symbolic sizes filled in)."""
        return concrete(self.nearest(sizes)[1], sizes)

    def problems(self, where: str = "the dispatch table") -> list[Problem]:
        """Everything in the table that may not enter generated code (empty: safe)."""
        out = name_problems([self.kernel], "kernel name", where)
        out += name_problems([self.dtype], "dtype", where)
        kernel_ok = not out
        reserved = generated_names(self.kernel, self.dtype) if kernel_ok else frozenset()
        out += name_problems(self.size_names, "size name", where, reserved)
        if len(set(self.size_names)) != len(self.size_names):
            out.append(Problem(where, "size names", shown(self.size_names), "distinct names"))
        out += name_problems(dict.fromkeys(s for s, _, _ in self.entries), "shape name", where)
        for cfg in self.configs:
            out += config_problems(cfg, where, reserved, None, self.size_names)
        for shape, values, index in self.entries:
            if len(values) != len(self.size_names):
                out.append(Problem(where, f"shape {shown(shape)}", shown(values),
                                   f"{len(self.size_names)} sizes"))
            for name, value in zip(self.size_names, values, strict=False):
                reason = size_problem(value)
                if reason is not None:
                    out.append(Problem(where, f"shape {shown(shape)} size {shown(name)}",
                                       shown(value), reason))
            if not (isinstance(index, int) and 0 <= index < len(self.configs)):
                out.append(Problem(where, f"shape {shown(shape)} config", shown(index),
                                   f"an index below {len(self.configs)}"))
        if not (isinstance(self.tolerance_pct, (int, float))
                and math.isfinite(self.tolerance_pct) and self.tolerance_pct >= 0):
            out.append(Problem(where, "tolerance_pct", shown(self.tolerance_pct),
                               "a finite number >= 0"))
        return out

    def check(self) -> None:
        """Raise :class:`UnsafeExportError` listing :meth:`problems`, if any."""
        problems = self.problems()
        if problems:
            raise UnsafeExportError(problems)

    def to_dict(self) -> dict[str, object]:
        return {"kernel": self.kernel, "dtype": self.dtype, "sizes": list(self.size_names),
                "tolerance_pct": self.tolerance_pct,
                "configs": [dict(c) for c in self.configs],
                "entries": [{"shape": s, "sizes": dict(zip(self.size_names, v, strict=True)),
                             "config": i} for s, v, i in self.entries]}

    def to_json(self) -> str:
        """The table as JSON (checked first: :meth:`check`)."""
        self.check()
        return json.dumps(self.to_dict(), indent=1, allow_nan=False)

    def to_python(self) -> str:
        """Python source: CONFIGS, ENTRIES and ``dispatch(**sizes) -> dict`` (checked
        first: :meth:`check`)."""
        self.check()
        return self._python_source()

    def to_cpp_header(self) -> str:
        """A C++ header: one struct per config, the tuned shapes, ``dispatch_<kernel>``
        (checked first: :meth:`check`)."""
        self.check()
        return self._cpp_source()

    def _python_source(self) -> str:
        names = ", ".join(self.size_names)
        return (f'"""Dispatch table of {self.kernel} ({self.dtype}), generated by workbench '
                f'dispatch: {len(self.configs)} configs for {len(self.entries)} tuned '
                f'shapes, each within {self.tolerance_pct:g} % of its fastest."""\n\n'
                "import math\n\n"
                f"SIZES = {list(self.size_names)!r}\n"
                f"CONFIGS = {[dict(c) for c in self.configs]!r}\n"
                f"ENTRIES = {[(list(v), i) for _, v, i in self.entries]!r}\n\n\n"
                f"def dispatch({names}):\n"
                f'    """The config for a problem: that of the nearest tuned shape (log2)."""\n'
                # locals carry a wb_ prefix so that sizes such as d, k or best stay free
                f"    wb_want = [max(int(wb_x), 1) for wb_x in ({names},)]\n"
                "    wb_best = min(ENTRIES, key=lambda wb_e: sum(\n"
                "        abs(math.log2(wb_w / max(wb_s, 1)))\n"
                "        for wb_w, wb_s in zip(wb_want, wb_e[0], strict=True)))\n"
                f"    wb_given = dict(zip(SIZES, ({names},), strict=True))\n"
                "    return {wb_k: int(wb_given[wb_v[1:]])\n"
                "            if isinstance(wb_v, str) and wb_v.startswith('=') else wb_v\n"
                "            for wb_k, wb_v in CONFIGS[wb_best[1]].items()}\n")

    def _cpp_source(self) -> str:
        ident = self.kernel  # an identifier (checked)
        params = sorted({k for c in self.configs for k in c})
        guard = f"WORKBENCH_DISPATCH_{ident.upper()}_{self.dtype.upper()}_H"
        lines = [f"// Dispatch table of {self.kernel} ({self.dtype}), generated by workbench "
                 f"dispatch: {len(self.configs)} configs for {len(self.entries)} tuned shapes,",
                 f"// each within {self.tolerance_pct:g} % of its fastest. A problem takes the "
                 f"config of the nearest tuned shape (log2 distance).",
                 f"#ifndef {guard}", f"#define {guard}", "#include <cmath>", "",
                 f"struct {ident}_config {{ " + " ".join(f"int {p};" for p in params) + " };",
                 "",
                 f"static const {ident}_config {ident}_configs[{len(self.configs)}] = {{"]
        for c in self.configs:
            lines.append("  {" + ", ".join(str(_cpp_int(c.get(p, 0))) for p in params) + "},")
        lines += ["};", "",
                  f"static const long long {ident}_shapes[{len(self.entries)}]"
                  f"[{len(self.size_names) + 1}] = {{  // {', '.join(self.size_names)}, config"]
        for _, v, i in self.entries:
            lines.append("  {" + ", ".join(str(x) for x in (*v, i)) + "},")
        args = ", ".join(f"long long {n}" for n in self.size_names)
        lines += ["};", "",
                  f"inline const {ident}_config& dispatch_{ident}({args}) {{",
                  f"  const long long wb_want[{len(self.size_names)}] = {{"
                  + ", ".join(self.size_names) + "};",
                  "  int wb_best = 0; double wb_best_d = 1e300;",
                  f"  for (int wb_e = 0; wb_e < {len(self.entries)}; ++wb_e) {{",
                  "    double wb_d = 0.0;",
                  f"    for (int wb_k = 0; wb_k < {len(self.size_names)}; ++wb_k) {{",
                  "      const double wb_w = wb_want[wb_k] > 1 ? (double)wb_want[wb_k] : 1.0;",
                  f"      const double wb_s = {ident}_shapes[wb_e][wb_k] > 1 ? "
                  f"(double){ident}_shapes[wb_e][wb_k] : 1.0;",
                  "      wb_d += std::fabs(std::log2(wb_w / wb_s));",
                  "    }",
                  "    if (wb_d < wb_best_d) { wb_best_d = wb_d; wb_best = wb_e; }",
                  "  }",
                  f"  return {ident}_configs[{ident}_shapes[wb_best][{len(self.size_names)}]];",
                  "}", "", f"#endif  // {guard}", ""]
        return "\n".join(lines)


def _cpp_int(value: object) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.startswith("="):
        return -1  # the dispatched problem's own size
    raise WorkbenchError(f"a C++ dispatch table needs integer parameter values, got {value!r}",
                         key="value", value=value, expected="an integer")


def symbolic(config: Config, sizes: Mapping[str, int],
             specialised: Mapping[str, str]) -> Config:
    """``config`` with each specialisation knob that equals its shape's size written as
    ``"=<size>"`` (``specialised``: knob -> size name)."""
    changes = {p: f"={size}" for p, size in specialised.items()
               if p in config and config[p] and config[p] == sizes.get(size)}
    return config.replace(**changes) if changes else config


def concrete(config: Config, sizes: Mapping[str, int]) -> Config:
    """``config`` with every ``"=<size>"`` value replaced by that size of ``sizes``."""
    changes = {p: int(sizes[v[1:]]) for p, v in config.items()
               if isinstance(v, str) and v.startswith("=") and v[1:] in sizes}
    return config.replace(**changes) if changes else config


def symbolic_times(times: Times, sizes: Mapping[str, Mapping[str, int]],
                   specialised: Mapping[str, str]) -> dict[str, dict[Config, float]]:
    """``times`` with configs keyed by :func:`symbolic` (the fastest where two collide)."""
    out: dict[str, dict[Config, float]] = {}
    for s, per in times.items():
        row: dict[Config, float] = {}
        for cfg, t in per.items():
            key = symbolic(cfg, sizes[s], specialised)
            row[key] = min(t, row.get(key, math.inf))
        out[s] = row
    return out


def with_picks(times: Times, picks: Mapping[str, Config]) -> dict[str, dict[Config, float]]:
    """``times`` with each shape's stored pick as its reference: the configs the search
    timed faster than the pick are dropped at that shape (the confirmation measured them
    again and chose the pick over them), so "within the tolerance of its fastest" means of
    its pick, and a tolerance of 0 dispatches exactly the pick. A pick the search never
    timed at its shape (a launch twin measured only in the confirmation) takes the shape's
    fastest time. Shapes without a pick keep every config (the search's fastest leads)."""
    out: dict[str, dict[Config, float]] = {}
    for shape, row in times.items():
        pick = picks.get(shape)
        if pick is None or not row:
            out[shape] = dict(row)
            continue
        at = row.get(pick, min(row.values()))
        kept = {c: t for c, t in row.items() if t >= at and c != pick}
        out[shape] = {pick: at, **kept}
    return out


def _log2_distance(a: Mapping[str, int], b: Mapping[str, int]) -> float:
    return sum(abs(math.log2(max(int(a.get(n, 1)), 1) / max(int(b.get(n, 1)), 1)))
               for n in set(a) | set(b))


def neighbours(sizes: Mapping[str, Mapping[str, int]],
               shapes: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each shape's neighbouring tuned shapes: those with no other tuned shape between them
    in log2 space (for a sweep of one size: the next smaller and the next larger)."""
    out: dict[str, tuple[str, ...]] = {}
    for s in shapes:
        near = []
        for t in shapes:
            if t == s:
                continue
            d = _log2_distance(sizes[s], sizes[t])
            if not any(_log2_distance(sizes[s], sizes[u]) + _log2_distance(sizes[u], sizes[t])
                       <= d + 1e-9 for u in shapes if u not in (s, t)):
                near.append(t)
        out[s] = tuple(near)
    return out


def bucket_ratio(times: Times, best: Mapping[str, float], config: Config, shape: str,
                 near: Sequence[str]) -> float | None:
    """The worst slowdown of ``config`` over ``shape``'s bucket: at the shape itself and,
    towards each neighbour, the log-linear interpolation half-way (the geometric mean of the
    slowdowns at the shape and at the neighbour). None: not measured at a neighbour."""
    here = times[shape][config] / best[shape]
    worst = here
    for n in near:
        t = times[n].get(config)
        if t is None:
            return None
        worst = max(worst, math.sqrt(here * t / best[n]))
    return worst


def build_table(kernel: str, dtype: str, times: Times,
                sizes: Mapping[str, Mapping[str, int]], tolerance_pct: float = 3.0,
                specialised: Mapping[str, str] | None = None,
                interpolate: bool = True) -> DispatchTable:
    """The table (module docstring) over every shape of ``times``; ``interpolate=False``:
    each shape alone decides (no bucket edges; the rule before issue 18's second round)."""
    if specialised:
        times = symbolic_times(times, sizes, specialised)
    shapes = [s for s in times if times[s]]
    if not shapes:
        raise WorkbenchError("no measured shape to build a dispatch table from",
                             key="times", value=list(times), expected="measured configs")
    best = {s: min(times[s].values()) for s in shapes}
    limit = 1.0 + tolerance_pct / 100.0
    near = neighbours(sizes, shapes) if interpolate else {s: () for s in shapes}
    bucket: dict[tuple[Config, str], float] = {}
    good: dict[Config, set[str]] = {}
    slow: dict[Config, float] = {}
    for s in shapes:
        fits = [c for c, t in times[s].items() if t <= best[s] * limit]
        for cfg in fits:
            r = bucket_ratio(times, best, cfg, s, near[s])
            if r is not None:
                bucket[(cfg, s)] = r
        known = [bucket[(c, s)] for c in fits if (c, s) in bucket]
        target = max(limit, min(known) * limit) if known else math.inf
        for cfg in fits:
            if not known or bucket.get((cfg, s), math.inf) <= target:
                good.setdefault(cfg, set()).add(s)
                slow[cfg] = slow.get(cfg, 0.0) + bucket.get((cfg, s),
                                                            times[s][cfg] / best[s])
    chosen: list[Config] = []
    uncovered = set(shapes)
    while uncovered:
        cfg = max(good, key=lambda c: (len(good[c] & uncovered), -slow[c], c.key()))
        chosen.append(cfg)
        uncovered -= good[cfg]
    names = tuple(sorted({n for s in shapes for n in sizes[s]}))
    entries = []
    for s in shapes:
        covering = [i for i, c in enumerate(chosen) if s in good[c]]
        index = min(covering, key=lambda i: (bucket.get((chosen[i], s), math.inf),
                                             times[s][chosen[i]]))
        entries.append((s, tuple(int(sizes[s].get(n, 1)) for n in names), index))
    return DispatchTable(kernel=kernel, dtype=dtype, size_names=names, configs=tuple(chosen),
                         entries=tuple(entries), tolerance_pct=tolerance_pct)


@dataclass(frozen=True)
class LeaveOneOut:
    """One tuned shape dispatched by a table built without it."""

    shape: str
    nearest: str                     # the tuned shape it was dispatched to
    config: Config
    time_us: float | None            # the dispatched config's measured time at the shape
    best_us: float
    loss_pct: float | None           # time / best - 1, in %; None: never measured there


def leave_one_out(kernel: str, dtype: str, times: Times,
                  sizes: Mapping[str, Mapping[str, int]], tolerance_pct: float = 3.0,
                  specialised: Mapping[str, str] | None = None,
                  found_at: Mapping[Config, Set[str]] | None = None,
                  interpolate: bool = True) -> list[LeaveOneOut]:
    """Each shape left out in turn, dispatched by the others' table, scored on its own
    measurements (needs two or more shapes). ``found_at``: config -> the shapes whose
    search found it (the rest of ``times`` measured elsewhere-found configs, e.g. by
    ``dispatch --cross``); a config only the left-out shape's search found is dropped from
    the other shapes' data for its turn, so the table never learns from the shape it is
    scored on. Without ``found_at`` every measurement counts as its shape's own search."""
    if specialised:
        if found_at is not None:
            merged: dict[Config, set[str]] = {}
            for cfg, where in found_at.items():
                for s in where:
                    merged.setdefault(symbolic(cfg, sizes[s], specialised), set()).add(s)
            found_at = merged
        times = symbolic_times(times, sizes, specialised)
    shapes = [s for s in times if times[s]]
    out = []
    for s in shapes:
        rest = {k: ({c: t for c, t in v.items()
                     if found_at is None or (found_at.get(c, {k}) - {s})})
                    for k, v in times.items() if k != s and v}
        rest = {k: v for k, v in rest.items() if v}
        if not rest:
            continue
        table = build_table(kernel, dtype, rest, sizes, tolerance_pct, interpolate=interpolate)
        near, cfg = table.nearest(sizes[s])
        best = min(times[s].values())
        t = times[s].get(cfg)
        out.append(LeaveOneOut(shape=s, nearest=near, config=cfg, time_us=t, best_us=best,
                               loss_pct=100.0 * (t / best - 1.0) if t is not None else None))
    return out


def median_loss_pct(rows: Sequence[LeaveOneOut]) -> float | None:
    """The median loss over the rows that could be scored."""
    losses = sorted(r.loss_pct for r in rows if r.loss_pct is not None)
    if not losses:
        return None
    mid = len(losses) // 2
    return losses[mid] if len(losses) % 2 else (losses[mid - 1] + losses[mid]) / 2.0


def sweep_shapes(spec: str, base: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """Shapes from ``--sweep``: ``size=lo..hi:log2`` (powers of two from lo to hi) or
    ``size=a,b,c``, each the ``base`` shape with that size changed, named ``<size><value>``."""
    name, sep, rng = spec.partition("=")
    name = name.strip()
    if not sep or name not in base:
        raise WorkbenchError(f"--sweep {spec!r}: expected SIZE=LO..HI:log2 or SIZE=A,B,C with "
                             f"SIZE one of {sorted(base)}", key="sweep", value=spec,
                             expected=f"a size of {sorted(base)}")
    try:
        if ".." in rng:
            bounds, _, step = rng.partition(":")
            lo, hi = (int(x) for x in bounds.split(".."))
            if step.strip() not in ("", "log2") or lo < 1 or hi < lo:
                raise ValueError(step)
            values = []
            v = lo
            while v <= hi:
                values.append(v)
                v *= 2
        else:
            values = [int(x) for x in rng.split(",") if x.strip()]
    except ValueError:
        raise WorkbenchError(f"--sweep {spec!r}: expected LO..HI:log2 (1 <= LO <= HI) or a "
                             f"comma list of positive integers", key="sweep", value=spec,
                             expected="LO..HI:log2 or A,B,C") from None
    if not values or min(values) < 1:
        raise WorkbenchError(f"--sweep {spec!r}: no positive sizes", key="sweep", value=spec,
                             expected="positive integers")
    return {f"{name}{v}": {**base, name: v} for v in values}


def specialised_knobs(bounds: Sequence[ShapeBounds]) -> dict[str, str]:
    """Knob -> size name for every choice whose shape-aware values include a bare size
    name (``values = [0, "hidden"]``): the knobs :func:`symbolic` keeps symbolic."""
    return {b.name: v.text for b in bounds for v in b.values
            if isinstance(v, Expr) and v.text.isidentifier()}
