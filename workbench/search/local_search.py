"""Model-ranked local search, the ``guided`` strategy: large spaces at small budgets.

Three moves, each a pure function of (space, seed, what was told and is in flight), so a
strategy rebuilt from history proposes what the original would have:

1. *space-filling startup*: the first ``n_startup`` proposals are each the farthest (in
   knob-index distance) from every config already measured or in flight, among a seeded
   pool of random candidates (maximin sampling), so the startup covers every knob's range
   instead of clumping the way uniform draws do;
2. *one-knob moves around the incumbents*: every unmeasured config that gives one knob of
   the best measured config another value (changing as few other knobs as the constraints
   demand), ranked by a nearest-neighbour model of the measured times
   (:class:`~workbench.search.pruning.NeighbourModel`); when the best's neighbourhood is
   spent, the next-best's, and so on;
3. *the model's global argmin* on every ``global_every``-th proposal, and whenever the
   incumbents' neighbourhoods are spent: the jump out of the incumbents' basin (a seeded
   ``explore`` fraction of uniformly random proposals is available, off by default).

Settings chosen on the replays of the silu_and_mul and fused_add_rmsnorm sweeps
(``benchmarks/search/bench_small_budget.py``; merge_attn_states_lse held out): alternating
global and local steps with no random ones beat local steps alone at 40 evaluations on
the worst seed (1.020 against 1.021-1.022 of the optimum, geomean over problems) and on
the 73-126-config pinned spaces (1.002 against 1.007).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from workbench.core.records import Config
from workbench.core.space import SearchSpace
from workbench.search.pruning import NeighbourModel
from workbench.search.strategies import BaseStrategy

#: Random candidates drawn for each space-filling startup pick.
_STARTUP_POOL = 64


class LocalSearchStrategy(BaseStrategy):
    """Space-filling startup, then model-ranked one-knob moves around the incumbents.

    ``n_startup``: startup proposals (None: grows with the space, ``sqrt(size) / 3``
    clamped to 6..12); ``explore``: fraction of later proposals drawn at random;
    ``global_every``: every this many proposals (by count of configs measured or in
    flight) the model's global argmin is taken (0: only once the neighbourhoods are
    spent); ``incumbents``: how many of the best measured configs have their
    neighbourhoods searched; ``k``: the model's neighbours.
    """

    name: ClassVar[str] = "guided"

    def __init__(self, space: SearchSpace, seed: int = 0, *, n_startup: int | None = None,
                 explore: float = 0.0, incumbents: int = 3, global_every: int = 2,
                 k: int = 5) -> None:
        super().__init__(space, seed)
        self.n_startup = (n_startup if n_startup is not None
                          else min(max(round(math.sqrt(space.size) / 3), 6), 12))
        self.explore = explore
        self.incumbents = incumbents
        self.global_every = global_every
        self._model = NeighbourModel(space.params, k=k)
        self._costs: dict[Config, float] = {}
        self._index: dict[Config, int] | None = None
        self._digits: np.ndarray | None = None  # configs x knobs: index of each value

    def _observe(self, config: Config, cost_us: float) -> None:
        self._model.add(config, cost_us)
        self._costs[config] = cost_us

    def _grid(self) -> tuple[dict[Config, int], np.ndarray]:
        if self._index is None or self._digits is None:
            configs = self.configs
            self._index = {c: i for i, c in enumerate(configs)}
            values = [{v: j for j, v in enumerate(p.values())} for p in self.space.params]
            self._digits = np.asarray(
                [[values[k][c[p.name]] for k, p in enumerate(self.space.params)]
                 for c in configs], dtype=np.int64).reshape(len(configs), len(values))
        return self._index, self._digits

    def _propose(self, n: int) -> list[Config]:
        index, _ = self._grid()
        taken = np.zeros(len(self.configs), dtype=bool)
        for config in (*self._told, *self._pending):
            position = index.get(config)
            if position is not None:
                taken[position] = True
        out: list[Config] = []
        for _ in range(n):
            if taken.all():
                break
            step = int(taken.sum())
            rng = np.random.default_rng([self.seed, step])
            position = self._pick(taken, rng, step)
            taken[position] = True
            out.append(self.configs[position])
        return out

    def _pick(self, taken: np.ndarray, rng: np.random.Generator, step: int) -> int:
        free = np.flatnonzero(~taken)
        if step < self.n_startup or not self._costs:
            return self._farthest(free, taken, rng)
        if rng.random() < self.explore:
            return int(rng.choice(free))
        if self.global_every and step % self.global_every == 0:
            return self._model_argmin(free)
        for incumbent in self._ranked_incumbents():
            moves = self._one_knob_moves(incumbent, taken)
            if moves.size:
                return self._model_argmin(moves)
        return self._model_argmin(free)

    def _farthest(self, free: np.ndarray, taken: np.ndarray, rng: np.random.Generator) -> int:
        pool = rng.choice(free, size=min(_STARTUP_POOL, free.size), replace=False)
        _, digits = self._grid()
        seen = np.flatnonzero(taken)
        if not seen.size:
            return int(pool[0])
        scale = np.maximum(digits.max(axis=0), 1)
        a = digits[pool][:, None, :] / scale
        b = digits[seen][None, :, :] / scale
        nearest = np.abs(a - b).sum(axis=2).min(axis=1)
        return int(pool[int(np.argmax(nearest))])

    def _ranked_incumbents(self) -> list[int]:
        index, _ = self._grid()
        finite = sorted((cost, index[c]) for c, cost in self._costs.items()
                        if math.isfinite(cost) and c in index)
        return [position for _, position in finite[:self.incumbents]]

    def _one_knob_moves(self, incumbent: int, taken: np.ndarray) -> np.ndarray:
        """Unmeasured configs that give one knob another value while changing as few other
        knobs as the space allows: the plain one-knob move where it is feasible, else the
        move repaired by the smallest change of the knobs the constraints tie it to."""
        _, digits = self._grid()
        delta = digits != digits[incumbent]
        changed = delta.sum(axis=1)
        moves = np.zeros(len(digits), dtype=bool)
        for knob in range(digits.shape[1]):
            for value in np.unique(digits[delta[:, knob], knob]):
                with_value = delta[:, knob] & (digits[:, knob] == value)
                fewest = changed[with_value].min()
                moves |= with_value & (changed == fewest)
        return np.flatnonzero(moves & ~taken)

    def _model_argmin(self, positions: np.ndarray) -> int:
        predicted = self._model.predict([self.configs[int(p)] for p in positions])
        return int(positions[int(np.argmin(predicted))])
