"""Optuna's samplers (TPE, GP, CMA-ES) behind the workbench's ask/tell strategy.

Optuna is an optional extra (``pip install kernel-workbench[search]``) and is imported only
when one of these strategies is built. Each parameter maps onto one Optuna distribution:
a numeric parameter (int range, power-of-two range, numeric choice) becomes an integer
*index* into its ordered values, so neighbouring indices are neighbouring values (a
power-of-two range is searched on its exponent); a non-numeric choice becomes a
categorical distribution.

Optuna knows nothing of the space's constraints nor of what was already measured. When it
proposes an infeasible or already-seen point, the adapter substitutes the nearest feasible
unseen config (L1 distance on normalised indices, mismatch = 1 for categoricals; ties broken
by a generator seeded with the strategy's seed), so every ask is a new feasible config and a
run is deterministic per seed. For TPE and GP the Optuna trial that proposed the refused
point is closed as failed and the substitute's result enters the study as a separate trial;
CMA-ES, whose generations only count its own trials, is told the substitute's cost on the
proposing trial instead (the "Baldwinian" repair of constrained evolution strategies).
Failed trials are told with cost ``inf``; history is re-seeded with ``add_trial``.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from typing import Any, ClassVar

import numpy as np

from workbench.core.errors import SearchError
from workbench.core.records import Config, Value
from workbench.core.space import SearchSpace
from workbench.search.strategies import BaseStrategy

SAMPLERS = ("tpe", "gp", "cmaes")


def _require(module: str, sampler: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise SearchError(f"strategy {sampler!r} needs the {module!r} package; "
                          f"install it with: pip install {extra}",
                          strategy=sampler, missing=module)


class OptunaStrategy(BaseStrategy):
    """Optuna sampler ``sampler`` ("tpe" | "gp" | "cmaes") as a feasible-only strategy.

    ``options`` are passed to the sampler's constructor (e.g. ``n_startup_trials`` for
    TPE and GP, ``popsize`` for CMA-ES).
    """

    name: ClassVar[str] = "optuna"

    def __init__(self, space: SearchSpace, seed: int = 0, *, sampler: str = "tpe",
                 **options: Any) -> None:
        super().__init__(space, seed)
        if sampler not in SAMPLERS:
            raise SearchError(f"unknown optuna sampler {sampler!r}; choose one of {SAMPLERS}",
                              value=sampler, expected=SAMPLERS)
        _require("optuna", sampler, "'kernel-workbench[search]'")
        self.name = sampler  # type: ignore[misc]  # per-instance name: "tpe", "gp", "cmaes"
        self._params = tuple(space.params)
        self._values: list[tuple[Value, ...]] = [tuple(p.values()) for p in self._params]
        self._numeric = [bool(p.is_numeric) for p in self._params]
        if sampler == "cmaes":
            _require("cmaes", sampler, "cmaes")
            categorical = [p.name for p, numeric in zip(self._params, self._numeric, strict=True)
                           if not numeric]
            if categorical:
                raise SearchError(
                    "strategy 'cmaes' needs every parameter numeric; categorical: "
                    + ", ".join(categorical) + "; use 'tpe' (handles categoricals) instead",
                    strategy=sampler, categorical=categorical)
        if sampler == "gp":
            _require("torch", sampler, "torch")
        self._baldwinian = sampler == "cmaes"
        self._rng = np.random.default_rng(seed)
        self._trial_for: dict[Config, Any] = {}  # config -> optuna Trial awaiting its result

        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._distributions: dict[str, Any] = {
            p.name: (optuna.distributions.IntDistribution(0, len(vals) - 1) if numeric
                     else optuna.distributions.CategoricalDistribution(vals))
            for p, vals, numeric in zip(self._params, self._values, self._numeric, strict=True)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ExperimentalWarning for multivariate/liar options
            self._study = optuna.create_study(direction="minimize",
                                              sampler=self._make_sampler(sampler, options))
        self._coords: np.ndarray | None = None
        self._row_of: dict[Config, int] = {}

    def _make_sampler(self, sampler: str, options: dict[str, Any]) -> Any:
        samplers = self._optuna.samplers
        if sampler == "tpe":
            kwargs: dict[str, Any] = {"multivariate": True, "constant_liar": True,
                                      "n_startup_trials": 10}
            kwargs.update(options)
            return samplers.TPESampler(seed=self.seed, **kwargs)
        if sampler == "gp":
            return samplers.GPSampler(seed=self.seed, **options)
        return samplers.CmaEsSampler(seed=self.seed, **options)

    # -- coordinates --------------------------------------------------------------------

    def _to_params(self, config: Config) -> dict[str, Value]:
        out: dict[str, Value] = {}
        for p, vals, numeric in zip(self._params, self._values, self._numeric, strict=True):
            out[p.name] = vals.index(config[p.name]) if numeric else config[p.name]
        return out

    def _from_params(self, params: dict[str, Any]) -> Config:
        values: dict[str, Value] = {}
        for p, vals, numeric in zip(self._params, self._values, self._numeric, strict=True):
            raw = params[p.name]
            values[p.name] = vals[int(raw)] if numeric else raw
        return Config(values)

    def _vector(self, params: dict[str, Any]) -> np.ndarray:
        row = []
        for p, vals, numeric in zip(self._params, self._values, self._numeric, strict=True):
            raw = params[p.name]
            if numeric:
                row.append(float(raw) / max(len(vals) - 1, 1))
            else:
                row.append(float(vals.index(raw)))
        return np.asarray(row, dtype=np.float64)

    def _ensure_coords(self) -> np.ndarray:
        if self._coords is None:
            configs = self.configs
            self._row_of = {c: i for i, c in enumerate(configs)}
            self._coords = (np.stack([self._vector(self._to_params(c)) for c in configs])
                            if configs else np.zeros((0, len(self._params))))
        return self._coords

    def _nearest_available(self, params: dict[str, Any],
                           also_taken: list[Config]) -> Config | None:
        coords = self._ensure_coords()
        if len(coords) == 0:
            return None
        target = self._vector(params)
        numeric = np.asarray(self._numeric, dtype=bool)
        diff = np.abs(coords - target)
        distance = (diff[:, numeric].sum(axis=1)
                    + (diff[:, ~numeric] > 0).sum(axis=1))
        taken = [self._row_of[c] for c in (*self._told, *self._pending, *also_taken) if c in self._row_of]
        distance[taken] = np.inf
        best = distance.min()
        if not math.isfinite(best):
            return None
        ties = np.flatnonzero(distance == best)
        return self.configs[int(ties[self._rng.integers(len(ties))])]

    # -- ask / tell ---------------------------------------------------------------------

    def _propose(self, n: int) -> list[Config]:
        out: list[Config] = []
        trial_state = self._optuna.trial.TrialState
        for _ in range(n):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trial = self._study.ask(self._distributions)
            config = self._from_params(trial.params)
            if self.is_available(config) and config not in out:
                self._trial_for[config] = trial
                out.append(config)
                continue
            substitute = self._nearest_available(trial.params, also_taken=out)
            if substitute is None:
                self._study.tell(trial, state=trial_state.FAIL)
                break
            if self._baldwinian:
                self._trial_for[substitute] = trial
            else:
                self._study.tell(trial, state=trial_state.FAIL)
            out.append(substitute)
        return out

    def _observe(self, config: Config, cost_us: float) -> None:
        trial = self._trial_for.pop(config, None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if trial is not None:
                self._study.tell(trial, cost_us)
                return
            self._study.add_trial(self._optuna.trial.create_trial(
                params=self._to_params(config), distributions=self._distributions,
                value=cost_us))

    def cancel(self, configs: Any) -> None:
        """Close the Optuna trials of asks that will never be measured."""
        configs = list(configs)
        for config in configs:
            trial = self._trial_for.pop(config, None)
            if trial is not None:
                self._study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        super().cancel(configs)
