"""Range edges: where a search's fastest configs sit on the boundary of a parameter's range,
and how that range widens.

A best config at the maximum of a range says the range may have cut the optimum off: at one
token with a long row the fastest silu_and_mul configs split the row over as many blocks as
the range allowed (issue 18). :func:`range_edges` names each such parameter and edge;
:func:`widen` extends one range along its kind (a power of two doubles, an integer range
takes one more step, an explicit choice has no next value to invent: the user names it in
the range editor, and the agent's plan prompt puts the edge to the model). Widening never
takes a power-of-two or integer knob past ``hard_max`` (the device's threads per block by
default); constraints and launch limits prune the rest before any GPU time.

Pure: parameters and configs in, records out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from workbench.core.params import Choice, IntRange, Parameter, Pow2Range
from workbench.core.records import Value


@dataclass(frozen=True)
class RangeEdge:
    """``param`` sits at the ``edge`` ("min" or "max", value ``value``) of its range in
    ``count`` of the ``of`` fastest configs, the fastest among them."""

    param: str
    kind: str
    edge: str
    value: Value
    count: int
    of: int

    def describe(self) -> str:
        return (f"{self.param} ({self.kind}) sits at its {'maximum' if self.edge == 'max' else 'minimum'}"
                f" {self.value} in {self.count} of the {self.of} fastest configs, the fastest "
                f"included")


def _numeric_values(param: Parameter) -> list[int] | None:
    """The sorted values of a numeric parameter with an edge to speak of: not a 0/1 switch."""
    values = list(param.values())
    if len(values) < 2 or not all(isinstance(v, int) and not isinstance(v, bool)
                                  for v in values):
        return None
    ints = sorted(int(v) for v in values)
    return None if set(ints) <= {0, 1} else ints


def range_edges(params: Sequence[Parameter],
                fastest: Sequence[Mapping[str, Value]]) -> tuple[RangeEdge, ...]:
    """The edges the fastest config sits on (numeric parameters with two or more values),
    each with how many of ``fastest`` share it. Booleans, 0/1 switches, non-numeric choices
    and minimums of 1 or less have no edge. Empty when ``fastest`` is."""
    if not fastest:
        return ()
    top = fastest[0]
    out: list[RangeEdge] = []
    for p in params:
        values = _numeric_values(p)
        if values is None or p.name not in top:
            continue
        for edge, bound in (("max", values[-1]), ("min", values[0])):
            if edge == "min" and bound <= 1:  # a count or size cannot go below 1
                continue
            if top[p.name] == bound:
                count = sum(1 for c in fastest if c.get(p.name) == bound)
                out.append(RangeEdge(param=p.name, kind=p.kind, edge=edge, value=bound,
                                     count=count, of=len(fastest)))
    return tuple(out)


@dataclass(frozen=True)
class Widening:
    """The outcome of widening one edge: the new parameter, or why there is none."""

    edge: RangeEdge
    param: Parameter | None
    why_not: str = ""

    def describe(self) -> str:
        if self.param is None:
            return f"{self.edge.param}: not widened ({self.why_not})"
        return (f"{self.edge.param}: {self.edge.edge} {self.edge.value} -> "
                f"{self.param.describe_values()}")


def widen(param: Parameter, edge: RangeEdge, *, hard_max: int = 1024) -> Widening:
    """``param`` extended one step past ``edge`` along its kind, within ``hard_max``."""
    if isinstance(param, Pow2Range):
        if edge.edge == "max":
            if param.max * 2 > hard_max:
                return Widening(edge, None, f"{param.max * 2} would pass the limit {hard_max}")
            return Widening(edge, replace(param, max=param.max * 2))
        if param.min == 1:
            return Widening(edge, None, "already at 1")
        return Widening(edge, replace(param, min=param.min // 2))
    if isinstance(param, IntRange):
        if edge.edge == "max":
            if param.max + param.step > hard_max:
                return Widening(edge, None,
                                f"{param.max + param.step} would pass the limit {hard_max}")
            return Widening(edge, replace(param, max=param.max + param.step))
        if param.min - param.step < 1:  # counts and sizes: 0 and below mean nothing
            return Widening(edge, None, f"{param.min - param.step} would go below 1")
        return Widening(edge, replace(param, min=param.min - param.step))
    if isinstance(param, Choice):
        return Widening(edge, None, "an explicit choice: name the values to add (the "
                                    "panel's range editor; the agent's plan prompt asks)")
    return Widening(edge, None, f"a {param.kind} parameter has no next value")


def widen_all(params: Sequence[Parameter], edges: Sequence[RangeEdge], *,
              hard_max: int = 1024) -> tuple[tuple[Parameter, ...], tuple[Widening, ...]]:
    """Every parameter with each of its edges widened where possible, and what happened."""
    by_name = {p.name: p for p in params}
    done: list[Widening] = []
    for edge in edges:
        w = widen(by_name[edge.param], edge, hard_max=hard_max)
        done.append(w)
        if w.param is not None:
            by_name[edge.param] = w.param
    return tuple(by_name[p.name] for p in params), tuple(done)
