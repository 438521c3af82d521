"""The model-ranked local search (strategy "guided"): the strategy contract, and that it finds the optimum of
SYNTHETIC landscapes (separable, and with interacting knobs) within a small budget. The
landscapes are formulas, not measurements; no GPU, no clock."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

import pytest

from workbench.core.params import Choice, IntRange, Pow2Range
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.core.space import SearchSpace
from workbench.search.local_search import LocalSearchStrategy
from workbench.search.strategies import BaseStrategy, make_strategy
from workbench.testing.strategy_contract import StrategyContract

Landscape = Callable[[Config], float]


class TestGuided(StrategyContract):
    def make(self, space: SearchSpace, seed: int) -> BaseStrategy:
        return make_strategy("guided", space, seed)


def _space() -> SearchSpace:
    """864 feasible configs of five knobs (pow2, numeric choice, int range, two categorical)
    less the ones a constraint rejects."""
    return SearchSpace([Pow2Range(name="BLOCK", min=32, max=1024, default=1024),
                        Choice(name="VEC", values_=(1, 2, 4, 8), default=1),
                        IntRange(name="ITEMS", min=1, max=6, default=1),
                        Choice(name="MODE", values_=("a", "b", "c"), default="a"),
                        Choice(name="FAST", values_=(0, 1), default=0)],
                       ["BLOCK * ITEMS <= 4096"])


def separable(config: Config) -> float:
    """SYNTHETIC: a sum of one bowl per knob; optimum BLOCK 128, VEC 4, ITEMS 3, b, FAST 1."""
    return (10.0 + (math.log2(int(config["BLOCK"])) - 7) ** 2
            + 2.0 * (math.log2(int(config["VEC"])) - 2) ** 2
            + 0.5 * (int(config["ITEMS"]) - 3) ** 2
            + {"a": 1.5, "b": 0.0, "c": 3.0}[str(config["MODE"])]
            + (0.0 if config["FAST"] == 1 else 0.7))


def interacting(config: Config) -> float:
    """SYNTHETIC: the work per block BLOCK * ITEMS wants 1024 and ITEMS's best depends on
    VEC (ITEMS * VEC wants 8), so no knob has one best value on its own; optimum BLOCK 256,
    ITEMS 4, VEC 2, MODE c, FAST 1."""
    block, items, vec = int(config["BLOCK"]), int(config["ITEMS"]), int(config["VEC"])
    return (10.0 + (math.log2(block * items) - 10) ** 2
            + (math.log2(items * vec) - 3) ** 2 + 0.3 * (math.log2(vec) - 1) ** 2
            + 0.2 * abs(math.log2(items) - 2)
            + (0.0 if config["MODE"] == "c" else 1.0) * (1.0 if block >= 256 else 0.5)
            + (0.0 if config["FAST"] == 1 else 0.4))


def _result(config: Config, landscape: Landscape) -> TrialResult:
    cost = landscape(config)
    timing = Timing(median_us=cost, min_us=cost, q1_us=cost, q3_us=cost, mean_us=cost,
                    reps=1, rse_median_pct=0.0, l2_flushed=True)
    return TrialResult(config, "s", "fp32", Status.OK, timing=timing, source="synthetic")


def _asks_to_optimum(strategy: BaseStrategy, landscape: Landscape, limit: int) -> int | None:
    optimum = min(strategy.space, key=landscape)
    for asked in range(1, limit + 1):
        (config,) = strategy.ask(1)
        strategy.tell(_result(config, landscape))
        if config == optimum:
            return asked
    return None


@pytest.mark.parametrize("landscape", [separable, interacting], ids=["separable", "interacting"])
def test_finds_the_optimum_within_a_small_budget(landscape: Landscape) -> None:
    """Median over 8 seeds within 48 asks, every seed within 96: uniform random draws of
    one config in 816 need 408 on average."""
    space = _space()
    asks = [_asks_to_optimum(LocalSearchStrategy(space, seed), landscape, 96)
            for seed in range(8)]
    assert None not in asks, asks
    assert statistics.median(a for a in asks if a is not None) <= 48, asks


def test_startup_covers_every_value_of_each_knob() -> None:
    """The space-filling startup reaches both ends of every knob (uniform draws of ten
    configs leave some value of a six-valued knob out most of the time)."""
    space = _space()
    strategy = LocalSearchStrategy(space, 0, n_startup=10)
    asked = strategy.ask(10)
    for knob in ("BLOCK", "ITEMS"):
        values = space.params[[p.name for p in space.params].index(knob)].values()
        seen = {c[knob] for c in asked}
        assert values[0] in seen and values[-1] in seen, (knob, seen)


def test_moves_one_knob_from_the_best_after_startup() -> None:
    space = _space()
    strategy = LocalSearchStrategy(space, 3, n_startup=6, global_every=0)
    for config in strategy.ask(6):
        strategy.tell(_result(config, separable))
    best = min((r.config for r in strategy.history), key=separable)
    (move,) = strategy.ask(1)
    assert sum(move[k] != best[k] for k in best) == 1


def test_startup_grows_with_the_space() -> None:
    small = SearchSpace([Choice(name="A", values_=(1, 2, 3))])
    assert LocalSearchStrategy(small).n_startup == 6
    assert LocalSearchStrategy(_space()).n_startup == 10
