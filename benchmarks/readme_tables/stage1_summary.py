"""Where stage 1 stands over the whole corpus (issue 28): one row per kernel from its latest
measurement, the first measurement's ratio beside it (the unseen number, for a kernel of a
held-back set), and the issue's targets checked from those rows.

Pure functions over loaded result docs of benchmarks/stage1_corpus.py (``set``,
``environment``, ``kernels``); readme_tables/registry.py passes them in. A record marked
``skipped`` was never measured and is left out; a record whose templater route wrote no
template (or whose kernel errored) is a measurement and can be a kernel's latest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from readme_tables import core  # puts the repository on sys.path for workbench
from workbench.core.records import Status

#: The issue's targets: compute-bound/tiled kernels' templater / expert, each and their
#: geometric mean; memory-bound kernels' templater route as % of a copy of the same bytes.
RATIO_FLOOR = 0.80
GEOMEAN_FLOOR = 0.90
COPY_FLOOR_PCT = 90.0
#: A set named ``unseenN`` is benchmarks/corpus_compute_unseenN, held back from the
#: templater's authors until its first measurement.
HELD_BACK_PREFIX = "unseen"
#: What stage1_corpus.bench_pair records: a templater route that wrote nothing, and a
#: route left out by ``--routes`` (such a run checks one side; it is no pair measurement).
NO_TEMPLATE = "propose --write wrote no template: "
ROUTE_NOT_RUN = "route not run (--routes)"
GATE = re.compile(r"^(?P<verdict>correct|wrong) at (?P<count>\d+/\d+) configs checked")
RUN_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{6}Z)?$")


class ResultDoc(Protocol):
    """What the registry hands over per file (its ``Result``): path, run block, data."""

    @property
    def rel(self) -> str: ...

    @property
    def run(self) -> dict[str, Any]: ...

    @property
    def doc(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Measurement:
    """One kernel's record in one results file, reduced to what the summary shows."""

    set_name: str
    kernel: str
    file: str
    measured_at: datetime | None
    memory_bound: bool | None
    speedup_templater: float | None
    speedup_expert: float | None
    ratio: float | None
    templater_pct_of_copy: float | None
    expert_pct_of_copy: float | None
    gate: str
    written: bool
    #: The templater tune's statuses other than ok, by name (pruned included).
    not_ok: tuple[tuple[str, int], ...]

    @property
    def held_back(self) -> bool:
        return self.set_name.startswith(HELD_BACK_PREFIX)

    @property
    def wrong_configs(self) -> int:
        """Configs the templater's tune found failing (a pruned config is not wrong)."""
        return sum(n for status, n in self.not_ok if Status(status).is_failure)


@dataclass(frozen=True)
class KernelRow:
    """A kernel's latest measurement and its first one."""

    latest: Measurement
    first: Measurement
    memory_bound: bool | None

    @property
    def first_is_unseen(self) -> bool:
        return self.first.held_back


@dataclass(frozen=True)
class Target:
    """One of the issue's targets, checked: its wording, whether it holds, the numbers."""

    name: str
    met: bool
    detail: str


@dataclass(frozen=True)
class Summary:
    rows: tuple[KernelRow, ...]
    targets: tuple[Target, ...]


def measured_at(run: Mapping[str, Any], doc: Mapping[str, Any]) -> datetime | None:
    """The file's environment.date; a file without one falls back to its run block's stamp
    (``YYYY-MM-DD`` or ``YYYY-MM-DDThhmmssZ``)."""
    env_date = (doc.get("environment") or {}).get("date")
    if env_date:
        return datetime.fromisoformat(env_date).astimezone(UTC)
    stamp = run.get("date")
    if not isinstance(stamp, str) or not RUN_STAMP.match(stamp):
        return None
    fmt = "%Y-%m-%dT%H%M%SZ" if "T" in stamp else "%Y-%m-%d"
    return datetime.strptime(stamp, fmt).replace(tzinfo=UTC)


def short_gate(record: Mapping[str, Any]) -> str:
    """The gate's verdict in a few words, or why there was no template / no measurement."""
    if "error" in record:
        return "error: " + _clip(str(record["error"]))
    templater = record.get("templater") or {}
    gate = (templater.get("propose") or {}).get("gate")
    m = GATE.match(gate or "")
    verdict = f"{m['count']} {m['verdict']}" if m else gate
    error = str(templater.get("error") or "")
    if error.startswith(NO_TEMPLATE):
        reason = (error[len(NO_TEMPLATE):].strip().removeprefix("error: ")
                  .removeprefix("the offline templater ").split(": ", 1)[0])
        return "no template" + (f" ({verdict})" if verdict else "") + ": " + _clip(reason)
    if error:
        return f"{verdict or '—'}; tune: " + _clip(error)
    return verdict or "—"


def _clip(text: str, chars: int = 60) -> str:
    """One table cell's worth of text: no pipes or backticks, at most ``chars`` long."""
    text = " ".join(text.split()).replace("|", "/").replace("`", "'")
    return text if len(text) <= chars else text[:chars - 1].rstrip() + "…"


def measurement(result: ResultDoc, record: Mapping[str, Any]) -> Measurement:
    """One kernel record of one file (one that ``is_measurement``)."""
    templater = record.get("templater") or {}
    tune_b = templater.get("tune") or {}
    tune_c = (record.get("expert") or {}).get("tune") or {}
    propose = templater.get("propose") or {}
    return Measurement(
        set_name=str(result.doc.get("set")), kernel=str(record["kernel"]),
        file=result.rel, measured_at=measured_at(result.run, result.doc),
        memory_bound=record.get("memory_bound"),
        speedup_templater=record.get("speedup_templater"),
        speedup_expert=record.get("speedup_expert"),
        ratio=record.get("ratio_templater_to_expert"),
        templater_pct_of_copy=tune_b.get("best_pct_of_copy"),
        expert_pct_of_copy=tune_c.get("best_pct_of_copy"),
        gate=short_gate(record), written=bool(propose.get("written", bool(tune_b))),
        not_ok=tuple(sorted((s, n) for s, n in (tune_b.get("statuses") or {}).items()
                            if s != Status.OK.value and n)))


def is_measurement(record: Mapping[str, Any]) -> bool:
    """Both routes ran on this kernel (or it errored trying): not skipped, no route left out."""
    routes = (record.get("templater") or {}, record.get("expert") or {})
    return "skipped" not in record and all(r.get("error") != ROUTE_NOT_RUN for r in routes)


def measurements(results: Iterable[ResultDoc]) -> list[Measurement]:
    """Every measured kernel record of every file (see ``is_measurement``)."""
    return [measurement(r, record) for r in results for record in r.doc.get("kernels", [])
            if is_measurement(record)]


def _when(m: Measurement) -> tuple[bool, datetime, str]:
    # undated files sort first; ties by file name, so the order never depends on input order
    return (m.measured_at is not None, m.measured_at or datetime.min.replace(tzinfo=UTC),
            m.file)


def kernel_rows(found: Sequence[Measurement]) -> tuple[KernelRow, ...]:
    """One row per (set, kernel): its latest and first measurements by date."""
    by_kernel: dict[tuple[str, str], list[Measurement]] = {}
    for m in found:
        by_kernel.setdefault((m.set_name, m.kernel), []).append(m)
    rows = []
    for key in sorted(by_kernel, key=_set_order):
        ordered = sorted(by_kernel[key], key=_when)
        bound = next((m.memory_bound for m in reversed(ordered) if m.memory_bound is not None),
                     None)
        rows.append(KernelRow(latest=ordered[-1], first=ordered[0], memory_bound=bound))
    return tuple(rows)


def _set_order(key: tuple[str, str]) -> tuple[bool, int, str, str]:
    set_name, kernel = key
    return (set_name.startswith(HELD_BACK_PREFIX), len(set_name), set_name, kernel)


def geomean(values: Sequence[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _ratio_targets(rows: Sequence[KernelRow], pick: str, label: str) -> list[Target]:
    """Each compute-bound/tiled kernel's ratio >= the floor, and their geometric mean."""
    compute = [(row.latest.kernel, getattr(row, pick).ratio) for row in rows
               if row.memory_bound is False]
    below = [f"{k} {_fmt(r)}" for k, r in compute if r is None or r < RATIO_FLOOR]
    ratios = [r for _, r in compute if r is not None]
    mean = geomean(ratios)
    return [
        Target(f"every compute-bound/tiled kernel's templater / expert ≥ {RATIO_FLOOR:.2f} "
               f"({label})", bool(compute) and not below,
               f"{len(compute) - len(below)} of {len(compute)} at or above"
               + (f"; below: {', '.join(below)}" if below else "")),
        Target(f"geometric mean over compute-bound/tiled ≥ {GEOMEAN_FLOOR:.2f} ({label})",
               mean is not None and mean >= GEOMEAN_FLOOR,
               f"{_fmt(mean)} over {len(ratios)} kernels"),
    ]


def _copy_target(rows: Sequence[KernelRow]) -> Target:
    """Memory-bound kernels: the templater route's best as % of a copy, latest runs."""
    memory = [row.latest for row in rows if row.memory_bound]
    short = [f"{m.kernel} {_pct(m.templater_pct_of_copy)}" for m in memory
             if (m.templater_pct_of_copy or 0.0) < COPY_FLOOR_PCT]
    return Target(f"memory-bound kernels ≥ {COPY_FLOOR_PCT:.0f} % of copy (templater route, "
                  "latest)", bool(memory) and not short,
                  f"{len(memory) - len(short)} of {len(memory)} at or above"
                  + (f"; below: {', '.join(short)}" if short else ""))


def _wrong_target(rows: Sequence[KernelRow]) -> Target:
    """No failing config in the latest tune of any template the templater wrote."""
    written = [row.latest for row in rows if row.latest.written]
    wrong = [f"{m.kernel} {m.wrong_configs}" for m in written if m.wrong_configs]
    return Target("0 wrong configs in any written template (latest tunes)", not wrong,
                  f"{len(written)} written templates; "
                  + (f"wrong configs in: {', '.join(wrong)}" if wrong else "none wrong"))


def targets(rows: Sequence[KernelRow]) -> tuple[Target, ...]:
    """The issue's targets from the latest rows, then the ratio targets over the first
    measurements of held-back kernels (taken while they were unseen)."""
    unseen = [row for row in rows if row.first_is_unseen]
    return (*_ratio_targets(rows, "latest", "latest"), _copy_target(rows),
            _wrong_target(rows),
            *_ratio_targets(unseen, "first", "first measurements of held-back kernels, "
                            "unseen"))


def summarise(results: Iterable[ResultDoc]) -> Summary:
    rows = kernel_rows(measurements(results))
    return Summary(rows=rows, targets=targets(rows))


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} %"


def _bound(flag: bool | None) -> str:
    return "—" if flag is None else "memory" if flag else "compute/tiled"


def _row_cells(row: KernelRow) -> list[Any]:
    m, first = row.latest, row.first
    copy = (f"{_pct(m.templater_pct_of_copy)}, {_pct(m.expert_pct_of_copy)}"
            if row.memory_bound else "")
    wrong = ", ".join(f"{n} {status}" for status, n in m.not_ok)
    first_cell = (_fmt(first.ratio) + (" (unseen)" if row.first_is_unseen else "")
                  + (f", `{first.file}`" if first != m else ", the same run"))
    when = m.measured_at.strftime("%Y-%m-%d %H:%M") if m.measured_at else "—"
    return [m.set_name, m.kernel, _bound(row.memory_bound), when, _fmt(m.speedup_templater),
            _fmt(m.speedup_expert), _fmt(m.ratio), copy, m.gate, wrong, first_cell,
            f"`{m.file}`"]


def markdown(summary: Summary) -> str:
    """The summary table, then the targets, for the top of the stage 1 section."""
    headers = ["set", "kernel", "bound", "measured (UTC)", "templater ×", "expert ×",
               "templater / expert", "% of copy: templater, expert", "gate (propose)",
               "tune: not ok", "first measurement's ratio", "latest file"]
    lines = [f"- {t.name}: **{'met' if t.met else 'not met'}** — {t.detail}"
             for t in summary.targets]
    return ("Where the corpus stands: one row per kernel, from its latest measurement (by "
            "the file's environment date; a kernel a run skipped, or ran one route of, is not "
            "measured there; a templater that wrote no template counts as 1×). The first "
            "measurement's ratio is the kernel's earliest run; (unseen) marks a kernel of a "
            "held-back set (benchmarks/corpus_compute_unseen*), whose first run was taken "
            "while the set was kept from the templater's authors. Each file is drawn in full "
            "below.\n\n"
            + core.table(headers, [_row_cells(row) for row in summary.rows])
            + "\n\nIssue 28's targets, from the rows above:\n\n" + "\n".join(lines))


def render(results: Sequence[ResultDoc]) -> str:
    """The registry's entry point: every stage 1 results file in, Markdown out."""
    return markdown(summarise(results))
