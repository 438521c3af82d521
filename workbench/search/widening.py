"""``workbench tune --widen``: when the fastest configs sit on a range edge, widen that range
along its kind and let the same search continue, every measured point kept.

The edges and the widening are pure (:mod:`workbench.core.edges`); here the runner and the
search switch to the widened template: the runner renders and validates with it, the
search's spaces take the new ranges through ``Search.edit_params`` (trials measured so far
stay, and still count), and the budget grows by ``extra_evaluations`` per round.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from workbench.core.edges import RangeEdge, Widening, range_edges, widen_all
from workbench.core.picks import ranked_ok
from workbench.core.template import KernelTemplate
from workbench.engine.capabilities import TemplateBound
from workbench.search.orchestrator import Search, SearchOutcome


@dataclass(frozen=True)
class WidenRound:
    """One round: the edges found, what each widening did, the evaluations after it."""

    edges: tuple[RangeEdge, ...]
    widenings: tuple[Widening, ...]
    evaluated_after: int

    def describe(self) -> str:
        if not self.widenings:
            return "  widen: no range edge among the fastest configs"
        return "  widen: " + "; ".join(w.describe() for w in self.widenings) + \
            f" ({self.evaluated_after} evaluated after the round)"


def widen_and_continue(search: Search, runner: TemplateBound, template: KernelTemplate,
                       shape: str, *, rounds: int = 1, extra_evaluations: int = 40,
                       top: int = 5, hard_max: int = 1024,
                       ) -> tuple[KernelTemplate, tuple[WidenRound, ...], SearchOutcome | None]:
    """Up to ``rounds`` times: find the fastest configs' range edges at ``shape``, widen them,
    continue the search for ``extra_evaluations`` more. Stops early when no edge is left or
    none can be widened. Returns the final template, the rounds and the last round's search
    outcome (None when no round searched)."""
    done: list[WidenRound] = []
    last: SearchOutcome | None = None
    for _ in range(rounds):
        ok = ranked_ok(search.results(shape))
        edges = range_edges(template.params, [r.config for r in ok[:top]])
        params, widenings = widen_all(template.params, edges, hard_max=hard_max)
        if not edges or params == template.params:
            done.append(WidenRound(edges, widenings, search.evaluated(shape)))
            break
        template = replace(template, params=params)
        runner.use_template(template)
        search.edit_params(params)
        budget = search.config.budget
        grown = (budget.max_evaluations or search.evaluated(shape)) + extra_evaluations
        search.config = replace(search.config, budget=replace(budget, max_evaluations=grown))
        last = search.run()
        done.append(WidenRound(edges, widenings, search.evaluated(shape)))
    return template, tuple(done), last
