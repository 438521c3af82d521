"""The search keeps its tallies (evaluated, best) as results arrive: the work per trial does
not grow with the number of trials (a rescan per trial made a 756-config pass quadratic)."""

from __future__ import annotations

import pytest
from helpers_fake_runner import SyntheticRunner, synthetic_space

from workbench.core.params import Choice, IntRange, Pow2Range
from workbench.core.picks import fastest_ok
from workbench.core.space import SearchSpace
from workbench.search.budget import Budget, SearchConfig
from workbench.search.orchestrator import Search


def _membership_checks(monkeypatch: pytest.MonkeyPatch, budget: int) -> tuple[int, Search]:
    calls = [0]
    original = SearchSpace.__contains__

    def counting(self: SearchSpace, config: object) -> bool:
        calls[0] += 1
        return original(self, config)

    monkeypatch.setattr(SearchSpace, "__contains__", counting)
    wide = [Pow2Range(name="BLOCK", min=32, max=512, default=128),
            IntRange(name="ITEMS", min=1, max=200, default=2),
            Choice(name="LOAD", values_=("plain", "vector"), default="plain")]
    search = Search({"a": synthetic_space((), wide)}, SyntheticRunner(),
                    SearchConfig(("a",), "bf16", strategy="exhaustive",
                                 budget=Budget(max_evaluations=budget)))
    search.run()
    return calls[0], search


def test_membership_checks_grow_linearly(monkeypatch: pytest.MonkeyPatch) -> None:
    small, _ = _membership_checks(monkeypatch, 50)
    large, search = _membership_checks(monkeypatch, 400)
    assert search.evaluated("a") == 400
    # Linear: 8x the trials costs about 8x the checks (quadratic would be ~64x).
    assert large <= 10 * small
    assert search.best("a") == fastest_ok(search.results("a"))


def test_tallies_follow_an_edit_of_the_ranges() -> None:
    search = Search({"a": synthetic_space()}, SyntheticRunner(),
                    SearchConfig(("a",), "bf16", strategy="exhaustive",
                                 budget=Budget(max_evaluations=60)))
    search.run()
    params = list(search.space("a").params)
    narrowed = [p if p.name != "BLOCK" else type(p)(name=p.name, min=p.min, max=p.min * 2)
                for p in params]
    search.edit_params(narrowed)
    kept = search.results("a")
    assert search.evaluated("a") == sum(1 for r in kept if r.status.value != "pruned")
    assert search.evaluated("a") < 60 and search.best("a") == fastest_ok(kept)


def test_a_pause_holds_between_results_of_a_batch() -> None:
    import threading

    from workbench.core.events import TrialFinished

    search = Search({"a": synthetic_space()}, SyntheticRunner(),
                    SearchConfig(("a",), "bf16", strategy="exhaustive", batch_size=16,
                                 budget=Budget(max_evaluations=40)))
    seen: list[str] = []
    paused = threading.Event()

    def on_event(event: object) -> None:
        if not isinstance(event, TrialFinished):
            return
        seen.append("resumed-trial" if seen and seen[-1] == "resume" else "trial")
        if len(seen) == 3:  # mid-batch: pause, and resume from another thread later
            search.pause()
            paused.set()
            seen.append("pause")
            threading.Timer(0.3, lambda: (seen.append("resume"), search.resume())).start()

    search.events.subscribe(on_event)
    search.run()
    assert paused.is_set()
    at = seen.index("pause")
    assert seen[at + 1] == "resume"  # nothing was measured while paused
    assert search.evaluated("a") == 40
