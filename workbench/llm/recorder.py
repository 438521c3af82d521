"""Keeping every LLM request and raw reply in the store (scrubbed), for ``workbench propose``
and anything else that talks to an endpoint outside the agent.

:class:`StoreRecorder` is an :class:`~workbench.llm.client.LLMClient` ``recorder``: the
client hands it each request, then that attempt's reply (the raw HTTP body, whatever its
status) or error; each attempt becomes one ``llm_calls`` row whose request is the request
event and whose reply text is the raw body or the error. The client has already scrubbed
both; the store scrubs again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from workbench.store.base import Store, TokenUsage


def _usage(body: str) -> TokenUsage:
    try:
        usage = json.loads(body).get("usage") or {}
        prompt, completion = int(usage.get("prompt_tokens", 0)), int(
            usage.get("completion_tokens", 0))
    except (ValueError, TypeError, AttributeError, RecursionError):
        return TokenUsage()
    return TokenUsage(prompt, completion, prompt + completion)


class StoreRecorder:
    """Write each request/reply pair of one session to ``store`` as it happens."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.rows = 0
        self._pending: dict[tuple[str, int], Mapping[str, Any]] = {}

    def __call__(self, event: Mapping[str, Any]) -> None:
        key = (str(event.get("purpose", "")), int(event.get("attempt", 0) or 0))
        if event.get("event") == "request":
            self._pending[key] = dict(event)
            return
        request = self._pending.pop(key, {"event": "request", "purpose": key[0],
                                          "attempt": key[1]})
        if event.get("event") == "reply":
            body = str(event.get("body", ""))
            reply = body
            usage = _usage(body) if event.get("status") == 200 else TokenUsage()
        else:
            reply = json.dumps({"error": str(event.get("error", ""))})
            usage = TokenUsage()
        self.store.record_llm_call(self.session_id, {**request, "reply_status":
                                                     event.get("status")}, reply, usage)
        self.rows += 1
