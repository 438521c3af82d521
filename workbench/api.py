"""The one entry point: ``Workbench(folder)`` -> ``.panel()`` / ``.tune()`` / ``.report()``.

    from workbench.api import Workbench
    wb = Workbench("sample_kernels/silu_and_mul")
    wb.panel()                                   # in a notebook
    report = wb.tune("decode", "bf16", "tpe", budget=64)  # in a script (the same path as
    print(report.summary())                               # the CLI, panel and agent)

A ``Workbench`` holds the kernel folder, the store (``workbench.sqlite`` in the current
directory by default), the runner (``LocalRunner`` when a GPU is present, else a
``ReplayRunner`` over the newest recording) and an event bus the panel listens to.
"""

from __future__ import annotations

import getpass
import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from workbench.core.conditions import DEFAULT_CONDITIONS, PickRule
from workbench.core.errors import RecordingError, ReviewError, WorkbenchError, WriteRefusedError
from workbench.core.events import EventBus, TemplateAdopted, TuneEnded, TuneStarted
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.picks import PickRecord
from workbench.core.records import Status, TrialResult
from workbench.core.write_policy import write_beside
from workbench.engine.tuning import TuneReport
from workbench.search.budget import Budget

DEFAULT_STORE = "workbench.sqlite"
_EXPORT_NAMES = 999  # an export takes <stem>, <stem>-2 ... <stem>-999 before refusing


def newest_recording(folder: Path) -> Path:
    """The newest ``recordings/*.json`` of a kernel folder (by its ``date``, then name).

    A folder's one recording is not read here at all; among several, each date is read
    from the file's head (:func:`~workbench.engine.recording.recording_date`), so only the
    one chosen is parsed, by the runner that replays it."""
    from workbench.engine.recording import recording_date

    files = sorted((folder / "recordings").glob("*.json"))
    if not files:
        raise RecordingError(f"no recording in {folder / 'recordings'}; run on a GPU to record one",
                             folder=str(folder), expected="recordings/<device>-<date>.json")
    if len(files) == 1:
        return files[0]
    return max(files, key=lambda path: (recording_date(path), path.name))


class Workbench:
    """A kernel folder, a store, a runner and an event bus: everything a session needs."""

    def __init__(self, folder: str | Path | KernelFolder, *, store: str | Path | None = None,
                 runner: Any | None = None, reviewer: str | None = None) -> None:
        self.folder: KernelFolder = (folder if isinstance(folder, KernelFolder)
                                     else load_kernel_folder(folder))
        self.kernel_name = self.folder.name
        self.events = EventBus()
        # a postgresql:// URL stays a string (Path would fold its "//")
        self.store_location = (str(store) if store is not None
                               else str(Path.cwd() / DEFAULT_STORE))
        self.store_path = Path(self.store_location)
        self._store: Any | None = None
        self._runner = runner
        self._mode = ""  # "live on ..." / "replay because ..." once choose_runner picked
        self._template = self.folder.template
        self._origin = "curated"
        self._params = list(self.folder.template.params)
        self._search: Any | None = None
        self._search_lock = threading.Lock()
        self._tuning = False  # a tune() call is under way (its search may not exist yet)
        self._stop_requested = False
        self._baselines: dict[tuple[str, str], float | None] = {}
        self._session_id: str | None = None
        self._agent: Any | None = None
        self.reviewer = reviewer or _user()
        # profiles the finalists of 2-D tiled kernels (None: Nsight Compute where present)
        self.profiler: Any | None = None

    # --- parts, created on first use
    @property
    def store(self) -> Any:
        """The store (created on first use): SQLite, or PostgreSQL for a postgresql:// URL."""
        if self._store is None:
            from workbench.store.postgres import open_store

            self._store = open_store(self.store_location)
        return self._store

    @property
    def dashboard_link(self) -> str:
        """The Dask dashboard of the cluster the runner tunes on ("" when it is local)."""
        from workbench.engine.dask_runner import DaskRunner

        runner = self._runner
        return str(runner.client.dashboard_link or "") if isinstance(runner, DaskRunner) else ""

    @property
    def session_id(self) -> str:
        if self._session_id is None:
            self._session_id = self.store.create_session(self.kernel_name).id
        return self._session_id

    @property
    def runner(self) -> Any:
        """LocalRunner when a GPU is present, else ReplayRunner of the newest recording."""
        if self._runner is None:
            self._runner, self._mode = choose_runner(self.folder, self._template)
        return self._runner

    @property
    def runner_description(self) -> str:
        """What measures, for the header and reports: ``"live on <GPU> (timer)"`` or
        ``"replay because <reason> · replay of <recording>"`` (an injected runner: its own
        description)."""
        description = str(self.runner.description)
        if not self._mode or self._mode.startswith("live"):
            return self._mode or description
        return f"{self._mode} · {description}"

    @property
    def replay_problem(self) -> str:
        """Why the runner cannot measure the current template ("" when it can): a replay of
        a recording made from another template text answers every config "not recorded"."""
        from workbench.engine.replay import ReplayRunner

        runner = self.runner
        if not isinstance(runner, ReplayRunner):
            return ""
        recorded = runner.recording.template_sha256
        if recorded == self._template.source_sha256:
            return str(runner.problem)  # the same text: names, entry or launch may differ
        return (f"the replayed recording ({runner.recording.label}) holds template "
                f"{recorded[:12]}, not this one ({self._template.source_sha256[:12]}): a search "
                "here would measure nothing. Tune it on a GPU, or go back to the recorded "
                "template to replay it")

    @property
    def device(self) -> Any:
        """The DeviceSpec searched for (the runner's, or the default H100 table entry)."""
        from workbench.core.hardware import default_device

        try:
            return self.runner.device
        except (WorkbenchError, ImportError):  # no runner yet: plan for the default device
            return default_device()

    @property
    def shape_names(self) -> Sequence[str]:
        return self.folder.shape_names

    @property
    def dtypes(self) -> Sequence[str]:
        return self.folder.dtypes

    @property
    def strategies(self) -> Sequence[str]:
        from workbench.search.strategies import DEFAULT_STRATEGY, strategy_names

        names = list(strategy_names())
        return [DEFAULT_STRATEGY, *[n for n in names if n != DEFAULT_STRATEGY]]

    @property
    def params(self) -> Sequence[Any]:
        return list(self._params)

    @property
    def template(self) -> Any:
        """The current template with the edited parameter ranges."""
        return self._template.with_params(self._params)

    @property
    def template_version(self) -> str:
        """The version id of the template tuned now (its text and ranges: the approval key)."""
        from workbench.store.approval import version_id

        return version_id(self.kernel_name, self.template)

    @property
    def baseline_source(self) -> str:
        return str(self.folder.baseline.source)

    @property
    def template_source(self) -> str:
        return str(self._template.source)

    def set_params(self, params: Sequence[Any]) -> None:
        """Edit ranges; a running search picks them up (``edit_params``)."""
        self._params = list(params)
        with self._search_lock:
            search = self._search
        if search is not None and hasattr(search, "edit_params"):
            search.edit_params(list(params))

    def summarize_space(self, params: Sequence[Any], shape: str, dtype: str) -> Any:
        from workbench.ui.params_editor import summarize_space

        device = self.device
        return summarize_space(self._template, params, self.folder.env(shape, dtype, device),
                               device)

    def check_compile(self, before: Sequence[Any], after: Sequence[Any], shape: str,
                      dtype: str) -> Any:
        """Compile the corner configs an edit of the ranges adds (``ui.edit_check``)."""
        from workbench.ui.edit_check import check_edit

        device = self.device
        return check_edit(self._template, before, after, self.folder.env(shape, dtype, device),
                          dtype, device.arch)

    def baseline_us(self, shape: str, dtype: str) -> float | None:
        """The baseline's median time (None when the runner has none for this shape)."""
        key = (shape, dtype)
        if key not in self._baselines:
            try:
                result = self.runner.baseline(shape, dtype)
                self._baselines[key] = result.median_us if result.status is Status.OK else None
            except RecordingError:
                self._baselines[key] = None
        return self._baselines[key]

    # --- search
    def provenance(self) -> Any:
        """What keys this session's trials: template text hash plus the runner's identity."""
        from workbench.store.base import provenance_for

        return provenance_for(self.runner, self._template)

    def tune(self, shape: str, dtype: str = "bf16", strategy: str = "guided",
             budget: int | Budget | None = 64, *, timeout_s: float | None = None,
             patience: int | None = None, seed: int = 0, batch: int | None = None,
             confirm: int = 5,
             top: int = 5, callbacks: Sequence[Callable[[Any], None]] = (),
             conditions: Sequence[str] | None = None, pick_rule: PickRule | None = None,
             widen: int = 0, widen_budget: int = 40, auto_approve: bool = False,
             l2_profile: bool = True) -> TuneReport:
        """Search ``shape``/``dtype`` on this thread until the budget ends it; the report of
        every stored trial of this template at (shape, dtype), resumed ones included.

        Shaped like Optuna's ``Study.optimize``: ``budget`` counts evaluations (the stored
        ones too, so a re-run resumes; ``None`` = the whole space), ``timeout_s`` bounds the
        wall time, ``callbacks`` see every event while it runs; ``batch`` candidates go to
        the runner at once (default: the runner's, 16 per GPU on a Dask cluster, which
        compiles the next batch while it measures one; else 16). Another thread may call
        :meth:`pause_search`, :meth:`resume_search` or :meth:`stop_search` (the panel does).
        ``confirm=k`` then measures the k fastest configs again on a runner that can (see
        :mod:`workbench.engine.tuning`); a replay leaves a note instead. ``conditions``
        (cache conditions, :data:`workbench.core.conditions.CONDITIONS`; default all of
        them, ``("read",)`` for the search's alone) and ``pick_rule`` make the confirmation
        measure under each and pick by the rule; ``widen=n`` widens
        the ranges the fastest configs sit on the edge of, up to n rounds of
        ``widen_budget`` more evaluations (:mod:`workbench.search.widening`). A proposed or
        range-edited template needs :meth:`review` ``("approved")`` first, unless
        ``auto_approve=True`` is passed explicitly. For a 2-D tiled kernel the finalists'
        L2 hit rates are profiled with :attr:`profiler` (Nsight Compute where present;
        ``l2_profile=False`` skips it) and shown beside their times (``report.l2``)."""
        from workbench.search.tune import TuneRequest, budget_of, tune

        request = TuneRequest(shape=shape, dtype=dtype, strategy=strategy,
                              budget=budget_of(budget, max_wall_s=timeout_s, patience=patience),
                              seed=seed, batch_size=batch, confirm=confirm, top=top,
                              conditions=tuple(conditions) if conditions is not None
                              else DEFAULT_CONDITIONS,
                              pick_rule=pick_rule, widen=widen, widen_budget=widen_budget,
                              auto_approve=auto_approve, l2_profile=l2_profile)
        with self._search_lock:
            if self._tuning:
                raise WorkbenchError("a search is already running; stop it first",
                                     key="search", value="running")
            self._tuning = True
        unsubscribe = [self.events.subscribe(cb) for cb in callbacks]
        version = self.template_version
        ended = TuneEnded(shape, dtype, version, "error")
        self.events.publish(TuneStarted(shape, dtype, strategy,
                                        request.budget.max_evaluations, version))
        try:
            store = self.store  # opened (a write probe) before the runner starts a GPU worker
            report = tune(self.folder, self.template, self.runner, store, request,
                          session_id=self.session_id, events=self.events,
                          on_search=self._hold_search, profiler=self.profiler)
            ended = TuneEnded(shape, dtype, version, str(report.reason))
            if report.widened is not None:
                self._follow_widening(report.widened)
            return report
        except Exception as exc:
            ended = TuneEnded(shape, dtype, version, "error",
                              str(getattr(exc, "message", exc)) or type(exc).__name__)
            raise
        finally:
            for undo in unsubscribe:
                undo()
            with self._search_lock:
                self._search, self._tuning = None, False
            self.events.publish(ended)  # after the search is released: a panel may relaunch

    def _follow_widening(self, widened: Any) -> None:
        """Widening extended ranges inside the tune that just ran (its approval covered the
        widening it asked for): the session's ranges become the widened ones, a new version
        that needs its own review before another tune (the panel's review status says so),
        and views follow them like any other template change."""
        self._params = list(widened.params)
        self.events.publish(TemplateAdopted(self.template_version,
                                            tuple(p.name for p in self._params), "widened"))

    def _hold_search(self, search: Any) -> None:
        with self._search_lock:
            self._search = search
            if self._stop_requested:
                search.stop()
            self._stop_requested = False

    def pause_search(self) -> None:
        """Hold the running search after the trial in flight."""
        if self._search is not None:
            self._search.pause()

    def resume_search(self) -> None:
        if self._search is not None:
            self._search.resume()

    def stop_search(self) -> None:
        """End the running search after the trial in flight (its report still comes back)."""
        with self._search_lock:
            if self._search is not None:
                self._search.stop()
            elif self._tuning:
                self._stop_requested = True

    # --- templates and reviews
    def propose_template(self) -> str:
        """Replace the template by a validated proposal: the LLM when configured, else offline.

        The LLM is configured by WORKBENCH_MODEL, OPENAI_API_KEY and OPENAI_BASE_URL
        (``LLMSettings.from_env``); without them the offline templater lifts the baseline's
        constants. A proposal that fails validation is not adopted; the reasons are raised.
        """
        from workbench.agent import propose_only
        from workbench.core.template import KernelTemplate

        client = None
        note = ""
        try:
            from workbench.llm.client import LLMClient, LLMSettings

            client = LLMClient(LLMSettings.from_env())
        except (WorkbenchError, ImportError) as exc:
            note = f" (LLM not used: {getattr(exc, 'message', exc)})"
        try:
            proposed = propose_only(self.folder, client, device=self.device)
        finally:
            if client is not None:
                client.close()
        if not isinstance(proposed.template, KernelTemplate):
            reasons = proposed.report.messages() if proposed.report else []
            raise WorkbenchError("the proposal failed validation: " + "; ".join(reasons),
                                 reasons=reasons, diff=proposed.diff)
        self._adopt(proposed.template, origin=proposed.origin)
        status = proposed.report.status if proposed.report else "unvalidated"
        who = "the LLM" if proposed.origin == "llm" else f"the offline templater{note}"
        return f"proposed by {who}; validation: {status}"

    def adopt_template(self, template: Any, origin: str = "offline") -> None:
        """Make ``template`` the one this session tunes (a proposal, or a script's own)."""
        self._adopt(template, origin)

    def _adopt(self, template: Any, origin: str = "offline") -> None:
        from workbench.engine.capabilities import TemplateBound

        bound = self._runner.template if isinstance(self._runner, TemplateBound) else None
        if self._runner is not None and bound is not template:
            self._runner.close()  # runners are bound to a template; the next use makes one
            self._runner = None
            self._baselines.clear()
        self._template = template
        self._origin = origin
        self._params = list(template.params)
        self.events.publish(TemplateAdopted(self.template_version,
                                            tuple(p.name for p in self._params), origin))

    def _template_version_id(self) -> str:
        """The current template's version id (edited ranges included), stored once."""
        from workbench.store.approval import ensure_version

        origin = "curated" if self.template.source == self.folder.template.source \
            else self._origin
        return ensure_version(self.store, self.kernel_name, self.template, origin=origin,
                              session_id=self.session_id)

    def review(self, decision: str, note: str = "") -> str:
        """Record an approval or rejection of the current template, ranges included (its
        approval key); a range edit makes a new version that needs its own review."""
        from workbench.store.approval import record_review

        if decision not in ("approved", "rejected"):
            raise ReviewError(f"decision must be 'approved' or 'rejected', got {decision!r}",
                              key="decision", value=decision,
                              expected="'approved' or 'rejected'")
        self._template_version_id()
        review = record_review(self.store, self.kernel_name, self.template, decision,
                               self.reviewer, note, origin=self._origin)
        message = f"{decision} {review.template_version_id} by {self.reviewer}"
        # A folder with no [template] yet (fresh from `workbench init`) gets the approved one
        # written; a folder that has one keeps it until save_template() is called.
        if decision == "approved" and self._template.params and not self.folder.has_template:
            message += "; " + self.save_template()
        return message

    @property
    def template_is_saved(self) -> bool:
        """Is the current template the one the kernel folder's files hold?"""
        return self.folder.has_template and self._template == self.folder.template

    def save_template(self) -> str:
        """Write the current template into the kernel folder (template.cu and the
        ``[template]`` table of kernel.toml; the rest of kernel.toml is kept) and reload it.
        Approving a template (:meth:`review`) calls this when the folder has no template
        yet; call it to replace a folder's existing template."""
        from workbench.core.kernel_folder.write import write_template

        written = write_template(self.folder, self._template)
        runner_template = getattr(self._runner, "template", None)
        self.folder = written.folder
        self._template = written.folder.template
        if self._runner is not None and runner_template is not None:
            self._adopt(self._template, origin=self._origin)
        return f"wrote {written.source_path.name} and the [template] table of kernel.toml"

    def review_status(self) -> str:
        """Whether the template as it is now (ranges included) may be tuned, and why."""
        from workbench.store.approval import CURATED_REVIEWER, require_approved, version_id

        vid = version_id(self.kernel_name, self.template)
        try:
            approval = require_approved(self.store, self.folder, self.template)
        except ReviewError as exc:
            return f"{vid}: {exc.message}"
        if approval.review is None:
            return f"{vid}: the kernel folder's curated template ({CURATED_REVIEWER})"
        last = approval.review
        note = f" ({last.note})" if last.note else ""
        return f"{vid}: {last.decision} by {last.reviewer} at {last.time}{note}"

    def agent_control(self) -> Any:
        """What starts, stops and reviews the agent for this session (the panel's Agent
        tab): :class:`workbench.agent.control.AgentControl` over this folder, store and
        runner, starting from the current template."""
        if self._agent is None:
            from workbench.agent.control import AgentControl

            self._agent = AgentControl(self.folder, runner=lambda: self.runner,
                                       store=self.store, template=lambda: self.template,
                                       reviewer=self.reviewer)
        return self._agent

    def agent_iterations(self) -> Sequence[Any]:
        out: list[Any] = []
        for session in self.store.sessions(self.kernel_name):
            out.extend(self.store.iterations(session.id))
        return out

    # --- results, exports, reports
    def results(self, shape: str, dtype: str) -> list[TrialResult]:
        """Every stored trial of the current template at (shape, dtype) measured by this
        runner, within the current ranges: what the report, charts and exports show."""
        from workbench.search.tune import stored_results

        return stored_results(self.store, self.provenance(), shape, dtype, self.template,
                              self.folder.env(shape, dtype, self.device))

    def pick(self, shape: str, dtype: str) -> PickRecord | None:
        """The answer at (shape, dtype): the newest pick a tune of this template stored for
        this runner's provenance, read from the store (``pick.is_fallback`` is False when a
        confirmation decided it). Without a stored pick, the search's fastest stored trial
        as a fallback (``is_fallback`` True, ``fallback_reason`` saying no pick was stored);
        None with no ok trial. Exports, the report notebook and the panel show this."""
        return self._pick(shape, dtype, None)

    def _pick(self, shape: str, dtype: str,
              results: Sequence[TrialResult] | None) -> PickRecord | None:
        """:meth:`pick`, with the stored trials of (shape, dtype) when already read."""
        from workbench.core.picks import search_best_pick

        stored = self.store.pick(self.provenance(), shape, dtype)
        if stored is not None:
            return stored
        return search_best_pick(self.results(shape, dtype) if results is None else results,
                                kernel=self.kernel_name,
                                template_version=self.template_version,
                                baseline_us=self.baseline_us(shape, dtype))

    def stored_report(self, shape: str, dtype: str, top: int = 5) -> TuneReport:
        """The report of (shape, dtype) from store reads alone, measuring nothing: every
        stored trial of this template within the current ranges, the stored pick and the
        confirmation measurements stored with it (a re-opened session shows the answer its
        tune stored; :func:`workbench.engine.tuning.report_from_store`)."""
        from workbench.engine.tuning import report_from_store

        stored = self.store.pick(self.provenance(), shape, dtype)
        rows = ([r.measurement for r in self.store.confirmations(stored.id)]
                if stored is not None else [])
        return report_from_store(self.kernel_name, shape, dtype, self.runner_description,
                                 self.results(shape, dtype), stored, rows, top=top)

    def export(self, what: str, path: str, shape: str, dtype: str, *,
               overwrite: bool = False) -> str:
        """Write the pick at (shape, dtype) (``header``/``json``: :meth:`pick`, the stored
        decision, or the search's best marked as a fallback), every stored
        trial (``csv``) or a ``report`` notebook, at ``path`` with the kind's suffix.

        Every file goes through the one write policy (symlinks refused, atomic). An existing
        file is replaced only with ``overwrite=True``; otherwise the export takes the first
        free name ``<stem>-2``, ``<stem>-3``, ... (the Export tab's button can be clicked
        again without losing the earlier file), and the answer names the file written."""
        from workbench.store.exports import pick_dict, pick_header
        from workbench.ui.report import results_frame

        if what not in ("header", "json", "csv", "report"):
            raise WorkbenchError(f"unknown export {what!r}", key="export", value=what,
                                 expected="header, json, csv or report")
        results = self.results(shape, dtype)
        self.baseline_us(shape, dtype)
        stem = Path(path)
        if what == "report":
            written = _export_file(stem.with_suffix(".ipynb"), overwrite, lambda target, replace:
                                   self.report(target, results=results, overwrite=replace))
            return f"wrote {written}"
        if what == "csv":
            text = results_frame(results, self._baseline_map()).to_csv(index=False)
            written = _export_file(stem.with_suffix(".csv"), overwrite, lambda target, replace:
                                   write_beside(target, text, overwrite=replace))
            return f"wrote {written} ({len(results)} trials)"
        pick = self._pick(shape, dtype, results)
        if pick is None:
            raise WorkbenchError("no valid trial to export yet; launch a search first",
                                 key="export", value=what)
        if what == "header":
            text, suffix = pick_header(pick), ".h"
        else:
            text = json.dumps(pick_dict(pick), indent=2) + "\n"
            suffix = ".json"
        written = _export_file(stem.with_suffix(suffix), overwrite, lambda target, replace:
                               write_beside(target, text, overwrite=replace))
        return f"wrote {written} ({pick.how()})\n\n{text}"

    def _baseline_map(self) -> dict[str, float]:
        return {f"{s}/{d}": us for (s, d), us in self._baselines.items() if us is not None}

    def report(self, path: str | Path = "report.ipynb",
               results: Sequence[TrialResult] | None = None, *,
               overwrite: bool = False) -> Path:
        """Write a static report notebook (diff, ranges, approvals, charts, results table);
        ``results`` defaults to every stored trial of this template at every shape/dtype. An
        existing file is replaced only with ``overwrite=True``."""
        from workbench.ui.report import ReportContent, write_report

        trials = (list(results) if results is not None else
                  [r for s in self.shape_names for d in self.dtypes for r in self.results(s, d)])
        reviews: list[dict[str, Any]] = []
        try:
            for rv in self.store.reviews(self._template_version_id()):
                reviews.append({"decision": rv.decision, "reviewer": rv.reviewer, "time": rv.time,
                                "note": rv.note, "approved_text_sha256": rv.approved_text_sha256})
        except WorkbenchError:
            pass
        try:
            device = self.runner_description
        except WorkbenchError as exc:
            device = f"(no runner: {exc.message})"
        picks = []
        for shape, dtype in dict.fromkeys((r.shape, r.dtype) for r in trials):
            try:
                answer = self._pick(shape, dtype, [r for r in trials
                                                   if r.shape == shape and r.dtype == dtype])
            except WorkbenchError:
                answer = None
            if answer is not None:
                picks.append(answer)
        content = ReportContent(
            picks=tuple(picks),
            kernel=self.kernel_name, device=device, baseline_source=self.baseline_source,
            template_source=self.template_source,
            params=[{"name": p.name, **p.to_dict()} for p in self._params],
            constraints=[c.text for c in self._template.constraints], reviews=reviews,
            results=trials, baseline_us=self._baseline_map())
        return write_report(path, content, overwrite=overwrite)

    def panel(self) -> Any:
        """The JupyterLab panel (one ipywidgets tree around one run view: charts, progress,
        trial table)."""
        from workbench.ui.panel import WorkbenchPanel

        self._panel = WorkbenchPanel(self)
        return self._panel.widget


def select_runner(folder: KernelFolder, template: Any | None = None) -> Any:
    """LocalRunner if a GPU is usable here, else a ReplayRunner of the newest recording."""
    return choose_runner(folder, template)[0]


def choose_runner(folder: KernelFolder, template: Any | None = None) -> tuple[Any, str]:
    """(runner, mode): a LocalRunner and ``"live on <GPU>"`` when a GPU is usable here,
    else a ReplayRunner of the newest recording and ``"replay because <reason>"``.

    The reason is :func:`~workbench.engine.discovery.no_live_reason`'s, stated before any
    worker starts (no driver or device is named as such, never as a missing pycuda); only a
    worker that fails after every probe passed gives its own words."""
    from workbench.core.errors import NoGPUError
    from workbench.core.settings import workbench_settings
    from workbench.engine.open import open_runner
    from workbench.engine.runner import REPLAY_HINT

    try:
        live = open_runner(folder, template)
        shown = str(live.description).replace("(live, ", "(").replace(" (live)", "")
        return live, f"live on {shown}"
    except NoGPUError as exc:
        no_live = exc.details.get("no_live")  # stated before any worker started
        reason = (no_live.text if no_live is not None
                  else exc.message.split("; " + REPLAY_HINT)[0])
    pace = workbench_settings().replay_pace  # "recorded": the GPU's pace
    replay = open_runner(folder, template, replay=newest_recording(Path(folder.path)),
                         pace=pace)
    return replay, f"replay because {reason}"


def _export_file(target: Path, overwrite: bool,
                 write: Callable[[Path, bool], Path]) -> Path:
    """``write(path, overwrite)`` at ``target``, or (without ``overwrite``) at the first free
    name ``<stem>-N<suffix>``; a name taken meanwhile by another writer is skipped, any other
    refusal (a symlinked folder) is raised."""
    if overwrite:
        return write(target, True)
    for n in range(1, _EXPORT_NAMES + 1):
        candidate = target if n == 1 else target.with_name(f"{target.stem}-{n}{target.suffix}")
        if os.path.lexists(candidate):
            continue
        try:
            return write(candidate, False)
        except WriteRefusedError:
            if os.path.lexists(candidate):  # another writer took it first: try the next name
                continue
            raise
    raise WriteRefusedError(f"refused to write {target}: {target.stem}-2 to -{_EXPORT_NAMES} "
                            "are taken too; choose another file stem", path=str(target),
                            root=str(target.parent), reason="no free name")


def open(path: str | Path, **kwargs: Any) -> Any:
    """``Workbench(path, **kwargs).panel()``: the panel for a kernel folder."""
    return Workbench(path, **kwargs).panel()


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"

