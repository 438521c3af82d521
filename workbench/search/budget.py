"""Search budgets and settings: small frozen config objects, validated on construction."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.core.errors import SearchError


@dataclass(frozen=True)
class Budget:
    """When a search stops (whichever comes first; None = no limit).

    ``max_evaluations`` and ``patience`` apply per shape. ``max_evaluations`` counts
    measured trials (ok or failed, not pruned) of that shape with this provenance, including
    those already in the store, so a resumed search finishes the same budget rather than
    starting a new one. ``patience`` stops a shape after that many trials in a row without a
    new best. ``max_wall_s`` bounds the whole run.
    """

    max_evaluations: int | None = None
    max_wall_s: float | None = None
    patience: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_evaluations", "patience"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise SearchError(f"budget {name} must be a positive integer or None, got "
                                  f"{value!r}", key=name, value=value, expected="int >= 1")
        wall = self.max_wall_s
        if wall is not None and (isinstance(wall, bool) or not isinstance(wall, (int, float))
                                 or not math.isfinite(wall) or wall <= 0):
            raise SearchError(f"budget max_wall_s must be a positive number of seconds or "
                              f"None, got {wall!r}", key="max_wall_s", value=wall,
                              expected="> 0 s")


@dataclass(frozen=True)
class SearchConfig:
    """What to search: shapes, element dtype, strategy and budget.

    ``batch_size`` candidates are handed to the runner at once (it may compile them in
    parallel); pause/stop/edits take effect between batches.
    """

    shapes: tuple[str, ...]
    dtype: str
    strategy: str = "guided"  # strategies.DEFAULT_STRATEGY (kept equal by a test)
    seed: int = 0
    budget: Budget = field(default_factory=Budget)
    batch_size: int = 1
    strategy_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.shapes, str):
            object.__setattr__(self, "shapes", (self.shapes,))
        object.__setattr__(self, "shapes", tuple(self.shapes))
        if not self.shapes:
            raise SearchError("a search needs at least one shape", key="shapes", value=[],
                              expected="one or more shape names")
        if len(set(self.shapes)) != len(self.shapes):
            raise SearchError(f"shapes repeat: {list(self.shapes)}", key="shapes",
                              value=list(self.shapes), expected="distinct names")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) \
                or self.batch_size < 1:
            raise SearchError(f"batch_size must be an integer >= 1, got {self.batch_size!r}",
                              key="batch_size", value=self.batch_size, expected=">= 1")
