"""Search: ask/tell strategies, pruning before GPU time, and the orchestrating loop."""

from workbench.search.budget import Budget, SearchConfig
from workbench.search.orchestrator import Search, SearchOutcome, ShapeOutcome
from workbench.search.pruning import LaunchPruner, PruneDecision
from workbench.search.strategies import (
    DEFAULT_STRATEGY,
    BaseStrategy,
    Strategy,
    make_strategy,
    strategy_names,
)

__all__ = ["DEFAULT_STRATEGY", "BaseStrategy", "Budget", "LaunchPruner", "PruneDecision",
           "Search", "SearchConfig", "SearchOutcome", "ShapeOutcome", "Strategy",
           "make_strategy", "strategy_names"]
