"""Range edges and ``tune --widen`` (pure tier: a scripted cost, no GPU).

The cost mimics issue 18's one-token silu case: more blocks per row are faster up to 32, so
a range that stops at 8 cuts the optimum off and the fastest configs sit on its maximum."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from workbench.core.edges import RangeEdge, range_edges, widen, widen_all
from workbench.core.params import Choice, IntRange, Pow2Range
from workbench.core.records import Candidate, Config, Status, Timing, TrialResult
from workbench.core.space import SearchSpace
from workbench.core.template import KernelTemplate
from workbench.search.budget import Budget, SearchConfig
from workbench.search.orchestrator import Search
from workbench.search.widening import widen_and_continue
from workbench.store.base import Provenance
from workbench.store.sqlite import SQLiteStore

pytestmark = pytest.mark.timeout(60)

PROV = Provenance("e" * 64, "nvcc 13.0", "-O3", "sm_90a", "scripted cost", "0")

SPLIT = Pow2Range(name="ROW_SPLIT", min=1, max=8, default=1)
VEC = Choice(name="VEC", values_=(4, 8, 16), default=16)
UNROLL = IntRange(name="UNROLL", min=1, max=3, default=1)


def _cost(config: Config) -> float:
    split = int(config["ROW_SPLIT"])
    return 10.0 / min(split, 32) + 0.05 * max(0, split - 32) + 0.01 * int(config["UNROLL"]) \
        + (0.0 if config["VEC"] == 16 else 0.2)


class CostRunner:
    description = "scripted cost"
    device = None

    def __init__(self, template: KernelTemplate) -> None:
        self.template = template
        self.measured: list[Config] = []

    def use_template(self, template: KernelTemplate) -> None:
        self.template = template

    def baseline(self, shape: str, dtype: str) -> TrialResult:
        return self._result(Candidate(Config(ROW_SPLIT=1, VEC=16, UNROLL=1), shape, dtype))

    def measure(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
        for c in candidates:
            self.template.validate_config(c.config)  # a widened value needs the new template
            self.measured.append(c.config)
            yield self._result(c)

    def _result(self, c: Candidate) -> TrialResult:
        t = _cost(c.config)
        return TrialResult(c.config, c.shape, c.dtype, Status.OK,
                           timing=Timing(median_us=t, min_us=t, q1_us=t, q3_us=t, mean_us=t,
                                         reps=10, rse_median_pct=0.1, l2_flushed=True))

    def close(self) -> None:
        pass


def test_edges_name_the_parameter_and_the_edge_of_the_fastest_config() -> None:
    fastest = [Config(ROW_SPLIT=8, VEC=16, UNROLL=1), Config(ROW_SPLIT=8, VEC=16, UNROLL=2),
               Config(ROW_SPLIT=4, VEC=16, UNROLL=1)]
    edges = range_edges([SPLIT, VEC, UNROLL], fastest)
    by = {(e.param, e.edge): e for e in edges}
    assert by[("ROW_SPLIT", "max")].count == 2 and by[("ROW_SPLIT", "max")].of == 3
    assert by[("VEC", "max")].value == 16 and ("UNROLL", "min") not in by  # min 1
    assert "ROW_SPLIT (pow2) sits at its maximum 8 in 2 of the 3" in by[("ROW_SPLIT", "max")].describe()
    assert range_edges([SPLIT], []) == ()


def test_widening_follows_the_kind_and_stops_at_the_hard_limit() -> None:
    top = RangeEdge("ROW_SPLIT", "pow2", "max", 8, 1, 1)
    assert widen(SPLIT, top).param == Pow2Range(name="ROW_SPLIT", min=1, max=16, default=1)
    refused = widen(SPLIT, top, hard_max=8)
    assert refused.param is None and "limit 8" in refused.why_not
    up = widen(UNROLL, RangeEdge("UNROLL", "int", "max", 3, 1, 1)).param
    assert isinstance(up, IntRange) and up.max == 4
    ask = widen(VEC, RangeEdge("VEC", "choice", "max", 16, 1, 1))
    assert ask.param is None and "name the values" in ask.why_not
    params, done = widen_all([SPLIT, VEC], [top, RangeEdge("VEC", "choice", "max", 16, 1, 1)])
    assert params[0].values()[-1] == 16 and params[1] is VEC and len(done) == 2


def test_tune_widen_continues_the_search_and_keeps_every_measured_point(tmp_path: Path) -> None:
    template = KernelTemplate.build(name="k", source="extern \"C\" __global__ void k() {}",
                                    entry="k", params=[SPLIT, VEC, UNROLL], grid=["1"],
                                    block=["32"])
    runner = CostRunner(template)
    config = SearchConfig(shapes=("s",), dtype="bf16", strategy="exhaustive",
                          budget=Budget(max_evaluations=36))
    search = Search({"s": SearchSpace(template.params)}, runner, config,
                    store=SQLiteStore(tmp_path / "s.db"), provenance=PROV)
    search.run()
    first = list(runner.measured)
    best_before = min(search.results("s"), key=lambda r: r.median_us or 0.0)
    assert best_before.config["ROW_SPLIT"] == 8  # on the edge
    final, rounds, _ = widen_and_continue(search, runner, template, "s", rounds=4,
                                          extra_evaluations=12, hard_max=1024)
    best = min(search.results("s", in_space=False), key=lambda r: r.median_us or 0.0)
    assert best.config["ROW_SPLIT"] == 32 and best.median_us < best_before.median_us
    assert rounds[0].edges[0].param == "ROW_SPLIT"
    assert final.params[0].values()[-1] >= 32
    assert runner.measured[:len(first)] == first          # nothing measured twice...
    assert len(set(runner.measured)) == len(runner.measured)
    assert all(r.config in {c for c in runner.measured} for r in search.results("s"))
    assert "ROW_SPLIT: max 8 -> " in rounds[0].describe()
