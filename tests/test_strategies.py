"""Strategies: the shipped contract for each built-in, the registry, Optuna specifics."""

from __future__ import annotations

import importlib.util

import pytest

from workbench.core.errors import SearchError, UnknownStrategyError
from workbench.core.records import Config, Status, TrialResult
from workbench.core.space import SearchSpace
from workbench.search.strategies import (
    STRATEGIES,
    BaseStrategy,
    make_strategy,
    strategy_names,
    trial_cost_us,
)
from workbench.testing.strategy_contract import StrategyContract, contract_space, synthetic_result

HAVE_OPTUNA = importlib.util.find_spec("optuna") is not None
HAVE_CMAES = importlib.util.find_spec("cmaes") is not None
HAVE_TORCH = importlib.util.find_spec("torch") is not None


class TestExhaustive(StrategyContract):
    def make(self, space: SearchSpace, seed: int) -> BaseStrategy:
        return make_strategy("exhaustive", space, seed)

    def test_stable_space_order(self) -> None:
        space = contract_space()
        assert self._drive(self.make(space, 0), space.size) == list(space)


class TestRandom(StrategyContract):
    def make(self, space: SearchSpace, seed: int) -> BaseStrategy:
        return make_strategy("random", space, seed)

    def test_seeds_differ(self) -> None:
        space = contract_space()
        assert self._drive(self.make(space, 1), 10) != self._drive(self.make(space, 2), 10)


class TestNeighbourArgmin(StrategyContract):
    def make(self, space: SearchSpace, seed: int) -> BaseStrategy:
        return make_strategy("knn", space, seed)


@pytest.mark.skipif(not HAVE_OPTUNA, reason="optuna (extra 'search') not installed")
class TestTPE(StrategyContract):
    def make(self, space: SearchSpace, seed: int) -> BaseStrategy:
        return make_strategy("tpe", space, seed)

    def rebuild_options(self) -> dict[str, object]:
        return {"sampler": "tpe"}


@pytest.mark.skipif(not (HAVE_OPTUNA and HAVE_CMAES), reason="optuna and cmaes needed")
class TestCmaEs(StrategyContract):
    numeric_only = True

    def make(self, space: SearchSpace, seed: int) -> BaseStrategy:
        return make_strategy("cmaes", space, seed)

    def rebuild_options(self) -> dict[str, object]:
        return {"sampler": "cmaes"}


@pytest.mark.skipif(not (HAVE_OPTUNA and HAVE_TORCH), reason="optuna and torch needed for gp")
class TestGP(StrategyContract):
    def make(self, space: SearchSpace, seed: int) -> BaseStrategy:
        return make_strategy("gp", space, seed)

    def rebuild_options(self) -> dict[str, object]:
        return {"sampler": "gp"}


def test_unknown_strategy_lists_choices() -> None:
    with pytest.raises(UnknownStrategyError) as info:
        make_strategy("annealing", contract_space())
    assert info.value.choices == strategy_names()
    assert "exhaustive" in str(info.value) and "tpe" in str(info.value)
    assert set(STRATEGIES) >= {"exhaustive", "random", "tpe", "gp", "cmaes"}


@pytest.mark.skipif(not HAVE_OPTUNA, reason="optuna not installed")
def test_cmaes_refuses_categorical_parameters() -> None:
    with pytest.raises(SearchError, match="MODE"):
        make_strategy("cmaes", contract_space(numeric_only=False))


@pytest.mark.skipif(HAVE_TORCH or not HAVE_OPTUNA, reason="checks the message without torch")
def test_gp_without_torch_says_what_to_install() -> None:
    with pytest.raises(SearchError, match="torch"):
        make_strategy("gp", contract_space())


def test_costs_failures_and_pruned() -> None:
    config = Config(BLOCK=32, ITEMS=1, MODE="a")
    assert (trial_cost_us(synthetic_result(config)) or 0) > 0
    failed = TrialResult(config, "s", "fp32", Status.WRONG_RESULT)
    assert trial_cost_us(failed) == float("inf")
    assert trial_cost_us(TrialResult(config, "s", "fp32", Status.PRUNED, reason="x")) is None


def test_pruned_is_skipped_not_reproposed() -> None:
    space = contract_space()
    strategy = make_strategy("exhaustive", space)
    first = strategy.ask(1)[0]
    strategy.tell(TrialResult(first, "s", "fp32", Status.PRUNED, reason="launch"))
    assert first not in strategy.ask(space.size)


def test_enqueue_fills_missing_with_defaults_and_refuses_measured() -> None:
    space = contract_space()
    strategy = make_strategy("random", space, seed=0)
    default = space.default_config()
    strategy.tell(synthetic_result(default))
    refused = strategy.enqueue([{"BLOCK": 64}, {"ITEMS": 2}])
    assert refused == [(default, "already measured or in flight")]
    assert strategy.ask(1) == [default.replace(ITEMS=2)]


@pytest.mark.skipif(not HAVE_OPTUNA, reason="optuna not installed")
def test_tpe_finds_good_configs_better_than_worst_case() -> None:
    """On the synthetic bowl, TPE's best after 15 asks is within the best 20% of configs."""
    space = contract_space()
    costs = sorted(trial_cost_us(synthetic_result(c)) or 0 for c in space)
    strategy = make_strategy("tpe", space, seed=0)
    seen: list[float | None] = []
    for _ in range(15):
        (config,) = strategy.ask(1)
        result = synthetic_result(config)
        strategy.tell(result)
        seen.append(trial_cost_us(result))
    assert min(c for c in seen if c is not None) <= costs[len(costs) // 5]


def test_search_config_default_is_the_benchmarked_default_strategy() -> None:
    from workbench.search.budget import SearchConfig
    from workbench.search.strategies import DEFAULT_STRATEGY

    assert SearchConfig(shapes=("s",), dtype="bf16").strategy == DEFAULT_STRATEGY
