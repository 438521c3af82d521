"""SearchSpace: enumeration order, filtering, sampling, neighbours, empty-space diagnosis."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core.errors import EmptySpaceError, ExpressionError, SpaceError
from workbench.core.expr import Constraint, parse_constraint
from workbench.core.params import Choice, IntRange, Parameter, Pow2Range
from workbench.core.records import Config
from workbench.core.space import MAX_RAW_SIZE, SearchSpace


def _brute_force(params: list[Parameter], constraints: list[str],
                 env: dict[str, int]) -> list[Config]:
    """Independent reference: itertools.product + scalar evaluation, one point at a time."""
    parsed = [parse_constraint(c) for c in constraints]
    out = []
    for values in itertools.product(*(p.values() for p in params)):
        point = dict(zip((p.name for p in params), values, strict=True))
        ok = True
        for c in parsed:
            try:
                ok = c.holds({**env, **point})
            except ExpressionError:
                ok = False
            if not ok:
                break
        if ok:
            out.append(Config(point))
    return out


def _space() -> SearchSpace:
    return SearchSpace(
        [Pow2Range("BLOCK", 32, 1024, default=128), Choice("VEC", (1, 2, 4, 8), default=8),
         IntRange("ITEMS", 1, 4)],
        ["d % VEC == 0", "BLOCK * ITEMS <= 2048"],
        {"d": 36})


def test_iteration_order_is_lexicographic_in_declared_order() -> None:
    space = _space()
    configs = list(space)
    keys = [(c["BLOCK"], (1, 2, 4, 8).index(c["VEC"]), c["ITEMS"]) for c in configs]
    assert keys == sorted(keys)
    assert configs[0] == Config(BLOCK=32, VEC=1, ITEMS=1)
    assert space.size == len(configs) == len(space)
    assert space.raw_size == 6 * 4 * 4
    assert all(c["VEC"] in (1, 2, 4) for c in configs)  # 36 % 8 != 0


def test_matches_brute_force_with_strings_bools_and_env() -> None:
    params: list[Parameter] = [IntRange("A", -3, 5), Choice("L", ("row", "col", "tile")),
                               Choice("F", (False, True)), Pow2Range("B", 1, 16)]
    constraints = ["L == 'row' or B >= 4", "not F or A % B == 0", "A + F * 10 < limit",
                   "(A // B if B > 2 else A) != 1"]
    env = {"limit": 9}
    space = SearchSpace(params, constraints, env)
    assert list(space) == _brute_force(params, constraints, env)


def test_contains_rejection_and_index() -> None:
    space = _space()
    good = Config(BLOCK=128, VEC=4, ITEMS=2)
    assert good in space and space.rejection(good) is None
    assert space.config_at(space.index_of(good)) == good
    assert space.rejection(Config(BLOCK=128, VEC=8, ITEMS=2)) == "d % VEC == 0"
    assert space.rejection(Config(BLOCK=1024, VEC=8, ITEMS=4)) == "d % VEC == 0"  # first wins
    assert space.rejection(Config(BLOCK=1024, VEC=4, ITEMS=4)) == "BLOCK * ITEMS <= 2048"
    message = space.rejection(Config(BLOCK=96, VEC=4, ITEMS=2))
    assert message is not None and "BLOCK=96" in message and "pow2 32..1024" in message
    assert "missing parameter ITEMS" in (space.rejection({"BLOCK": 32, "VEC": 1}) or "")
    assert "unknown parameter X" in (space.rejection({**good, "X": 1}) or "")
    assert Config(BLOCK=96, VEC=4, ITEMS=2) not in space
    assert "not a config" not in space
    with pytest.raises(SpaceError, match="d % VEC == 0"):
        space.index_of(Config(BLOCK=128, VEC=8, ITEMS=2))
    with pytest.raises(IndexError):
        space.config_at(space.size)


def test_bool_parameter_wants_bools() -> None:
    space = SearchSpace([Choice("F", (False, True))])
    assert {"F": True} in space
    assert {"F": 1} not in space


def test_rejections_by_constraint_count_independently() -> None:
    space = _space()
    points = list(itertools.product((32, 64, 128, 256, 512, 1024), (1, 2, 4, 8), (1, 2, 3, 4)))
    assert space.rejections_by_constraint() == {
        "d % VEC == 0": sum(1 for _, v, _ in points if 36 % v),
        "BLOCK * ITEMS <= 2048": sum(1 for b, _, i in points if b * i > 2048),
    }
    assert space.rejections_only_by_constraint() == {
        "d % VEC == 0": sum(1 for b, v, i in points if 36 % v and b * i <= 2048),
        "BLOCK * ITEMS <= 2048": sum(1 for b, v, i in points if b * i > 2048 and not 36 % v),
    }


def test_sample_is_seeded_and_without_replacement() -> None:
    space = _space()
    first = space.sample(20, seed=7)
    assert first == space.sample(20, seed=7)
    assert first != space.sample(20, seed=8)
    assert len(set(first)) == 20 and all(c in space for c in first)
    everything = space.sample(10_000, seed=1)
    assert len(everything) == space.size and set(everything) == set(space)
    assert space.sample(0, seed=1) == []
    with pytest.raises(SpaceError):
        space.sample(-1, seed=1)


def test_neighbours() -> None:
    space = _space()
    around = space.neighbours(Config(BLOCK=128, VEC=4, ITEMS=2))
    assert around == [Config(BLOCK=64, VEC=4, ITEMS=2), Config(BLOCK=256, VEC=4, ITEMS=2),
                      Config(BLOCK=128, VEC=2, ITEMS=2),  # VEC=8 is infeasible (36 % 8)
                      Config(BLOCK=128, VEC=4, ITEMS=1), Config(BLOCK=128, VEC=4, ITEMS=3)]
    corner = space.neighbours(Config(BLOCK=1024, VEC=1, ITEMS=2))
    assert corner == [Config(BLOCK=512, VEC=1, ITEMS=2), Config(BLOCK=1024, VEC=2, ITEMS=2),
                      Config(BLOCK=1024, VEC=1, ITEMS=1)]
    with pytest.raises(SpaceError, match="BLOCK=100"):
        space.neighbours(Config(BLOCK=100, VEC=1, ITEMS=2))


def test_empty_space_names_the_constraint_whose_removal_helps() -> None:
    space = SearchSpace([Pow2Range("BLOCK", 32, 1024), IntRange("ITEMS", 1, 8)],
                        ["BLOCK >= 64", "BLOCK * ITEMS > max_threads", "ITEMS < 100"],
                        {"max_threads": 8192})
    assert space.size == 0
    with pytest.raises(EmptySpaceError) as info:
        space.require_nonempty()
    assert info.value.binding == "BLOCK * ITEMS > max_threads"
    assert "removing `BLOCK * ITEMS > max_threads` alone would leave" in info.value.message
    assert info.value.details["rejections"]["ITEMS < 100"] == 0


def test_empty_space_names_the_most_rejecting_constraint() -> None:
    space = SearchSpace([Pow2Range("BLOCK", 32, 1024)],
                        ["BLOCK < 64", "BLOCK > 256", "BLOCK > 2048"])
    with pytest.raises(EmptySpaceError) as info:
        space.require_nonempty()
    assert info.value.binding == "BLOCK > 2048"
    assert "rejects the most points (6 of 6)" in info.value.message


def test_env_only_constraint_and_one_point_spaces() -> None:
    never = SearchSpace([IntRange("X", 1, 4)], ["elem_bytes == 4"], {"elem_bytes": 2})
    with pytest.raises(EmptySpaceError) as info:
        never.require_nonempty()
    assert info.value.binding == "elem_bytes == 4"
    one = SearchSpace([Choice("VEC", (8,))])
    assert one.require_nonempty() is one
    assert list(one) == [Config(VEC=8)] and one.neighbours(Config(VEC=8)) == []
    assert one.sample(5, seed=0) == [Config(VEC=8)]
    pinned = SearchSpace([IntRange("X", 1, 9)], ["X * X == 49"])
    assert list(pinned) == [Config(X=7)] and pinned.index_of({"X": 7}) == 0
    empty_params = SearchSpace([])
    assert list(empty_params) == [Config()] and empty_params.size == 1


def test_construction_errors() -> None:
    with pytest.raises(ExpressionError) as info:
        SearchSpace([IntRange("X", 1, 4)], ["X < dd"], {"d": 4})
    assert info.value.piece == "dd" and "known names: X, d" in info.value.message
    with pytest.raises(ExpressionError) as info:
        SearchSpace([IntRange("X", 1, 4)], [parse_constraint("X < Y")])
    assert info.value.piece == "Y"
    with pytest.raises(SpaceError, match="more than once"):
        SearchSpace([IntRange("X", 1, 4), IntRange("X", 1, 2)])
    with pytest.raises(SpaceError, match="same name"):
        SearchSpace([IntRange("d", 1, 4)], [], {"d": 3})
    with pytest.raises(SpaceError, match="limit"):
        SearchSpace([IntRange("A", 1, 10_000), IntRange("B", 1, MAX_RAW_SIZE // 5_000)])


def test_division_by_zero_rejects_the_point() -> None:
    space = SearchSpace([IntRange("X", 0, 3)], ["12 % X == 0"])
    assert [c["X"] for c in space] == [1, 2, 3]
    assert "division" in (space.rejection({"X": 0}) or "") or "modulo" in (
        space.rejection({"X": 0}) or "")


def _scalar_rejection(constraints: list[Constraint], point: dict[str, int]) -> str | None:
    """Independent reference: the first constraint (declared order) that is false or cannot
    be evaluated at ``point``, evaluated one scalar at a time."""
    for constraint in constraints:
        try:
            if not constraint.holds(point):
                return constraint.text
        except ExpressionError as exc:
            return f"{constraint.text} (cannot be evaluated: {exc.message})"
    return None


def test_rejection_names_the_first_failing_constraint_in_every_block() -> None:
    # 3 * 600 * 500 raw points: blocks fix C and take runs of A's values (the last run
    # shorter); `B % A` cannot be evaluated at A == 0
    constraints = [parse_constraint(text) for text in (
        "A + B < 900 - C", "B % A == 0 or A > 400", "A * B != 12", "C != 1 or B > 2")]
    space = SearchSpace([IntRange("C", 0, 2), IntRange("A", 0, 599), IntRange("B", 0, 499)],
                        constraints)
    points = [{"C": 0, "A": 0, "B": 3}, {"C": 2, "A": 3, "B": 4}, {"C": 2, "A": 599, "B": 499}]
    points += [{"C": raw // 300_000, "A": raw // 500 % 600, "B": raw % 500}
               for raw in range(0, space.raw_size, 1499)]
    feasible = 0
    for point in points:
        expected = _scalar_rejection(constraints, point)
        assert space.rejection(point) == expected, point
        assert (point in space) == (expected is None)
        if expected is None:
            feasible += 1
            assert space.config_at(space.index_of(point)) == Config(point)
    assert feasible > 10
    assert space.rejections_by_constraint()["C != 1 or B > 2"] == 600 * 3  # C = 1, B <= 2
    assert [dict(c) for c in itertools.islice(space, 3)] == [
        {"C": 0, "A": 1, "B": b} for b in (0, 1, 2)]


def test_with_params_keeps_constraints_and_env() -> None:
    space = _space()
    narrow = space.with_params([Pow2Range("BLOCK", 32, 64), Choice("VEC", (2, 4)),
                                IntRange("ITEMS", 1, 1)])
    assert narrow.constraints == space.constraints and dict(narrow.env) == {"d": 36}
    assert list(narrow) == [Config(BLOCK=b, VEC=v, ITEMS=1) for b in (32, 64) for v in (2, 4)]
    assert space.default_config() == Config(BLOCK=128, VEC=8, ITEMS=1)


# ----------------------------------------------------------------- property test

_NAMES = ("P", "Q", "R")
_TEMPLATES = ["{a} * {b} <= {k}", "{a} % {b} == 0", "{a} != {k}", "{a} + {b} > {k}",
              "{a} // {b} < {k} or {b} == {k}", "max({a}, {b}) - min({a}, {b}) <= {k}",
              "is_pow2({a} + {k})", "({a} > {k}) if {b} > {k} else not {a}", "ceil_div({a}, {b}) >= 2"]


@st.composite
def _spaces(draw: st.DrawFn) -> tuple[list[Parameter], list[str], dict[str, int]]:
    params: list[Parameter] = []
    for name in _NAMES[: draw(st.integers(1, 3))]:
        kind = draw(st.sampled_from(["int", "pow2", "choice", "bool"]))
        if kind == "int":
            lo = draw(st.integers(-4, 6))
            step = draw(st.integers(1, 3))
            params.append(IntRange(name, lo, lo + step * draw(st.integers(0, 6)), step=step))
        elif kind == "pow2":
            lo = draw(st.integers(0, 4))
            params.append(Pow2Range(name, 2**lo, 2 ** (lo + draw(st.integers(0, 4)))))
        elif kind == "choice":
            values = draw(st.lists(st.integers(-8, 64), min_size=1, max_size=5, unique=True))
            params.append(Choice(name, tuple(values)))
        else:
            params.append(Choice(name, (False, True)))
    names = [p.name for p in params] + ["n"]
    constraints = []
    for _ in range(draw(st.integers(0, 4))):
        template = draw(st.sampled_from(_TEMPLATES))
        constraints.append(template.format(a=draw(st.sampled_from(names)),
                                           b=draw(st.sampled_from(names)),
                                           k=draw(st.integers(-2, 40))))
    return params, constraints, {"n": draw(st.integers(1, 16))}


@settings(max_examples=150, deadline=None)
@given(_spaces(), st.integers(0, 2**32 - 1))
def test_space_never_yields_a_config_violating_a_constraint(
        case: tuple[list[Parameter], list[str], dict[str, int]], seed: int) -> None:
    params, constraints, env = case
    space = SearchSpace(params, constraints, env)
    configs = list(space)
    assert space.size == len(configs)
    assert configs == _brute_force(params, constraints, env)  # same set, same order
    for config in configs:
        assert space.rejection(config) is None
        assert config in space
    everything = [Config(dict(zip((p.name for p in params), v, strict=True)))
                  for v in itertools.product(*(p.values() for p in params))]
    for config in everything:
        assert (config in space) == (space.rejection(config) is None)
    assert sum(space.rejections_by_constraint().values()) >= space.raw_size - space.size
    sample = space.sample(5, seed)
    assert len(sample) == min(5, space.size) and len(set(sample)) == len(sample)
    assert all(c in space for c in sample)
    if configs:
        for neighbour in space.neighbours(configs[0]):
            assert neighbour in space
            assert sum(neighbour[k] != configs[0][k] for k in neighbour) == 1
