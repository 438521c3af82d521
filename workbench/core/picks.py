"""The answer of a tune, in one home: the search's fastest ok trial and the stored pick.

:func:`fastest_ok` / :func:`ranked_ok` are the one definition of "the fastest ok trial"
(an ok status and a timing, ordered by median; ties keep the given order, so the first
measured wins). Every view that needs the search's best calls them.

A :class:`PickRecord` is the decision a tune stores the moment it is made: the config to
use at one (template, shape, dtype), how it was decided (``"confirmed"`` by the
confirmation rounds under the condition rule, or ``"search-best"``: the search's fastest,
because no confirmation could run, with the reason), the reported time, the speedup over
the baseline with its interval, and the device. Exports, dispatch tables, the report
notebook, the sidebar and the panel read it back from the store (Optuna's
``study.best_trial`` is read from its storage the same way), so every view shows the same
answer, and says so when it is a fallback. :class:`ConfirmationMeasurement` is one
re-measurement of the confirmation rounds, typed (round, cache condition, baseline or not).

Pure: results in, records out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from workbench.core.records import Config, Status, TrialResult

Decided = Literal["confirmed", "search-best"]
DECIDED: tuple[str, ...] = ("confirmed", "search-best")
#: The rule a fallback pick follows (no confirmation ran).
SEARCH_BEST_RULE = "the search's fastest ok trial (not measured again)"


#: What a tune says when its pick is slower than the kernel as written (the baseline).
SLOWER_THAN_BASELINE = ("the pick is slower than the baseline (the kernel as written): keep "
                        "the kernel as written. The template's defaults should time as the "
                        "baseline does; if they did not here, the template changed the "
                        "code at its defaults")


def slower_than_baseline(high: float | None) -> bool:
    """Whether a speedup interval whose upper end is ``high`` lies wholly below 1."""
    return high is not None and high < 1.0


def ranked_ok(results: Iterable[TrialResult]) -> list[TrialResult]:
    """The ok results that carry a timing, fastest median first (stable: of equal medians
    the earlier one stays first)."""
    ok = [r for r in results if r.status is Status.OK and r.timing is not None]
    return sorted(ok, key=lambda r: r.timing.median_us if r.timing else float("inf"))


def improves(result: TrialResult, best: TrialResult | None) -> bool:
    """Whether ``result`` replaces ``best`` as the fastest ok trial (strictly faster: of
    equal medians the one measured first stays)."""
    if result.status is not Status.OK or result.timing is None:
        return False
    return best is None or best.timing is None or result.timing.median_us < best.timing.median_us


def fastest_ok(results: Iterable[TrialResult]) -> TrialResult | None:
    """The fastest ok result with a timing (the first measured of equal medians), or None."""
    best: TrialResult | None = None
    for r in results:
        if improves(r, best):
            best = r
    return best


@dataclass(frozen=True)
class ConfirmationMeasurement:
    """One re-measurement of a confirmation: ``round_index`` 1 chooses among the finalists,
    2 is reported; ``condition`` the cache condition it ran under ("" for a confirmation
    under the search's own condition only); ``is_baseline`` for the baseline kernel's
    measurement beside the finalists (its config is empty)."""

    round_index: int
    condition: str
    is_baseline: bool
    result: TrialResult

    @property
    def config(self) -> Config:
        return self.result.config

    @property
    def median_us(self) -> float | None:
        return self.result.median_us

    @property
    def device(self) -> str:
        return self.result.device


@dataclass(frozen=True)
class PickRecord:
    """The config a tune of one (template version, shape, dtype) recommends, as stored.

    ``decided`` is ``"confirmed"`` (the confirmation rounds chose it under ``rule``;
    ``median_us`` is its round-2 time under ``condition``) or ``"search-best"`` (no
    confirmation could run: ``fallback_reason`` says why; ``median_us`` is the search's
    time). ``speedup`` divides the baseline's time by ``median_us`` (same condition and
    round where confirmed), with a 95 % interval where one could be computed; ``holds``
    whether the pick met the rule's guard (None: no guard applied). ``id`` keys the
    confirmation measurements stored with it."""

    id: str
    kernel: str
    template_version: str
    shape: str
    dtype: str
    config: Config
    decided: str  # one of DECIDED
    rule: str
    median_us: float
    device: str
    session_id: str | None = None
    condition: str = ""
    fallback_reason: str = ""
    search_median_us: float | None = None
    baseline_us: float | None = None
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None
    holds: bool | None = None
    created: str = ""  # ISO-8601 UTC, stamped by the store

    @property
    def is_fallback(self) -> bool:
        """True when no confirmation ran and the pick is the search's fastest trial."""
        return self.decided != "confirmed"

    @property
    def problem(self) -> str:
        return f"{self.shape}/{self.dtype}"

    def how(self) -> str:
        """How the pick was decided, in words: ``confirmed (<rule>)`` or ``search-best
        fallback (no confirmation could run: <reason>)``."""
        if not self.is_fallback:
            under = f" under '{self.condition}'" if self.condition else ""
            verdict = "" if self.holds is None else ("" if self.holds else
                                                      "; the rule's guard does NOT hold")
            return f"confirmed ({self.rule}; round 2{under}{verdict})"
        return ("search-best fallback (no confirmation could run: "
                f"{self.fallback_reason or 'no reason recorded'})")

    def speedup_text(self) -> str:
        """``1.163x [1.150, 1.176]`` or ``1.163x`` or ``""``."""
        if self.speedup is None:
            return ""
        ci = (f" [{self.speedup_low:.3f}, {self.speedup_high:.3f}]"
              if self.speedup_low is not None and self.speedup_high is not None else "")
        return f"{self.speedup:.3f}x{ci}"

    def describe(self) -> str:
        """One line for a terminal, a report or a tooltip."""
        speed = self.speedup_text()
        return (f"{self.problem}: {dict(self.config)} at {self.median_us:.3f} us"
                + (f", {speed} the baseline" if speed else "") + f" — {self.how()}")


#: Why a view falls back when the store holds no pick for its problem.
NO_STORED_PICK = "no tune stored a pick for this template, shape and dtype"


def search_best_pick(results: Iterable[TrialResult], *, kernel: str, template_version: str,
                     reason: str = NO_STORED_PICK, baseline_us: float | None = None,
                     session_id: str | None = None, pick_id: str = "") -> PickRecord | None:
    """The fallback pick: the search's fastest ok trial, marked ``search-best`` with
    ``reason`` (no confirmation ran, or none was stored); None without an ok trial.
    ``baseline_us`` gives the point speedup (no interval: the search kept one median)."""
    best = fastest_ok(results)
    if best is None or best.median_us is None:
        return None
    return PickRecord(id=pick_id, kernel=kernel, template_version=template_version,
                      shape=best.shape, dtype=best.dtype, config=best.config,
                      decided="search-best", rule=SEARCH_BEST_RULE,
                      median_us=float(best.median_us), device=best.device,
                      session_id=session_id, fallback_reason=reason,
                      search_median_us=best.median_us, baseline_us=baseline_us,
                      speedup=baseline_us / best.median_us if baseline_us else None)
