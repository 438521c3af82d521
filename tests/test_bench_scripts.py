"""Benchmark scripts pair a runner's results with their configs by config, not position:
``Runner.measure`` yields results when ready, in any order."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from workbench.core.records import Candidate, Config, Status, TrialResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

pytestmark = pytest.mark.timeout(60)


class _ReversingRunner:
    """Answers every batch in reverse order (as a compile finishing late would)."""

    def measure(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
        for c in reversed(list(candidates)):
            yield TrialResult(config=c.config, shape=c.shape, dtype=c.dtype, status=Status.OK,
                              reason=f"measured {dict(c.config)}")


def test_repeatability_pairs_results_with_their_configs_not_their_positions() -> None:
    import repeatability

    cands = [Candidate(Config(BLOCK=b), "decode", "bf16") for b in (64, 128, 256)]
    got = repeatability._in_order(_ReversingRunner(), cands)  # type: ignore[arg-type]
    assert [r.config for r in got] == [c.config for c in cands]
