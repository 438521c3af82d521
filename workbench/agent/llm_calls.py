"""The LLM-call budget, and storing every call: a thin proxy in front of an LLM client.

The agent never hands the raw client to a step. Every ``chat`` goes through
:class:`BudgetedClient`, which refuses a call once ``max_calls`` calls were made (raising
:class:`LLMCallBudgetError` *before* any request is sent) and stores each call, reply or
error, in the session's ``llm_calls`` (the store scrubs credentials).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from workbench.core.errors import LLMError
from workbench.llm.errors import LLMBudgetError
from workbench.store.base import Store, TokenUsage

if TYPE_CHECKING:
    from workbench.llm.client import ChatReply, LLMClient

ModelT = TypeVar("ModelT", bound=BaseModel)


class LLMCallBudgetError(LLMBudgetError):
    """The agent's LLM-call budget is spent: ``used_calls`` of ``budget_calls``."""

    def __init__(self, used_calls: int, budget_calls: int, purpose: str) -> None:
        super().__init__(f"LLM-call budget spent: {used_calls} of {budget_calls} calls made; "
                         f"not sending the {purpose or 'next'} request",
                         used_calls=used_calls, budget_calls=budget_calls, purpose=purpose)
        self.used_calls = used_calls
        self.budget_calls = budget_calls


def llm_failure_reason(exc: LLMError, step: str, iteration: int) -> str:
    """Why the agent stopped on an LLM error, for people: an endpoint that could not be
    reached is named as such, with its URL and the last error, and so is the iteration whose
    ``step`` it stopped (that iteration measured nothing)."""
    where = f"the {step} step of iteration {iteration}"
    url = exc.details.get("url")
    problem = exc.details.get("problem") or exc.message
    attempts = exc.details.get("attempts")
    tries = f" after {attempts} attempt(s)" if attempts else ""
    if url and exc.details.get("unreachable"):
        return (f"the LLM endpoint {url} could not be reached{tries} ({problem}) during "
                f"{where}; iteration {iteration} measured nothing")
    if url:
        return (f"the LLM endpoint {url} failed{tries} ({problem}) during {where}; "
                f"iteration {iteration} measured nothing")
    return f"LLM failed during {where}: {exc.message}"


class BudgetedClient:
    """``chat``/``complete``/``parse_reply`` of an :class:`LLMClient`, budgeted and stored."""

    def __init__(self, client: LLMClient, max_calls: int, store: Store, session_id: str) -> None:
        self.client = client
        self.max_calls = max_calls
        self.store = store
        self.session_id = session_id
        self.calls_made = 0

    @property
    def calls_left(self) -> int:
        return max(0, self.max_calls - self.calls_made)

    def start_stage(self) -> None:
        """A new stage (plan, generate): its requests share the stage deadline from now."""
        self.client.start_stage()

    def _request(self, messages: Sequence[Mapping[str, str]], schema: type[BaseModel] | None,
                 purpose: str) -> dict[str, Any]:
        return {"purpose": purpose, "model": self.client.settings.model,
                "schema": schema.__name__ if schema is not None else None,
                "messages": [dict(m) for m in messages]}

    def chat(self, messages: Sequence[Mapping[str, str]], *,
             schema: type[BaseModel] | None = None, purpose: str = "") -> ChatReply:
        """One budgeted call; LLMCallBudgetError when none is left (nothing is sent)."""
        if self.calls_made >= self.max_calls:
            raise LLMCallBudgetError(self.calls_made, self.max_calls, purpose)
        self.calls_made += 1
        request = self._request(messages, schema, purpose)
        try:
            reply = self.client.chat(messages, schema=schema, purpose=purpose)
        except LLMError as exc:
            details = {k: v for k, v in exc.details.items() if k != "raw_reply"}
            error = {"error": type(exc).__name__, "message": exc.message,
                     "raw_reply": str(exc.details.get("raw_reply", ""))[:20000],
                     "details": json.loads(json.dumps(details, default=str))}
            self.store.record_llm_call(self.session_id, request, json.dumps(error),
                                       TokenUsage())
            raise
        self.store.record_llm_call(
            self.session_id, request, reply.text,
            TokenUsage(reply.prompt_tokens, reply.completion_tokens,
                       reply.prompt_tokens + reply.completion_tokens))
        return reply

    def parse_reply(self, text: str, schema: type[ModelT]) -> ModelT:
        """Validate a reply's text (no call is made)."""
        return self.client.parse_reply(text, schema)

    def complete(self, messages: Sequence[Mapping[str, str]], schema: type[ModelT], *,
                 purpose: str = "") -> ModelT:
        """One budgeted call whose reply must match ``schema``."""
        reply = self.chat(messages, schema=schema, purpose=purpose)
        return self.parse_reply(reply.text, schema)
