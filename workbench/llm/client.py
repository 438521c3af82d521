"""The LLM client: the official ``openai`` SDK behind our own retry loop and checks.

One :class:`LLMClient` per session. It asks for JSON-schema structured output, falls back
to a tolerant parser when the endpoint refuses ``response_format`` or answers in prose,
counts tokens (:class:`UsageCounter`) and hands every request and raw reply to a
``recorder`` callback with the API key scrubbed.

Retries (429, 408/409, 5xx, timeouts, dropped connections) use exponential backoff and
honour ``Retry-After``; the SDK's own retries are off (``max_retries=0``) so that there is
exactly one retry policy, and ``sleep`` is injectable so tests never wait.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from workbench.llm.errors import (
    LLMBudgetError,
    LLMConfigError,
    LLMEndpointError,
    LLMInvalidJSONError,
    LLMRefusalError,
    LLMReplyError,
    LLMSchemaError,
    LLMTimeoutError,
    LLMTruncatedError,
    scrub_text,
)
from workbench.llm.parsing import parse_json_object
from workbench.llm.schemas import response_format_for

log = logging.getLogger("workbench.llm")

ModelT = TypeVar("ModelT", bound=BaseModel)
Message = Mapping[str, str]
Recorder = Callable[[Mapping[str, Any]], None]

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 120.0


@dataclass(frozen=True, repr=False)
class LLMSettings:
    """Where and how to call the model. ``repr`` never shows the key.

    ``timeout_s`` is per HTTP request; ``max_attempts`` counts the first try.
    """

    model: str
    api_key: str = field(default="", repr=False)
    base_url: str | None = None
    timeout_s: float = 120.0
    max_attempts: int = 4
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0
    temperature: float | None = None
    max_output_tokens: int | None = None
    structured_output: bool = True

    def __repr__(self) -> str:
        key = "<set>" if self.api_key else "<unset>"
        return (f"LLMSettings(model={self.model!r}, base_url={self.base_url!r}, api_key={key}, "
                f"timeout_s={self.timeout_s}, max_attempts={self.max_attempts}, "
                f"structured_output={self.structured_output})")

    __str__ = __repr__

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> LLMSettings:
        """Settings from OPENAI_API_KEY, OPENAI_BASE_URL and WORKBENCH_MODEL; ``overrides`` win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {
            "model": env.get("WORKBENCH_MODEL", ""),
            "api_key": env.get("OPENAI_API_KEY", ""),
            "base_url": env.get("OPENAI_BASE_URL") or None,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        if not values["model"]:
            raise LLMConfigError("no model configured: set WORKBENCH_MODEL or pass model=...",
                                 missing="model")
        if not values["api_key"]:
            raise LLMConfigError("no API key configured: set OPENAI_API_KEY or pass api_key=...",
                                 missing="api_key")
        return cls(**values)


@dataclass(frozen=True)
class Usage:
    """Token counts of a session so far."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class UsageCounter:
    """Thread-safe token counter for one session, with an optional token budget."""

    def __init__(self, budget_tokens: int | None = None) -> None:
        self.budget_tokens = budget_tokens
        self._lock = threading.Lock()
        self._usage = Usage()

    @property
    def usage(self) -> Usage:
        with self._lock:
            return self._usage

    def add(self, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            u = self._usage
            self._usage = Usage(u.requests + 1, u.prompt_tokens + prompt_tokens,
                                u.completion_tokens + completion_tokens)

    def check_budget(self) -> None:
        """Raise :class:`LLMBudgetError` when the budget is already spent."""
        used = self.usage.total_tokens
        if self.budget_tokens is not None and used >= self.budget_tokens:
            raise LLMBudgetError(f"token budget spent: {used} of {self.budget_tokens} tokens used",
                                 used_tokens=used, budget_tokens=self.budget_tokens)


@dataclass(frozen=True)
class ChatReply:
    """One usable completion: the message text and how it ended."""

    text: str
    finish_reason: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    structured: bool  # True when it came back under a json_schema response_format


class ChatClient(Protocol):
    """What prompts-driven helpers need of a client: :class:`LLMClient` or a wrapper of it
    (e.g. the agent's budgeted client)."""

    def chat(self, messages: Sequence[Message], *, schema: type[BaseModel] | None = None,
             purpose: str = "") -> ChatReply: ...

    def parse_reply(self, text: str, schema: type[ModelT]) -> ModelT: ...


class _ResponseFormatRejectedError(Exception):
    """Internal: the endpoint answered 400 about response_format / json_schema."""


def _retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return max(0.0, (parsed - datetime.now(UTC)).total_seconds())


class LLMClient:
    """Chat completions with structured output, retries, usage counting and recording.

    ``recorder`` receives one dict per event, already scrubbed of the API key and of
    Authorization headers, each with ``time_utc``, ``event``, ``purpose`` and ``attempt``:

    * ``{"event": "request", "method": "POST", "url": ..., "body": {model, messages, ...}}``
    * ``{"event": "reply", "status": 200, "headers": {...}, "request_headers": {...},
      "body": "<raw HTTP body>"}`` (also for HTTP errors)
    * ``{"event": "error", "error": "no reply within 30 s"}`` (timeouts, dropped connections)

    >>> client = LLMClient(LLMSettings.from_env())            # doctest: +SKIP
    >>> plan = client.complete(messages, Plan, purpose="plan")  # doctest: +SKIP
    """

    def __init__(self, settings: LLMSettings, *, recorder: Recorder | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 usage: UsageCounter | None = None) -> None:
        import openai  # the `llm` extra; imported here so `workbench.llm` loads without it

        if not settings.model:
            raise LLMConfigError("no model configured", missing="model")
        self.settings = settings
        self.usage = usage if usage is not None else UsageCounter()
        self._recorder = recorder
        self._sleep = sleep
        self._openai_mod = openai
        # A local endpoint may need no key; the SDK insists on one, so send a placeholder.
        self._openai = openai.OpenAI(api_key=settings.api_key or "unset",
                                     base_url=settings.base_url, timeout=settings.timeout_s,
                                     max_retries=0)
        self._json_schema_ok = settings.structured_output

    @classmethod
    def from_env(cls, **kwargs: Any) -> LLMClient:
        """A client configured from the environment (see :meth:`LLMSettings.from_env`)."""
        return cls(LLMSettings.from_env(), **kwargs)

    def __repr__(self) -> str:
        return f"LLMClient({self.settings!r})"

    def close(self) -> None:
        self._openai.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public API --------------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], schema: type[ModelT], *,
                 purpose: str = "") -> ModelT:
        """Ask for one JSON object matching ``schema`` and return it validated.

        Raises LLMEndpointError / LLMTimeoutError (endpoint), LLMRefusalError,
        LLMTruncatedError, LLMInvalidJSONError, LLMSchemaError (reply; ``raw_reply`` attached)
        or LLMBudgetError.
        """
        reply = self.chat(messages, schema=schema, purpose=purpose)
        return self.parse_reply(reply.text, schema)

    def chat(self, messages: Sequence[Message], *, schema: type[BaseModel] | None = None,
             purpose: str = "") -> ChatReply:
        """One completion (with retries); with ``schema``, ask for JSON-schema output first."""
        if schema is not None and self._json_schema_ok:
            try:
                return self._chat_once(messages, response_format_for(schema), purpose)
            except _ResponseFormatRejectedError:
                log.warning("endpoint refused response_format=json_schema; "
                            "falling back to prose replies and the tolerant parser")
                self._json_schema_ok = False
        msgs = list(messages)
        if schema is not None:
            msgs.append({"role": "user", "content": _schema_instruction(schema)})
        return self._chat_once(msgs, None, purpose)  # no response_format: never "rejected"

    def parse_reply(self, text: str, schema: type[ModelT]) -> ModelT:
        """Read and validate ``schema`` from a reply's text (strict JSON, then tolerant)."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except ValueError:
            data = parse_json_object(text)
        try:
            return schema.model_validate(data)
        except ValidationError as exc:
            errors = [f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}"
                      for e in exc.errors()]
            raise LLMSchemaError(
                f"the reply does not match {schema.__name__}: " + "; ".join(errors[:8]),
                raw_reply=text, errors=errors) from None

    # -- internals -----------------------------------------------------------------------------

    def _scrub(self, value: Any) -> Any:
        secrets = (self.settings.api_key,) if self.settings.api_key else ()
        if isinstance(value, str):
            return scrub_text(value, secrets)
        if isinstance(value, Mapping):
            return {k: ("***" if str(k).lower() in ("authorization", "api-key", "x-api-key")
                        else self._scrub(v)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._scrub(v) for v in value]
        return value

    def _record(self, event: dict[str, Any]) -> None:
        if self._recorder is None:
            return
        event = {"time_utc": datetime.now(UTC).isoformat(timespec="milliseconds"), **event}
        self._recorder(self._scrub(event))

    def _request_kwargs(self, messages: Sequence[Message],
                        response_format: dict[str, Any] | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.settings.model,
                                  "messages": [dict(m) for m in messages]}
        if response_format is not None:
            kwargs["response_format"] = response_format
        if self.settings.temperature is not None:
            kwargs["temperature"] = self.settings.temperature
        if self.settings.max_output_tokens is not None:
            kwargs["max_completion_tokens"] = self.settings.max_output_tokens
        return kwargs

    def _backoff_s(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, _MAX_RETRY_AFTER_S)
        return min(self.settings.backoff_max_s,
                   self.settings.backoff_initial_s * 2 ** (attempt - 1))

    def _chat_once(self, messages: Sequence[Message], response_format: dict[str, Any] | None,
                   purpose: str) -> ChatReply:
        openai = self._openai_mod
        kwargs = self._request_kwargs(messages, response_format)
        url = str(self._openai.base_url).rstrip("/") + "/chat/completions"
        attempts = self.settings.max_attempts
        last_problem = ""
        last_status: int | None = None
        timed_out = False
        for attempt in range(1, attempts + 1):
            self.usage.check_budget()
            self._record({"event": "request", "purpose": purpose, "attempt": attempt,
                          "method": "POST", "url": url,
                          "body": kwargs})
            retry_after: float | None = None
            try:
                raw = self._openai.chat.completions.with_raw_response.create(**kwargs)
            except openai.APITimeoutError:
                timed_out = True
                last_status = None
                last_problem = f"no reply within {self.settings.timeout_s:g} s"
                self._record({"event": "error", "purpose": purpose, "attempt": attempt,
                              "error": last_problem})
            except openai.APIStatusError as exc:
                timed_out = False
                status = exc.status_code
                body = exc.response.text
                self._record({"event": "reply", "purpose": purpose, "attempt": attempt,
                              "status": status, "headers": dict(exc.response.headers),
                              "request_headers": dict(exc.request.headers), "body": body})
                low = body.lower()
                if (status == 400 and response_format is not None
                        and ("response_format" in low or "json_schema" in low)):
                    raise _ResponseFormatRejectedError() from None
                last_status = status
                last_problem = f"HTTP {status}: {self._scrub(body)[:300]}"
                if status not in RETRYABLE_STATUS:
                    raise LLMEndpointError(
                        f"{url} answered {last_problem} (not retried)",
                        status=status, attempts=attempt, body=self._scrub(body)[:2000]) from None
                retry_after = _retry_after_s(dict(exc.response.headers))
            except openai.APIConnectionError as exc:
                timed_out = False
                last_status = None
                last_problem = f"connection failed ({type(exc).__name__}: {self._scrub(str(exc))})"
                self._record({"event": "error", "purpose": purpose, "attempt": attempt,
                              "error": last_problem})
            else:
                body = raw.text
                self._record({"event": "reply", "purpose": purpose, "attempt": attempt,
                              "status": raw.status_code, "headers": dict(raw.headers),
                              "request_headers": dict(raw.http_request.headers),
                              "body": body})
                return self._check_completion(raw.parse(), body, response_format is not None)
            if attempt < attempts:
                delay = self._backoff_s(attempt, retry_after)
                log.warning("LLM request %s attempt %d/%d failed: %s; retrying in %.2f s",
                            purpose or "(chat)", attempt, attempts, last_problem, delay)
                self._sleep(delay)
        cls = LLMTimeoutError if timed_out else LLMEndpointError
        raise cls(f"{url} failed after {attempts} attempt(s); last: {last_problem}",
                  status=last_status, attempts=attempts, timeout_s=self.settings.timeout_s)

    def _check_completion(self, completion: Any, body: str, structured: bool) -> ChatReply:
        usage = getattr(completion, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        self.usage.add(prompt_tokens, completion_tokens)
        if not completion.choices:
            raise LLMInvalidJSONError("the reply has no choices", raw_reply=body)
        choice = completion.choices[0]
        message = choice.message
        text = message.content or ""
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise LLMRefusalError(f"the model refused: {refusal}", raw_reply=refusal)
        if choice.finish_reason == "length":
            raise LLMTruncatedError(
                f"the reply was cut off at the token limit after {completion_tokens} tokens "
                f"(finish_reason=length); raise max_output_tokens or shorten the prompt",
                raw_reply=text)
        if choice.finish_reason == "content_filter":
            raise LLMRefusalError("the reply was withheld by the content filter",
                                  raw_reply=text)
        if not text.strip():
            raise LLMReplyError("the reply is empty", raw_reply=body)
        return ChatReply(text=text, finish_reason=str(choice.finish_reason),
                         model=str(completion.model), prompt_tokens=prompt_tokens,
                         completion_tokens=completion_tokens, structured=structured)


def _schema_instruction(schema: type[BaseModel]) -> str:
    return ("Answer with exactly one JSON object, and nothing else, matching this JSON schema:\n"
            + json.dumps(schema.model_json_schema(), indent=1, sort_keys=True))
