"""Start, stop and review the agent from another thread (the panel's Agent tab).

:class:`AgentControl` drives the agent's one loop (:class:`~workbench.agent.machine.AgentMachine`
and its :class:`~workbench.agent.records.LoopState`) on the thread that calls :meth:`run`
(the panel's worker thread); :meth:`stop`, :meth:`approve` and :meth:`reject` may be called
from any other. It adds no loop of its own: a pause for review returns from :meth:`run`,
and :meth:`resume` runs the same machine on.

Without an LLM endpoint (``WORKBENCH_MODEL`` and ``OPENAI_API_KEY``, see
:meth:`~workbench.llm.settings.LLMSettings.from_env`) the machine plans offline and the
offline templater writes templates; :attr:`AgentControl.llm_description` says which, and why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.agent.machine import AgentMachine
from workbench.agent.records import AgentConfig, AgentError, AgentOutcome
from workbench.core.errors import WorkbenchError
from workbench.core.events import EventBus
from workbench.core.kernel_folder import KernelFolder
from workbench.search.budget import Budget


@dataclass(frozen=True)
class AgentRequest:
    """What the Agent tab starts: the problem, the iteration and per-tune budgets."""

    shape: str
    dtype: str
    iterations: int = 3
    evaluations_per_tune: int = 16
    strategy: str = "guided"
    auto_approve: bool = False
    allow_unverified: bool = False
    llm_calls: int = 12


def llm_from_env() -> tuple[Any | None, str]:
    """``(client, description)``: an LLM client when the environment configures one, else
    ``None`` and why the offline planner and templater will be used instead."""
    try:
        from workbench.llm.client import LLMClient, LLMSettings

        settings = LLMSettings.from_env()
    except (WorkbenchError, ImportError) as exc:
        why = getattr(exc, "message", str(exc))
        return None, f"offline planner and templater (no LLM endpoint configured: {why})"
    where = settings.base_url or "the OpenAI API"
    return LLMClient(settings), f"LLM {settings.model} at {where}"


class AgentControl:
    """One agent run at a time over a session's folder, runner and store.

    ``runner`` and ``template`` are read when a run starts (the session's current ones);
    ``client_factory`` makes the LLM client (default :func:`llm_from_env`). Agent events go
    to :attr:`events`, a bus of their own, so the agent's trials of other template versions
    never reach the search charts.
    """

    def __init__(self, folder: KernelFolder, *, runner: Callable[[], Any], store: Any,
                 template: Callable[[], Any], reviewer: str,
                 client_factory: Callable[[], tuple[Any | None, str]] = llm_from_env) -> None:
        self.folder = folder
        self._runner = runner
        self._store = store
        self._template = template
        self.reviewer = reviewer
        self._client_factory = client_factory
        self.events = EventBus()
        self._lock = threading.Lock()
        self._machine: AgentMachine | None = None
        self._client: Any | None = None
        self._running = False
        self.llm_description = ""
        self.last_outcome: AgentOutcome | None = None

    @property
    def running(self) -> bool:
        """A :meth:`run` or :meth:`resume` call is under way."""
        return self._running

    @property
    def waiting_for_review(self) -> bool:
        """The last run paused on a template version that needs a decision."""
        return self.last_outcome is not None and self.last_outcome.waiting_for_review

    def run(self, request: AgentRequest) -> AgentOutcome:
        """Start a new agent session and step it on this thread until it ends or pauses."""
        self._claim()
        try:
            self._close_client()
            client, self.llm_description = self._client_factory()
            self._client = client
            config = AgentConfig(
                iterations=request.iterations, llm_calls=request.llm_calls,
                auto_approve=request.auto_approve, allow_unverified=request.allow_unverified,
                strategy=request.strategy,
                budget=Budget(max_evaluations=request.evaluations_per_tune),
                shape=request.shape, dtype=request.dtype, reviewer=self.reviewer)
            machine = AgentMachine(self.folder, runner=self._runner(), store=self._store,
                                   config=config, client=client, events=self.events,
                                   initial_template=self._template())
            with self._lock:
                self._machine = machine
            return self._step(machine)
        finally:
            self._running = False

    def resume(self) -> AgentOutcome:
        """Run the paused machine on after :meth:`approve` or :meth:`reject`."""
        machine = self._machine
        if machine is None or not self.waiting_for_review:
            raise AgentError("no agent run waits for a review", key="agent", value="idle")
        self._claim()
        try:
            return self._step(machine)
        finally:
            self._running = False

    def _claim(self) -> None:
        with self._lock:
            if self._running:
                raise AgentError("the agent is already running; stop it first", key="agent",
                                 value="running")
            self._running = True

    def _step(self, machine: AgentMachine) -> AgentOutcome:
        try:
            outcome = machine.run()
        finally:
            if machine.state.value in ("done", "failed"):
                machine.close()
                self._close_client()
        self.last_outcome = outcome
        return outcome

    def stop(self) -> None:
        """End the run after the trial in flight (any thread); a paused run ends at once."""
        with self._lock:
            machine = self._machine
        if machine is None:
            return
        machine.stop()
        if not self._running and self.waiting_for_review:
            self.last_outcome = machine.run()  # the stop is seen before any step: no work
            self._close_client()

    def approve(self, note: str = "") -> str:
        """Approve the template version the agent waits on (its exact text)."""
        return self._decide("approved", note)

    def reject(self, note: str = "") -> str:
        """Reject the template version the agent waits on; it goes on without it."""
        return self._decide("rejected", note)

    def _decide(self, decision: str, note: str) -> str:
        machine = self._machine
        if machine is None or not self.waiting_for_review or self._running:
            raise AgentError("no template version waits for your review", key="agent",
                             value="running" if self._running else "idle")
        pending = machine.loop.pending.id if machine.loop.pending else "?"
        if decision == "approved":
            machine.approve(self.reviewer, note)
        else:
            machine.reject(self.reviewer, note)
        return f"{decision} {pending} by {self.reviewer}"

    def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()
