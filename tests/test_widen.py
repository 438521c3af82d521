"""Range edges and ``tune --widen`` (pure tier: a scripted cost, no GPU).

The cost mimics issue 18's one-token silu case: more blocks per row are faster up to 32, so
a range that stops at 8 cuts the optimum off and the fastest configs sit on its maximum."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from workbench.core.edges import RangeEdge, range_edges, widen, widen_all
from workbench.core.params import Choice, IntRange, Pow2Range
from workbench.core.records import Candidate, Config, Status, Timing, TrialResult
from workbench.core.space import SearchSpace
from workbench.core.template import KernelTemplate
from workbench.engine.conditions import ConditionUnavailable
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


def _once(description: str, condition: str | None) -> None:
    """These scripted runners measure once: a confirmation is refused, as a replay's."""
    if condition is not None:
        raise ConditionUnavailable(f"{description} cannot measure again", condition=condition)


class CostRunner:
    description = "scripted cost"
    device = None

    def __init__(self, template: KernelTemplate) -> None:
        self.template = template
        self.measured: list[Config] = []

    def use_template(self, template: KernelTemplate) -> None:
        self.template = template

    def for_template(self, template: KernelTemplate) -> CostRunner:
        return CostRunner(template)

    search_condition = "read"

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult:
        _once(self.description, condition)
        return self._result(Candidate(Config(ROW_SPLIT=1, VEC=16, UNROLL=1), shape, dtype))

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        _once(self.description, condition)
        return self._measure(candidates)

    def _measure(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
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


# --- the Workbench, the panel's button and the agent (scripted cost on the silu folder) ---

class SiluSplitRunner:
    """The silu sample folder with the cost above: more blocks per row are faster up to 32,
    so the fastest configs sit on ROW_SPLIT's maximum of 8. Validates every config with the
    template it is given (a widened value needs the widened template)."""

    def __init__(self, folder: Any) -> None:
        from workbench.testing.synthetic_runner import SyntheticRunner

        self._synthetic = SyntheticRunner(folder)
        self.device = self._synthetic.device
        self.description = "scripted split cost (NOT a measurement)"
        self.template = self._synthetic.template

    def use_template(self, template: KernelTemplate) -> None:
        self.template = template

    def for_template(self, template: KernelTemplate) -> Any:
        raise AssertionError("widening measures on with the same runner")

    search_condition = "read"

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult:
        _once(self.description, condition)
        return self._ok(Candidate(self.template.default_config(), shape, dtype))

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        _once(self.description, condition)
        return self._measure(candidates)

    def _measure(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
        for c in candidates:
            self.template.validate_config(c.config)
            yield self._ok(c)

    def _ok(self, c: Candidate) -> TrialResult:
        split = int(c.config["ROW_SPLIT"])
        t = 10.0 / min(split, 32) + 0.05 * max(0, split - 32) \
            + 0.001 * int(c.config["BLOCK_THREADS"]) / 32
        return TrialResult(c.config, c.shape, c.dtype, Status.OK,
                           timing=Timing(median_us=t, min_us=t, q1_us=t, q3_us=t, mean_us=t,
                                         reps=10, rse_median_pct=0.1, l2_flushed=True))

    def close(self) -> None:
        pass


def _silu_workbench(store: Path) -> Any:
    from workbench.api import Workbench
    from workbench.core.kernel_folder import load_kernel_folder

    folder = load_kernel_folder(Path(__file__).resolve().parents[1] / "sample_kernels" /
                                "silu_and_mul")
    return Workbench(folder, store=store, runner=SiluSplitRunner(folder))


def _split_max(wb: Any) -> int:
    return int(next(p for p in wb.params if p.name == "ROW_SPLIT").max)


def test_the_workbench_adopts_widened_ranges_as_a_new_version_that_needs_review(
        tmp_path: Path) -> None:
    from workbench.core.errors import WorkbenchError
    from workbench.core.events import TemplateAdopted

    wb = _silu_workbench(tmp_path / "wb.sqlite")
    adopted: list[TemplateAdopted] = []
    wb.events.subscribe(lambda e: adopted.append(e)
                        if isinstance(e, TemplateAdopted) else None)
    before = wb.template_version
    first = wb.tune("decode", "bf16", "random", budget=40,
                    confirm=0, auto_approve=True, l2_profile=False)
    assert first.widened is None and any(e.param == "ROW_SPLIT" for e in first.edges)
    report = wb.tune("decode", "bf16", "random", budget=40, confirm=0,
                     auto_approve=True, l2_profile=False, widen=1, widen_budget=12)
    assert report.widened is not None and _split_max(wb) == 16
    assert any("ROW_SPLIT: max 8 -> pow2 1..16" in n for n in report.notes)
    assert len(report.results) == 52  # the 40 kept, 12 more in the widened ranges
    assert adopted and adopted[-1].origin == "widened"
    assert wb.template_version != before
    with pytest.raises(WorkbenchError, match="approv"):  # the widened version: not reviewed
        wb.tune("decode", "bf16", "random", budget=60,
                confirm=0, l2_profile=False)


def test_the_panels_widen_button_widens_the_ranges_the_fastest_configs_sit_on(
        tmp_path: Path) -> None:
    pytest.importorskip("ipywidgets")
    from workbench.core.errors import WorkbenchError
    from workbench.ui.panel import WorkbenchPanel

    wb = _silu_workbench(tmp_path / "wb.sqlite")
    wb.review("approved", "scripted cost")
    panel = WorkbenchPanel(wb)
    try:
        panel.shape.value, panel.dtype.value = "decode", "bf16"
        with pytest.raises(WorkbenchError, match="nothing to widen yet"):
            panel._widen()  # nothing stored: a clear refusal, not an empty search
        panel.strategy.value, panel.budget.value = "random", 40
        panel.launch_button.click()
        assert panel.join(60)
        assert "finished" in panel.header.value and _split_max(wb) == 8
        panel.budget.value = 12
        panel.widen_button.click()
        assert panel.join(60)
        panel.pusher.flush()
        assert _split_max(wb) == 16
        report = panel.last_report
        assert report.widened is not None and len(report.results) == 52
        assert any(r.config["ROW_SPLIT"] == 16 for r in report.results)
        # the panel follows the widened ranges: editor rows, charts' axes, the table
        assert any(a.name == "ROW_SPLIT" and 16 in a.ticks for a in panel.search.axes)
        assert len(panel.table) == 52
        # a new version: the Template tab says it needs a review before the next Launch
        assert "not approved" in panel.template_tab.review_status.value
    finally:
        panel.close()


@pytest.mark.parametrize(("widen", "best_split"), [(0, 8), (1, 16)])
def test_the_agent_widens_after_its_tune_step(tmp_path: Path, widen: int,
                                              best_split: int) -> None:
    from workbench.agent.records import AgentConfig
    from workbench.agent.run import run_agent
    from workbench.core.errors import WorkbenchError
    from workbench.core.kernel_folder import load_kernel_folder

    with pytest.raises(WorkbenchError, match="widen"):
        AgentConfig(widen=-1)
    folder = load_kernel_folder(Path(__file__).resolve().parents[1] / "sample_kernels" /
                                "silu_and_mul")
    runner = SiluSplitRunner(folder)
    outcome = run_agent(folder, runner=lambda template: runner,
                        store=SQLiteStore(tmp_path / "agent.sqlite"), iterations=1,
                        auto_approve=True, initial_template=folder.template, budget=40,
                        confirm=0, shape="decode", dtype="bf16", widen=widen)
    assert outcome.best is not None
    assert outcome.best.config["ROW_SPLIT"] == best_split


def test_the_agents_plan_prompt_names_the_edges_and_asks_for_a_choices_values() -> None:
    from workbench.agent.context import space_summary

    space = SearchSpace((SPLIT, VEC, UNROLL))
    configs = [Config(ROW_SPLIT=8, VEC=16, UNROLL=1), Config(ROW_SPLIT=8, VEC=16, UNROLL=2)]
    edges = range_edges((SPLIT, VEC, UNROLL), configs)
    text = space_summary(space, 2, edges=edges)
    assert "- range edge: ROW_SPLIT (pow2) sits at its maximum 8" in text
    vec = next(line for line in text.splitlines() if line.startswith("- range edge: VEC"))
    assert "propose the values to add" in vec
    assert "propose" not in next(line for line in text.splitlines() if "ROW_SPLIT" in line)
    assert space_summary(space, 2) == text.split("\n- range edge")[0]
