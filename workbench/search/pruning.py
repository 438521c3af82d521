"""Pruning before GPU time, each pruned config keeping its reason; and model-guided order.

Three gates, cheapest first:

1. user constraints: the :class:`~workbench.core.space.SearchSpace` never yields a config
   that breaks one (``space.rejection(config)`` names it);
2. launch limits: the template's launch rules evaluated for (config, shape) and checked
   against the device (:func:`workbench.core.feasibility.config_rejection`);
3. compile-derived limits, once ptxas has reported a :class:`ResourceUsage`: occupancy
   below a floor, register spills, shared memory over the device limit
   (:func:`workbench.core.feasibility.resource_rejection`).

Ordering: :func:`launch_score` is a cheap predicted-cost from the launch alone (occupancy
with an assumed register count and the last-wave quantisation), and
:class:`NeighbourModel` predicts a config's time from measured neighbours; either orders
candidates so the most promising are measured first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.errors import ExpressionError, TemplateError
from workbench.core.feasibility import (
    Rejection,
    config_rejection,
    evaluated_launch_rejection,
    occupancy,
    resource_rejection,
)
from workbench.core.hardware import DeviceSpec
from workbench.core.records import Config, ResourceUsage, Status, TrialResult, Value
from workbench.core.template import Launch, LaunchRules


@dataclass(frozen=True)
class PruneDecision:
    """A config that will not be measured, and why. ``stage``: constraint|launch|resources;
    ``rejection`` the feasibility check's record (limit, value, allowed) where one refused."""

    config: Config
    reason: str
    stage: str
    rejection: Rejection | None = None

    @classmethod
    def of(cls, config: Config, rejection: Rejection | None) -> PruneDecision | None:
        """The decision a feasibility rejection makes (None: no rejection)."""
        return (None if rejection is None
                else cls(config, rejection.reason, rejection.stage, rejection))

    def as_result(self, shape: str, dtype: str) -> TrialResult:
        """The ``pruned`` TrialResult that records this decision in the store."""
        return TrialResult(self.config, shape, dtype, Status.PRUNED,
                           reason=f"{self.stage}: {self.reason}", source="pruned")


def evaluate_launch(rules: LaunchRules, config: Mapping[str, Value],
                    env: Mapping[str, Any]) -> Launch:
    """The launch of ``config`` for a shape environment (TemplateError when it cannot)."""
    return rules.evaluate_config(config, env)


def launch_decision(config: Config, rules: LaunchRules, env: Mapping[str, Any],
                    device: DeviceSpec) -> PruneDecision | None:
    """A PruneDecision when ``config``'s launch cannot run on ``device``, else None."""
    return PruneDecision.of(config, config_rejection(rules, config, env, device)[1])


def resource_decision(config: Config, usage: ResourceUsage, device: DeviceSpec,
                      threads_per_block: int, *, min_occupancy: float = 0.0,
                      allow_spills: bool = True) -> PruneDecision | None:
    """A PruneDecision from ptxas's report: shared memory over the limit, no resident
    block, occupancy under ``min_occupancy`` (fraction of the SM's warps), or spills."""
    return PruneDecision.of(config, resource_rejection(
        device, usage, threads_per_block, min_occupancy=min_occupancy, allow_spills=allow_spills))


Pruner = Callable[[Config, str], "PruneDecision | None"]


class LaunchPruner:
    """``pruner(config, shape)``: launch-limit pruning for one template on one device.

    ``env_for_shape(shape)`` gives the names the launch rules see besides parameters
    (shape sizes, ``elem_bytes``, device limits), e.g. ``KernelFolder.env(shape, dtype,
    device)``.
    """

    def __init__(self, rules: LaunchRules, device: DeviceSpec,
                 env_for_shape: Callable[[str], Mapping[str, Any]]) -> None:
        self.rules = rules
        self.device = device
        self.env_for_shape = env_for_shape
        self._envs: dict[str, Mapping[str, Any]] = {}

    def _env(self, shape: str) -> Mapping[str, Any]:
        if shape not in self._envs:
            self._envs[shape] = dict(self.env_for_shape(shape))
        return self._envs[shape]

    def __call__(self, config: Config, shape: str) -> PruneDecision | None:
        return launch_decision(config, self.rules, self._env(shape), self.device)

    def score(self, config: Config, shape: str) -> float:
        """:func:`launch_score` of ``config`` for ``shape`` (lower is more promising)."""
        return launch_score(config, self.rules, self._env(shape), self.device)


def split_pruned(configs: Iterable[Config], shape: str,
                 pruners: Sequence[Pruner]) -> tuple[list[Config], list[PruneDecision]]:
    """(configs that pass every pruner, decisions for the rest), order kept."""
    kept: list[Config] = []
    pruned: list[PruneDecision] = []
    for config in configs:
        decision = next((d for d in (p(config, shape) for p in pruners) if d is not None), None)
        if decision is None:
            kept.append(config)
        else:
            pruned.append(decision)
    return kept, pruned


def launch_score(config: Config, rules: LaunchRules, env: Mapping[str, Any],
                 device: DeviceSpec, *, assumed_regs_per_thread: int = 32) -> float:
    """Cheap predicted relative cost from the launch alone (lower is better, >= 1).

    1 / (occupancy fraction x last-wave efficiency), with registers assumed: a
    memory-bound kernel wants the SMs full of warps and no mostly-empty last wave.
    Infinite for a launch that cannot run.
    """
    try:
        launch = evaluate_launch(rules, config, env)
    except (TemplateError, ExpressionError):
        return math.inf
    if evaluated_launch_rejection(device, launch) is not None:
        return math.inf
    usage = ResourceUsage(regs_per_thread=assumed_regs_per_thread,
                          dynamic_smem_bytes=launch.smem_bytes)
    occ = occupancy(device, usage, launch.threads_per_block)
    if occ.blocks_per_sm == 0:
        return math.inf
    capacity = occ.blocks_per_sm * device.num_sms
    waves = math.ceil(launch.blocks / capacity)
    tail_efficiency = launch.blocks / (waves * capacity)
    # a grid smaller than one wave cannot fill the machine either way
    return 1.0 / (occ.fraction * tail_efficiency)


def order_by_score(configs: Sequence[Config], score: Callable[[Config], float]) -> list[Config]:
    """``configs`` most promising (lowest score) first; ties keep their order."""
    return [c for _, _, c in sorted((score(c), i, c) for i, c in enumerate(configs))]


class NeighbourModel:
    """Predicts log time from measured configs by inverse-distance weighting of the ``k``
    nearest (L1 on normalised value indices; categorical mismatch = 1). Failed trials
    count as a time ``failure_factor`` x the slowest measured one."""

    def __init__(self, params: Sequence[Any], *, k: int = 5, failure_factor: float = 3.0) -> None:
        self.params = tuple(params)
        self.k = k
        self.failure_factor = failure_factor
        self._values = [tuple(p.values()) for p in self.params]
        self._numeric = np.asarray([bool(p.is_numeric) for p in self.params], dtype=bool)
        self._points: list[np.ndarray] = []
        self._costs: list[float] = []
        self._vectors: dict[Config, np.ndarray] = {}  # a config's coordinates, computed once

    def vector(self, config: Mapping[str, Value]) -> np.ndarray:
        """The config's coordinates (normalised index per numeric parameter)."""
        key = config if isinstance(config, Config) else Config(config)
        cached = self._vectors.get(key)
        if cached is None:
            cached = self._vectors[key] = self._coordinates(key)
        return cached

    def _coordinates(self, config: Config) -> np.ndarray:
        out = np.empty(len(self.params))
        for i, (p, vals) in enumerate(zip(self.params, self._values, strict=True)):
            index = vals.index(config[p.name])
            out[i] = index / max(len(vals) - 1, 1) if self._numeric[i] else index
        return out

    def add(self, config: Mapping[str, Value], cost_us: float) -> None:
        """Add one observation (``inf`` for a failure)."""
        self._points.append(self.vector(config))
        self._costs.append(cost_us)

    @property
    def size(self) -> int:
        return len(self._costs)

    def predict(self, configs: Sequence[Mapping[str, Value]]) -> np.ndarray:
        """Predicted log cost for each config (nan when nothing is measured yet)."""
        if not self._costs or not configs:
            return np.full(len(configs), np.nan)
        costs = np.asarray(self._costs)
        finite = costs[np.isfinite(costs)]
        worst = finite.max() * self.failure_factor if finite.size else 1.0
        log_costs = np.log(np.where(np.isfinite(costs), costs, worst))
        points = np.stack(self._points)
        queries = np.stack([self.vector(c) for c in configs])
        diff = np.abs(queries[:, None, :] - points[None, :, :])
        distance = (diff[:, :, self._numeric].sum(axis=2)
                    + (diff[:, :, ~self._numeric] > 0).sum(axis=2))
        k = min(self.k, len(costs))
        nearest = np.argpartition(distance, k - 1, axis=1)[:, :k]
        d = np.take_along_axis(distance, nearest, axis=1)
        weights = 1.0 / (d + 1e-3)
        return np.asarray((weights * log_costs[nearest]).sum(axis=1) / weights.sum(axis=1))
