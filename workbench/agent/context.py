"""What the planner and the generator are told: the hardware-aware prompt context, the
session's history, and the deterministic offline plan used when no LLM endpoint is set.

Numbers in the context are measured ones only (the runner's results, its copy timing,
ptxas usage and occupancy, optional Nsight Compute metrics); nothing is estimated here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench.core.cache_profile import L2Profile
from workbench.core.edges import RangeEdge
from workbench.core.hardware import DeviceSpec
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Config, Status, TrialResult
from workbench.core.space import SearchSpace
from workbench.llm.prompts import Iteration, Measurement, PromptContext
from workbench.llm.schemas import NextAction, Plan


@dataclass(frozen=True)
class IterationSummary:
    """One finished (or cut-short) iteration as the prompts' history shows it."""

    index: int
    action: str
    summary: str
    result: str
    template_sha256: str = ""

    def as_prompt_iteration(self) -> Iteration:
        return Iteration(self.index, self.action, self.summary, self.result,
                         self.template_sha256)


def measurement(folder: KernelFolder, shape: str, dtype: str, *, baseline_us: float | None,
                best: TrialResult | None, copy_gb_per_s: float | None,
                ncu_metrics: Mapping[str, float | str] | None = None,
                l2: L2Profile | None = None) -> Measurement:
    """The prompt's view of the current best at (shape, dtype)."""
    ok = best is not None and best.status is Status.OK
    return Measurement(
        shape=shape, dtype=dtype, sizes=folder.shape_values(shape),
        bytes_moved=folder.bytes_moved_for(shape, dtype), baseline_median_us=baseline_us,
        best_median_us=best.median_us if ok and best is not None else None,
        best_config=dict(best.config) if ok and best is not None else None,
        copy_gb_per_s=copy_gb_per_s,
        usage=best.usage if best is not None else None,
        occupancy=best.occupancy if best is not None else None,
        ncu_metrics=dict(ncu_metrics) if ncu_metrics else None, l2=l2)


def prompt_context(device: DeviceSpec, measurements: Sequence[Measurement],
                   history: Sequence[IterationSummary]) -> PromptContext:
    """A PromptContext from the runner's device, the measurements and the history."""
    return PromptContext(device=device, measurements=tuple(measurements),
                         history=tuple(h.as_prompt_iteration() for h in history))


def space_summary(space: SearchSpace, measured: int,
                  edges: Sequence[RangeEdge] = ()) -> str:
    """A few lines on the current space for the plan prompt, with the range edges the last
    tune's fastest configs sat on: a choice's next value is not invented by widening, so
    the model is asked whether the template should offer more."""
    lines = [f"{space.size} feasible configs ({space.raw_size} before constraints); "
             f"{measured} measured so far"]
    for text, count in sorted(space.rejections_by_constraint().items()):
        if count:
            lines.append(f"- constraint `{text}` rejects {count} raw points")
    for edge in edges:
        ask = (" (an explicit choice: propose the values to add, if the kernel allows them)"
               if edge.kind == "choice" else "")
        lines.append(f"- range edge: {edge.describe()}{ask}")
    return "\n".join(lines)


def offline_plan(space: SearchSpace, measured: Sequence[Config], best: TrialResult | None,
                 limit: int) -> Plan:
    """The deterministic plan without an LLM: tune the neighbours of the best, else any
    unmeasured config (in the space's order); stop when every config is measured."""
    done = set(measured)
    neighbours = ([c for c in space.neighbours(best.config) if c not in done]
                  if best is not None and best.config in space else [])
    remaining = space.size - sum(1 for c in done if c in space)
    if remaining <= 0:
        return Plan(diagnosis=f"offline planner: all {space.size} configs are measured",
                    next_action=NextAction.STOP)
    best_text = (f"best {best.median_us:.2f} us at {dict(best.config)}"
                 if best is not None and best.median_us is not None else "no valid config yet")
    picks = neighbours[:limit]
    return Plan(
        diagnosis=(f"offline planner (no LLM endpoint): {best_text}; {len(done)} of "
                   f"{space.size} configs measured"),
        hypotheses=(["a neighbour of the best (one parameter one step away) may be faster"]
                    if picks else []),
        next_action=NextAction.TUNE_MORE,
        configs_to_enqueue=[dict(c) for c in picks])
