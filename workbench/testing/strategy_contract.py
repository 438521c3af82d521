"""StrategyContract: the behaviour every search strategy must show.

Subclass in a test module as ``class TestMine(StrategyContract)`` and override
:meth:`make`. The cost function here is SYNTHETIC (a deterministic bowl), used only to
drive the strategy; nothing in it is a measurement.
"""

from __future__ import annotations

import math

from workbench.core.params import Choice, IntRange, Pow2Range
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.core.space import SearchSpace
from workbench.search.strategies import BaseStrategy


def contract_space(numeric_only: bool = False) -> SearchSpace:
    """A small constrained space: pow2 x int x (categorical or numeric choice)."""
    third = (Choice(name="VEC", values_=(1, 2, 4), default=2) if numeric_only
             else Choice(name="MODE", values_=("a", "b"), default="a"))
    return SearchSpace([Pow2Range(name="BLOCK", min=32, max=256, default=64),
                        IntRange(name="ITEMS", min=1, max=5, default=1), third],
                       ["BLOCK * ITEMS <= 640"])


def synthetic_result(config: Config, shape: str = "s") -> TrialResult:
    """A SYNTHETIC result: ITEMS == 4 'fails to compile'; otherwise a smooth bowl."""
    if config["ITEMS"] == 4:
        return TrialResult(config, shape, "fp32", Status.COMPILE_ERROR, reason="synthetic")
    cost = 5.0 + (math.log2(int(config["BLOCK"])) - 6) ** 2 + (int(config["ITEMS"]) - 3) ** 2
    cost += 0.5 * sum(ord(ch) for ch in str(config.get("MODE", config.get("VEC", "")))) % 3
    timing = Timing(median_us=cost, min_us=cost, q1_us=cost, q3_us=cost, mean_us=cost,
                    reps=1, rse_median_pct=0.0, l2_flushed=True)
    return TrialResult(config, shape, "fp32", Status.OK, timing=timing, source="synthetic")


class StrategyContract:
    """Inherited tests; override :meth:`make` (and ``numeric_only`` for CMA-ES)."""

    numeric_only = False

    def make(self, space: SearchSpace, seed: int) -> BaseStrategy:
        raise NotImplementedError

    def _space(self) -> SearchSpace:
        return contract_space(self.numeric_only)

    def _drive(self, strategy: BaseStrategy, count: int, batch: int = 1) -> list[Config]:
        asked: list[Config] = []
        while len(asked) < count:
            configs = strategy.ask(batch)
            if not configs:
                break
            for config in configs:
                asked.append(config)
                strategy.tell(synthetic_result(config))
        return asked

    def test_seeded_reproducible(self) -> None:
        space = self._space()
        first = self._drive(self.make(space, 7), 20)
        second = self._drive(self.make(space, 7), 20)
        assert first == second

    def test_exhausts_space_exactly_once_feasible_only(self) -> None:
        space = self._space()
        strategy = self.make(space, 3)
        asked = self._drive(strategy, space.size + 5, batch=3)
        assert len(asked) == space.size
        assert len(set(asked)) == len(asked)
        assert set(asked) == set(space)
        assert strategy.ask(4) == []
        assert strategy.remaining == 0

    def test_never_proposes_told_configs(self) -> None:
        space = self._space()
        told = list(space)[::2]
        strategy = self.make(space, 1)
        for config in told:
            strategy.tell(synthetic_result(config))
        asked = self._drive(strategy, space.size)
        assert not set(asked) & set(told)
        assert len(asked) == space.size - len(told)

    def test_rebuild_from_history_matches_tell_replay(self) -> None:
        space = self._space()
        original = self.make(space, 5)
        self._drive(original, 8)
        rebuilt = type(original).from_history(space, original.history, 5,
                                              **self.rebuild_options())
        replayed = self.make(space, 5)
        for result in original.history:
            replayed.tell(result)
        assert rebuilt.ask(3) == replayed.ask(3)

    def rebuild_options(self) -> dict[str, object]:
        """Constructor options ``from_history`` needs to rebuild the same strategy."""
        return {}

    def test_enqueued_first_in_order(self) -> None:
        space = self._space()
        strategy = self.make(space, 2)
        picks = [list(space)[-1], list(space)[3]]
        refused = strategy.enqueue([*picks, {"BLOCK": 256, "ITEMS": 5}])
        assert [c for c, _ in refused] == [strategy.complete({"BLOCK": 256, "ITEMS": 5})]
        assert "BLOCK * ITEMS <= 640" in refused[0][1]
        assert strategy.ask(2) == picks
        nxt = strategy.ask(1)
        assert nxt and nxt[0] not in picks

    def test_batch_ask_distinct(self) -> None:
        space = self._space()
        strategy = self.make(space, 4)
        batch = strategy.ask(6)
        assert len(batch) == 6 and len(set(batch)) == 6
        assert all(c in space for c in batch)
