"""The L2 hit rate of a tune's finalists: the signal for choosing a 2-D kernel's block order.

A 2-D tiled kernel (a transpose, a stencil, a GEMM tile loop) reads neighbouring tiles
from blocks that run at the same time; which blocks run together is the block order
(row-major, diagonal, grouped swizzle), and the L2 hit rate says whether they share
what they read. SwizzlePerf (Tschand et al., 2025) feeds exactly this counter to the
model that picks a swizzle. Here the finalists of a tune (the configs the confirmation
measured again) are profiled with Nsight Compute where it is present
(:mod:`workbench.engine.ncu`), and the rates travel beside their times in the
:class:`~workbench.engine.tuning.TuneReport` and into the planner's prompt. A tune where it
could not be measured carries the reason instead, never a number.

Pure records; nothing here runs a profiler.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.records import Config
from workbench.core.template import KernelTemplate

#: The Nsight Compute metric: L2 sectors that hit / sectors requested, in percent.
L2_HIT_METRIC = "lts__t_sector_hit_rate.pct"
#: How the rate is taken (shown with the numbers).
L2_METHOD = (f"Nsight Compute {L2_HIT_METRIC}, one launch after caches were flushed, clocks "
             "as they are, at the tuned shape")


def is_tiled_2d(template: KernelTemplate) -> bool:
    """A kernel launched over a 2-D grid of 2-D blocks: the family whose block order matters
    for L2 (``grid = [X, Y]`` and ``block = [BX, BY]``, neither second rule the literal 1)."""
    grid, block = template.launch.grid, template.launch.block
    return (len(grid) >= 2 and len(block) >= 2 and grid[1].text.strip() != "1"
            and block[1].text.strip() != "1")


@dataclass(frozen=True)
class FinalistL2:
    """One finalist: its config, its (confirmed where there is one) time and its L2 hit
    rate in percent (None when the profiler gave no value for it)."""

    config: Config
    median_us: float | None
    l2_hit_pct: float | None


@dataclass(frozen=True)
class L2Profile:
    """The finalists' L2 hit rates, or why they were not measured (``note``)."""

    finalists: tuple[FinalistL2, ...] = ()
    note: str = ""
    method: str = L2_METHOD

    @property
    def measured(self) -> bool:
        return any(f.l2_hit_pct is not None for f in self.finalists)

    def hit_pct(self, config: Config) -> float | None:
        """The L2 hit rate of ``config`` where it was profiled."""
        return next((f.l2_hit_pct for f in self.finalists if f.config == config), None)

    def lines(self) -> list[str]:
        """Finalists fastest first: time, L2 hit rate, config; or the reason there is none."""
        if not self.measured:
            return [f"L2 hit rate of the finalists: not measured: {self.note or 'no value'}"]
        out = [f"L2 hit rate of the finalists ({self.method}):"]
        for f in sorted(self.finalists, key=lambda f: f.median_us or float("inf")):
            time = f"{f.median_us:9.2f} us" if f.median_us is not None else "        — us"
            rate = f"{f.l2_hit_pct:5.1f} %" if f.l2_hit_pct is not None else "  n/a  "
            out.append(f"{time}  L2 hit {rate}  {dict(f.config)}")
        if self.note:
            out.append(f"note: {self.note}")
        return out

    def to_dict(self) -> dict[str, object]:
        """JSON form (results files, the agent's iteration detail)."""
        return {"method": self.method, "note": self.note,
                "finalists": [{"config": dict(f.config), "median_us": f.median_us,
                               "l2_hit_pct": f.l2_hit_pct} for f in self.finalists]}
