"""One wording for a tune's budget, in the panel, the CLI and the agent: "N more, M stored".

A budget is the total of measured evaluations (ok or failed; configs pruned before the GPU
do not count) wanted for one template version at one shape and dtype, the stored ones
included: a budget of 64 with 18 stored measures 46 more. Pure; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BudgetSplit:
    """A budget over what is stored: ``more`` to measure now, ``stored`` already measured."""

    budget_evaluations: int
    stored_evaluations: int

    @property
    def more(self) -> int:
        """Evaluations this launch measures at most (never negative: a store already holding
        more than the budget asks for is full)."""
        return max(self.budget_evaluations - self.stored_evaluations, 0)

    @property
    def words(self) -> str:
        """``"46 more, 18 stored"``."""
        return budget_words(self.more, self.stored_evaluations)


def budget_words(more: int, stored: int) -> str:
    """The one wording: ``"<more> more, <stored> stored"``."""
    return f"{more} more, {stored} stored"
