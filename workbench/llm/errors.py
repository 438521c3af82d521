"""LLM-specific errors, all under :class:`workbench.core.errors.LLMError`.

    LLMError
    ├── LLMConfigError        no model / key / endpoint configured
    ├── LLMBudgetError        the session's token budget is spent
    ├── LLMEndpointError      the endpoint failed (HTTP status, attempts made)
    │   └── LLMTimeoutError   no answer within the client timeout
    └── LLMReplyError         the endpoint answered but the reply is unusable (``raw_reply``)
        ├── LLMRefusalError   the model refused (message.refusal)
        ├── LLMTruncatedError finish_reason == "length"
        ├── LLMInvalidJSONError no JSON object could be read from the reply
        └── LLMSchemaError    JSON read, but it does not match the expected schema

Messages never contain the API key: every message passes through :func:`scrub_text`.
"""

from __future__ import annotations

from typing import Any

from workbench.core.errors import LLMError
from workbench.core.secrets import scrub


def scrub_text(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` without ``secrets``, any registered key (:mod:`workbench.core.secrets`) and
    anything that looks like a bearer token or an ``sk-`` key."""
    return scrub(text, secrets)


class LLMConfigError(LLMError):
    """The client cannot be configured (``missing`` names the setting)."""


class LLMBudgetError(LLMError):
    """The session's token budget is spent (``used_tokens`` of ``budget_tokens``)."""


class LLMEndpointError(LLMError):
    """The endpoint failed: ``status`` (None for network failures), ``attempts`` made.

    ``details`` also carry ``url`` (the request's), ``problem`` (the last attempt's) and
    ``unreachable`` (True when the last attempt could not connect at all).
    """

    def __init__(self, message: str, *, status: int | None, attempts: int, **details: Any) -> None:
        super().__init__(message, status=status, attempts=attempts, **details)
        self.status = status
        self.attempts = attempts


class LLMTimeoutError(LLMEndpointError):
    """No answer came back within the client timeout (``timeout_s``)."""


class LLMReplyError(LLMError):
    """The reply is unusable. ``raw_reply`` is the model's text (or the raw HTTP body)."""

    def __init__(self, message: str, *, raw_reply: str, **details: Any) -> None:
        raw_reply = scrub(raw_reply)
        super().__init__(message, raw_reply=raw_reply, **details)
        self.raw_reply = raw_reply


class LLMRefusalError(LLMReplyError):
    """The model refused the request; ``raw_reply`` holds the refusal text."""


class LLMTruncatedError(LLMReplyError):
    """The reply was cut off at the token limit (finish_reason == "length")."""


class LLMInvalidJSONError(LLMReplyError):
    """No JSON object could be read from the reply."""


class LLMSchemaError(LLMReplyError):
    """The reply's JSON does not match the schema; ``errors`` lists pydantic's complaints."""

    def __init__(self, message: str, *, raw_reply: str, errors: list[str], **details: Any) -> None:
        super().__init__(message, raw_reply=raw_reply, errors=errors, **details)
        self.errors = errors
