"""The HTTP edge of the LLM client: deadlines, reply size, Retry-After and the body's shape.

The SDK's ``timeout`` bounds each network read, so an endpoint that drips one byte every few
seconds never trips it. :func:`http_client` gives the SDK a transport (built on whichever
httpx the SDK uses) whose the response body
is read through a stream that raises ``httpx.ReadTimeout`` once the request's deadline has
passed (checked on every chunk) and ``ReplyTooLargeError`` past ``max_reply_bytes``. The
deadline is per thread (:func:`deadline_scope`), set by the client around each attempt.
Replies are asked for and read uncompressed (a gzip bomb cannot grow past the cap).

:func:`read_completion` reads a chat.completion from the raw body with our own checks, so a
200 reply of HTML, malformed or deeply nested JSON, or a wrong shape is an
:class:`~workbench.llm.errors.LLMInvalidJSONError` naming what was wrong, never an
AttributeError from deep inside the SDK. The message's text leaves it scrubbed of every
configured key (:func:`workbench.core.secrets.scrub`): endpoint text enters the workbench here.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from workbench.core.secrets import scrub
from workbench.llm.errors import LLMError, LLMInvalidJSONError

Clock = Callable[[], float]
_state = threading.local()


class ReplyTooLargeError(LLMError):
    """The reply body passed ``max_reply_bytes`` (the read is cut there); the SDK wraps it
    in an APIConnectionError whose ``__cause__`` this is."""


class DeadlinePassedError(LLMError):
    """This thread's request deadline passed (before sending or while the reply arrived);
    raised as the SDK's httpx ReadTimeout, so the SDK reports a timeout."""


@contextlib.contextmanager
def deadline_scope(deadline: float, clock: Clock) -> Iterator[None]:
    """Requests sent by this thread inside the block must finish by ``deadline``."""
    previous = getattr(_state, "deadline", None)
    _state.deadline = (deadline, clock)
    try:
        yield
    finally:
        _state.deadline = previous


def _sdk_httpx() -> ModuleType:
    """The httpx module the installed openai SDK is built on (``httpx`` or ``httpx2``)."""
    import openai

    for base in type.mro(openai.DefaultHttpxClient)[1:]:
        root = base.__module__.split(".")[0]
        if root.startswith("httpx"):
            return sys.modules[root]
    raise ImportError("cannot tell which httpx the openai SDK uses")


@functools.cache
def _transport_class() -> type:
    """:class:`DeadlineTransport` for the SDK's httpx (built once, on first use)."""
    hx = _sdk_httpx()

    class ReplyTooLarge(hx.ReadError, ReplyTooLargeError):  # type: ignore[name-defined]
        pass

    class DeadlinePassed(hx.ReadTimeout, DeadlinePassedError):  # type: ignore[name-defined]
        pass

    class DeadlineStream(hx.SyncByteStream):  # type: ignore[name-defined]
        def __init__(self, inner: Any, request: Any, deadline: tuple[float, Clock] | None,
                     max_bytes: int) -> None:
            self._inner, self._request = inner, request
            self._deadline, self._max_bytes = deadline, max_bytes

        def __iter__(self) -> Iterator[bytes]:
            received = 0
            for chunk in self._inner:
                received += len(chunk)
                if received > self._max_bytes:
                    raise ReplyTooLarge(f"reply larger than {self._max_bytes} bytes",
                                        request=self._request)
                if self._deadline is not None and self._deadline[1]() > self._deadline[0]:
                    raise DeadlinePassed("deadline passed while the reply was arriving",
                                         request=self._request)
                yield chunk

        def close(self) -> None:
            self._inner.close()

    class DeadlineTransport(hx.BaseTransport):  # type: ignore[name-defined]
        """The SDK's transport, enforcing the thread's deadline and a reply-size cap."""

        def __init__(self, max_reply_bytes: int) -> None:
            self._inner = hx.HTTPTransport(verify=_ssl_context())
            self.max_reply_bytes = max_reply_bytes

        def handle_request(self, request: Any) -> Any:
            deadline = getattr(_state, "deadline", None)
            if deadline is not None and deadline[1]() >= deadline[0]:
                raise DeadlinePassed("deadline passed before the request was sent",
                                     request=request)
            # No compressed replies: the size cap counts the bytes that are read, and a small
            # gzip body can decode to gigabytes. An endpoint that compresses anyway is read
            # as it came (and fails as "not JSON").
            request.headers["Accept-Encoding"] = "identity"
            response = self._inner.handle_request(request)
            headers = [(k, v) for k, v in response.headers.raw
                       if k.lower() != b"content-encoding"]
            return hx.Response(status_code=response.status_code, headers=headers,
                               stream=DeadlineStream(response.stream, request, deadline,
                                                     self.max_reply_bytes),
                               extensions=response.extensions, request=request)

        def close(self) -> None:
            self._inner.close()

    return DeadlineTransport


def http_client(max_reply_bytes: int) -> Any:
    """The http client the SDK gets: its defaults, a transport that enforces each
    request's deadline (per chunk of the reply) and ``max_reply_bytes``."""
    import openai

    # Redirects are not followed: the request carries the kernel's source and the key,
    # and an endpoint may not forward them elsewhere (a 3xx is an endpoint error).
    return openai.DefaultHttpxClient(transport=_transport_class()(max_reply_bytes),
                                     verify=_ssl_context(), follow_redirects=False)


@functools.cache
def _ssl_context() -> Any:
    """httpx's default (certificate-verifying) SSL context, built once per process: building
    it loads the CA bundle, a tenth of a second per client otherwise."""
    return _sdk_httpx().create_ssl_context()


def retry_after_s(headers: Mapping[str, str] | None, now: datetime | None = None) -> float | None:
    """Seconds an endpoint asked to wait (``retry-after-ms``, ``retry-after`` seconds or an
    HTTP date); None when it did not say or said something unreadable."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            seconds = None
        if seconds is not None:
            return max(0.0, seconds) if seconds == seconds else None  # NaN: unreadable
        if name == "retry-after":
            try:
                parsed = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                return None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return max(0.0, (parsed - (now or datetime.now(UTC))).total_seconds())
    return None


@dataclass(frozen=True)
class Completion:
    """The fields of a chat.completion the client uses, read and checked from the body."""

    content: str
    refusal: str | None
    finish_reason: str
    model: str
    prompt_tokens: int
    completion_tokens: int


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def read_completion(body: str, content_type: str = "") -> Completion:
    """A :class:`Completion` from a 200 reply's raw body; LLMInvalidJSONError otherwise."""
    def invalid(what: str) -> LLMInvalidJSONError:
        preview = body[:200].replace("\n", " ")
        return LLMInvalidJSONError(
            f"the endpoint's reply is not a chat.completion: {what} (content-type "
            f"{content_type or 'not given'}, {len(body)} characters, starting {preview!r}); "
            "check the base URL points at an OpenAI-compatible /v1 endpoint",
            raw_reply=body[:20000])

    try:
        data = json.loads(body)
    except RecursionError:
        raise invalid("its JSON is nested too deeply to read") from None
    except ValueError as exc:
        raise invalid(f"it is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise invalid(f"it is a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise invalid("it has no `choices` list")
    if not choices:
        raise LLMInvalidJSONError("the reply has no choices", raw_reply=body[:20000])
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise invalid("choices[0] has no `message` object")
    content, refusal = message.get("content"), message.get("refusal")
    finish = choice.get("finish_reason")
    if content is not None and not isinstance(content, str):
        raise invalid(f"choices[0].message.content is a {type(content).__name__}, not text")
    if refusal is not None and not isinstance(refusal, str):
        raise invalid("choices[0].message.refusal is not text")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    model = data.get("model")
    return Completion(content=scrub(content or ""), refusal=scrub(refusal) if refusal else None,
                      finish_reason=str(finish) if isinstance(finish, str) else "",
                      model=model if isinstance(model, str) else "",
                      prompt_tokens=_count(usage.get("prompt_tokens")),
                      completion_tokens=_count(usage.get("completion_tokens")))


def monotonic() -> float:
    """The default clock of deadlines."""
    return time.monotonic()
