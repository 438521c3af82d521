"""What the gpu_checks/*_probe.py scripts share: named configs of a template timed in one
LocalRunner run (the runner the stage-1 benchmark's tunes use) next to the kernel as written,
one row each, and the document's speedups, printout and exit status. Each probe keeps only
its kernel folder, its configs and the shape of its document.

A group (``timed``'s first answer) maps each label to a row (``config``, ``status``,
``reason``, ``median_us``, ``rse_median_pct``, ``regs``, ``spill_bytes``, ``speedup``), a config
outside the template's space to ``{"config", "status": "outside the space", "reason"}`` and
one the runner gave back no result for to ``{"config", "status": "missing", "median_us":
None}``; beside them ``baseline`` (when asked for), ``copy_us`` (when asked for), ``device``
and ``timer``. benchmarks/readme_tables/registry.py ``_stage1_probe`` reads these groups.

``--dry`` on a probe's command line lifts and checks its configs against the space on the
host, without a GPU (:func:`dry_run`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, Config, Status, TrialResult  # noqa: E402
from workbench.core.template import KernelTemplate  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402
from workbench.templater import offline_template  # noqa: E402

#: A row's status for a named config the template's space rejects.
OUTSIDE = "outside the space"
#: A row's status for a named config the runner gave back no result for.
MISSING = "missing"

Row = dict[str, Any]
Named = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Probe:
    """One template of one kernel folder, to be timed at one shape and dtype."""

    folder: KernelFolder
    template: KernelTemplate
    shape: str
    dtype: str

    def configs(self, named: Named) -> dict[str, Config]:
        """Each named config over the template's defaults."""
        default = dict(self.template.default_config())
        return {label: Config({**default, **c}) for label, c in named.items()}

    def rejections(self, named: Named) -> dict[str, str | None]:
        """Why each named config is outside the template's space at this shape, or None."""
        space = self.template.space(self.folder.env(self.shape, self.dtype))
        return {label: space.rejection(c) for label, c in self.configs(named).items()}


def lifted(folder: KernelFolder, shape: str, dtype: str) -> Probe:
    """The offline templater's lift of ``folder``."""
    return Probe(folder, offline_template(folder).template, shape, dtype)


def lift_and_expert(path: Path, shape: str, dtype: str) -> tuple[Probe, Probe]:
    """The lift of the kernel folder at ``path`` and the expert template of its ``expert``
    folder."""
    expert = load_kernel_folder(path / "expert")
    return lifted(load_kernel_folder(path), shape, dtype), \
        Probe(expert, expert.template, shape, dtype)


def trial_row(result: TrialResult, base_us: float | None) -> Row:
    """A runner's result as a row, its speedup over ``base_us`` (the kernel as written)."""
    t = result.timing
    median = t.median_us if t is not None else None
    usage = result.usage
    return {"config": dict(result.config), "status": result.status.value,
            "reason": result.reason[:300], "median_us": median,
            "rse_median_pct": t.rse_median_pct if t is not None else None,
            "regs": usage.regs_per_thread if usage is not None else None,
            "spill_bytes": (usage.spill_store_bytes + usage.spill_load_bytes)
            if usage is not None else None,
            "speedup": base_us / median if base_us and median else None}


def _measured(runner: LocalRunner, probe: Probe, inside: dict[str, Config],
              base_us: float | None) -> dict[str, Row]:
    """Rows of the configs inside the space, matched to the runner's results by value."""
    results = list(runner.measure([Candidate(c, probe.shape, probe.dtype)
                                   for c in inside.values()]))
    out: dict[str, Row] = {}
    for label, config in inside.items():
        match = next((r for r in results if dict(r.config) == dict(config)), None)
        out[label] = trial_row(match, base_us) if match is not None else \
            {"config": dict(config), "status": MISSING, "median_us": None}
    return out


def timed(probe: Probe, named: Named, *, base: bool,
          copy: bool = False) -> tuple[dict[str, Any], float | None]:
    """(group, the kernel as written's median when ``base``): the named configs timed in one
    run; with ``base`` the kernel as written too (row ``baseline``), with ``copy`` the time
    of a copy of the bytes (``copy_us``)."""
    out: dict[str, Any] = {}
    with LocalRunner(probe.folder, probe.template) as runner:
        base_us = None
        if base:
            b = runner.baseline(probe.shape, probe.dtype)
            base_us = b.timing.median_us if b.timing is not None else None
            out["baseline"] = trial_row(b, base_us)
        if copy:
            out["copy_us"] = runner.copy_timing(probe.shape, probe.dtype).timing.median_us
        full, why = probe.configs(named), probe.rejections(named)
        for label, reason in why.items():
            if reason is not None:
                out[label] = {"config": dict(full[label]), "status": OUTSIDE, "reason": reason}
        inside = {label: c for label, c in full.items() if why[label] is None}
        out.update(_measured(runner, probe, inside, base_us))
        out["device"] = runner.device.name
        out["timer"] = runner.timer_note
    return out, base_us


def rows(group: Mapping[str, Any]) -> dict[str, Row]:
    """A group's rows (the entries that carry a status)."""
    return {k: v for k, v in group.items() if isinstance(v, dict) and "status" in v}


def add_speedups(groups: Iterable[Mapping[str, Any]], base_us: float | None) -> None:
    """Each timed row's speedup over ``base_us`` (a group timed without the kernel as
    written, the expert's, takes the lift's)."""
    for group in groups:
        for r in rows(group).values():
            if r.get("median_us") and base_us:
                r["speedup"] = base_us / r["median_us"]


def report(groups: Mapping[str, Mapping[str, Any]]) -> int:
    """Print each group's rows; 0 when every row is ok, else 1."""
    width = max((len(label) for g in groups.values() for label in rows(g)), default=0)
    for name, group in groups.items():
        for label, r in rows(group).items():
            print(f"{name:7s} {label:{width}s} {r['status']:7s} {r.get('median_us')} us "
                  f"x{r.get('speedup') or 0:.2f} regs {r.get('regs')} "
                  f"spill {r.get('spill_bytes')}")
    ok = Status.OK.value
    return 0 if all(r["status"] == ok for g in groups.values() for r in rows(g).values()) \
        else 1


def dry(argv: list[str]) -> bool:
    """Whether the probe was asked for its host-only check (``--dry``)."""
    return "--dry" in argv[1:]


def dry_run(groups: Mapping[str, tuple[Probe, Named]]) -> int:
    """The host-only check: each group's knobs and each named config's place in the space
    (no GPU); 0 when every config is inside, else 1."""
    bad = 0
    for name, (probe, named) in groups.items():
        print(f"{name}: {probe.folder.name} knobs {list(probe.template.param_names)}")
        for label, reason in probe.rejections(named).items():
            bad += reason is not None
            print(f"  {label}: {'inside' if reason is None else OUTSIDE + ': ' + reason}")
    return 1 if bad else 0


def finish(doc: Mapping[str, Any], groups: Mapping[str, dict[str, Any]],
           base_us: float | None, name: str, **dumps: Any) -> int:
    """Each group's speedups over ``base_us``, ``doc`` written to ``$OUT/name`` (``dumps``:
    json.dumps's options), the rows printed; the exit status :func:`report` gives."""
    add_speedups(groups.values(), base_us)
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / name).write_text(json.dumps(doc, indent=1, **dumps))
    return report(groups)
