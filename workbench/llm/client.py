"""The LLM client: the official ``openai`` SDK behind our own retry loop and checks.

One :class:`LLMClient` per session. It asks for JSON-schema structured output, falls back
to a tolerant parser when the endpoint refuses ``response_format`` or answers in prose,
counts tokens (:class:`UsageCounter`) and hands every request and raw reply to a
``recorder`` callback with the API key scrubbed.

Retries (429, 408/409, 5xx, timeouts, dropped connections) use exponential backoff and
honour ``Retry-After``; the SDK's own retries are off (``max_retries=0``) so that there is
exactly one retry policy, and ``sleep`` and ``clock`` are injectable so tests never wait.

Time is bounded twice: each ``chat`` (connect, reply streaming and every retry) must end
within ``timeout_s`` of its start, and every request of a stage (:meth:`LLMClient.start_stage`;
the client's life until the first call) within ``stage_timeout_s`` of the stage's start. A
Retry-After or backoff that would pass the deadline ends the request at once, and a reply
that drips past the deadline is cut (:mod:`workbench.llm.transport`). Defaults: 120 s per
request, 600 s per stage; ``--llm-timeout`` / ``WORKBENCH_LLM_TIMEOUT`` and
``WORKBENCH_LLM_STAGE_TIMEOUT`` change them.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from workbench.core.secrets import register_key_environment, scrub_data
from workbench.llm.errors import (
    LLMConfigError,
    LLMEndpointError,
    LLMError,
    LLMRefusalError,
    LLMReplyError,
    LLMSchemaError,
    LLMTimeoutError,
    LLMTruncatedError,
    scrub_text,
)
from workbench.llm.parsing import parse_json_object
from workbench.llm.schemas import response_format_for
from workbench.llm.settings import (
    DEFAULT_STAGE_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    STAGE_TIMEOUT_ENV,
    TIMEOUT_ENV,
    LLMSettings,
    Usage,
    UsageCounter,
)
from workbench.llm.transport import (
    Clock,
    ReplyTooLargeError,
    deadline_scope,
    http_client,
    monotonic,
    read_completion,
    retry_after_s,
)

log = logging.getLogger("workbench.llm")

ModelT = TypeVar("ModelT", bound=BaseModel)
Message = Mapping[str, str]
Recorder = Callable[[Mapping[str, Any]], None]

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
__all__ = ["DEFAULT_STAGE_TIMEOUT_S", "DEFAULT_TIMEOUT_S", "STAGE_TIMEOUT_ENV", "TIMEOUT_ENV",
           "ChatClient", "ChatReply", "LLMClient", "LLMSettings", "Usage", "UsageCounter"]
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


class _ResponseFormatRejectedError(LLMError):
    """Internal: the endpoint answered 400 about response_format / json_schema."""

    def __init__(self) -> None:
        super().__init__("the endpoint refused response_format (json_schema)")


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
                 usage: UsageCounter | None = None, clock: Clock = monotonic) -> None:
        import openai  # the `llm` extra; imported here so `workbench.llm` loads without it

        if not settings.model:
            raise LLMConfigError("no model configured", missing="model")
        self.settings = settings
        self.usage = usage if usage is not None else UsageCounter()
        self._recorder = recorder
        self._sleep = sleep
        self._clock = clock
        self._stage_started = clock()
        self._openai_mod = openai
        register_key_environment()
        # A local endpoint may need no key; the SDK insists on one, so send a placeholder.
        self._openai = openai.OpenAI(api_key=settings.api_key or "unset",
                                     base_url=settings.base_url, timeout=settings.timeout_s,
                                     max_retries=0,
                                     http_client=http_client(settings.max_reply_bytes))
        self._json_schema_ok = settings.structured_output

    @classmethod
    def from_env(cls, **kwargs: Any) -> LLMClient:
        """A client configured from the environment (see :meth:`LLMSettings.from_env`)."""
        return cls(LLMSettings.from_env(), **kwargs)

    def __repr__(self) -> str:
        return f"LLMClient({self.settings!r})"

    def close(self) -> None:
        self._openai.close()

    def start_stage(self) -> None:
        """Start a new stage: its requests share ``stage_timeout_s`` from now."""
        self._stage_started = self._clock()

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
        """One completion (with retries); with ``schema``, ask for JSON-schema output first.

        The whole call, retries and fallback included, ends by its deadline (see the module
        docstring) or raises LLMTimeoutError saying which deadline passed.
        """
        deadline = self._deadline()
        if schema is not None and self._json_schema_ok:
            try:
                return self._chat_once(messages, response_format_for(schema), purpose,
                                       deadline)
            except _ResponseFormatRejectedError:
                log.warning("endpoint refused response_format=json_schema; "
                            "falling back to prose replies and the tolerant parser")
                self._json_schema_ok = False
        msgs = list(messages)
        if schema is not None:
            msgs.append({"role": "user", "content": _schema_instruction(schema)})
        return self._chat_once(msgs, None, purpose, deadline)  # never "rejected"

    def _deadline(self) -> tuple[float, str]:
        """When the next call must end, and which limit that is (in words)."""
        request_end = self._clock() + self.settings.timeout_s
        stage_end = self._stage_started + self.settings.stage_timeout_s
        if stage_end < request_end:
            return stage_end, f"the stage deadline of {self.settings.stage_timeout_s:g} s"
        return request_end, f"the request deadline of {self.settings.timeout_s:g} s"

    def parse_reply(self, text: str, schema: type[ModelT]) -> ModelT:
        """Read and validate ``schema`` from a reply's text (strict JSON, then tolerant).

        Every string of the object (and every key) is scrubbed of configured keys once
        decoded, so a key spelled with JSON escapes cannot reach a template either."""
        secrets = (self.settings.api_key,) if self.settings.api_key else ()
        text = scrub_text(text, secrets)
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except (ValueError, RecursionError):
            data = parse_json_object(text)
        data = scrub_data(data, secrets)
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
            return retry_after
        return min(self.settings.backoff_max_s,
                   self.settings.backoff_initial_s * 2 ** (attempt - 1))

    def _chat_once(self, messages: Sequence[Message], response_format: dict[str, Any] | None,
                   purpose: str, deadline: tuple[float, str]) -> ChatReply:
        openai = self._openai_mod
        kwargs = self._request_kwargs(messages, response_format)
        url = str(self._openai.base_url).rstrip("/") + "/chat/completions"
        attempts = self.settings.max_attempts
        ends_at, limit = deadline
        last_problem = ""
        last_status: int | None = None
        timed_out = False
        unreachable = False  # the last attempt could not connect (no HTTP answer at all)
        attempt = 0
        while attempt < attempts:
            attempt += 1
            self.usage.check_budget()
            remaining = ends_at - self._clock()
            if remaining <= 0:
                timed_out = True
                attempt -= 1  # not sent
                last_problem = (f"{last_problem}; " if last_problem else "") + \
                    f"{limit} passed before attempt {attempt + 1} could be sent"
                break
            self._record({"event": "request", "purpose": purpose, "attempt": attempt,
                          "method": "POST", "url": url,
                          "body": kwargs})
            retry_after: float | None = None
            attempt_ends = ends_at
            if self.settings.attempt_timeout_s is not None:
                attempt_ends = min(ends_at, self._clock() + self.settings.attempt_timeout_s)
            try:
                with deadline_scope(attempt_ends, self._clock):
                    raw = self._openai.chat.completions.with_raw_response.create(
                        **kwargs, timeout=attempt_ends - self._clock())
                    body = raw.text  # read inside the scope: a dripping body is cut
            except openai.APITimeoutError:
                timed_out = True
                unreachable = False
                last_status = None
                last_problem = (f"no complete reply within {limit}" if attempt_ends == ends_at
                                else f"no complete reply within the attempt limit of "
                                     f"{self.settings.attempt_timeout_s:g} s")
                self._record({"event": "error", "purpose": purpose, "attempt": attempt,
                              "error": last_problem})
            except openai.APIStatusError as exc:
                timed_out = False
                unreachable = False
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
                        status=status, attempts=attempt, body=self._scrub(body)[:2000],
                        url=url, problem=last_problem) from None
                retry_after = retry_after_s(dict(exc.response.headers))
            except openai.APIConnectionError as exc:
                if isinstance(exc.__cause__, ReplyTooLargeError):
                    self._record({"event": "error", "purpose": purpose, "attempt": attempt,
                                  "error": str(exc.__cause__)})
                    raise LLMReplyError(
                        f"{url} sent a reply larger than {self.settings.max_reply_bytes} "
                        "bytes; it was cut there and not used", raw_reply="",
                        limit_bytes=self.settings.max_reply_bytes) from None
                timed_out = False
                unreachable = True
                last_status = None
                last_problem = f"connection failed ({type(exc).__name__}: {self._scrub(str(exc))})"
                self._record({"event": "error", "purpose": purpose, "attempt": attempt,
                              "error": last_problem})
            else:
                self._record({"event": "reply", "purpose": purpose, "attempt": attempt,
                              "status": raw.status_code, "headers": dict(raw.headers),
                              "request_headers": dict(raw.http_request.headers),
                              "body": body})
                return self._check_completion(body, raw.headers.get("content-type", ""),
                                              response_format is not None)
            if attempt < attempts:
                delay = self._backoff_s(attempt, retry_after)
                left = ends_at - self._clock()
                if delay >= left:
                    timed_out = True
                    last_problem += (f"; the endpoint asked to retry after {delay:g} s"
                                     if retry_after is not None else
                                     f"; the next retry (in {delay:g} s)")
                    last_problem += f" would pass {limit} ({max(left, 0.0):.1f} s left)"
                    break
                log.warning("LLM request %s attempt %d/%d failed: %s; retrying in %.2f s",
                            purpose or "(chat)", attempt, attempts, last_problem, delay)
                self._sleep(delay)
        cls = LLMTimeoutError if timed_out else LLMEndpointError
        raise cls(f"{url} failed after {attempt} attempt(s); last: {last_problem}",
                  status=last_status, attempts=attempt, timeout_s=self.settings.timeout_s,
                  stage_timeout_s=self.settings.stage_timeout_s, url=url, problem=last_problem,
                  unreachable=unreachable)

    def _check_completion(self, body: str, content_type: str, structured: bool) -> ChatReply:
        completion = read_completion(body, content_type)
        self.usage.add(completion.prompt_tokens, completion.completion_tokens)
        text = completion.content
        if completion.refusal:
            raise LLMRefusalError(f"the model refused: {completion.refusal}",
                                  raw_reply=completion.refusal)
        if completion.finish_reason == "length":
            raise LLMTruncatedError(
                f"the reply was cut off at the token limit after "
                f"{completion.completion_tokens} tokens (finish_reason=length); raise "
                "max_output_tokens or shorten the prompt", raw_reply=text)
        if completion.finish_reason == "content_filter":
            raise LLMRefusalError("the reply was withheld by the content filter",
                                  raw_reply=text)
        if not text.strip():
            raise LLMReplyError("the reply is empty", raw_reply=body[:20000])
        return ChatReply(text=text, finish_reason=completion.finish_reason,
                         model=completion.model, prompt_tokens=completion.prompt_tokens,
                         completion_tokens=completion.completion_tokens, structured=structured)


def _schema_instruction(schema: type[BaseModel]) -> str:
    return ("Answer with exactly one JSON object, and nothing else, matching this JSON schema:\n"
            + json.dumps(schema.model_json_schema(), indent=1, sort_keys=True))
