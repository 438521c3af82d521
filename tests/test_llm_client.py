"""The real openai client over a real socket to the loopback transcript server."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

from workbench.llm.client import LLMClient, LLMSettings, UsageCounter
from workbench.llm.errors import (
    LLMBudgetError,
    LLMConfigError,
    LLMEndpointError,
    LLMInvalidJSONError,
    LLMRefusalError,
    LLMSchemaError,
    LLMTimeoutError,
    LLMTruncatedError,
)
from workbench.llm.parsing import parse_json_object
from workbench.llm.schemas import NextAction, Plan
from workbench.testing.openai_server import OpenAITranscriptServer, Transcript

TRANSCRIPTS = Path(__file__).parent / "transcripts"
SECRET = "sk-test-SECRET-0123456789abcdef"
MESSAGES = [{"role": "system", "content": "You tune kernels."},
            {"role": "user", "content": "Plan the next step."}]


class Harness:
    """A server, a client pointed at it, and everything the client recorded or slept."""

    def __init__(self, name: str, **settings: Any) -> None:
        self.server = OpenAITranscriptServer(Transcript.load(TRANSCRIPTS / f"{name}.json")).start()
        self.records: list[dict[str, Any]] = []
        self.sleeps: list[float] = []
        values: dict[str, Any] = {"model": "gpt-test", "api_key": SECRET,
                                  "base_url": self.server.base_url, "timeout_s": 5.0,
                                  "max_attempts": 4}
        values.update(settings)
        self.client = LLMClient(LLMSettings(**values), recorder=self.records.append,
                                sleep=self.sleeps.append)

    def close(self) -> None:
        self.client.close()
        self.server.stop()

    def everything_recorded(self) -> str:
        return json.dumps(self.records)


@pytest.fixture
def harness() -> Iterator[Any]:
    made: list[Harness] = []

    def make(name: str, **settings: Any) -> Harness:
        h = Harness(name, **settings)
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()


def assert_no_secret(h: Harness, *texts: str) -> None:
    assert SECRET not in h.everything_recorded()
    for text in texts:
        assert SECRET not in text


def test_success_json_schema(harness: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    h = harness("success_json_schema")
    plan = h.client.complete(MESSAGES, Plan, purpose="plan")
    assert plan.next_action is NextAction.TUNE_MORE
    assert plan.configs_to_enqueue == [{"BLOCK_THREADS": 256, "VEC": 8}]
    [req] = h.server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {SECRET}"  # the key goes only in the header
    assert SECRET not in req.raw_body
    assert req.body["response_format"]["type"] == "json_schema"
    assert req.body["response_format"]["json_schema"]["name"] == "Plan"
    assert req.body["messages"] == MESSAGES
    assert h.client.usage.usage.prompt_tokens == 812
    assert h.client.usage.usage.completion_tokens == 96
    assert h.client.usage.usage.requests == 1
    events = [r["event"] for r in h.records]
    assert events == ["request", "reply"]
    assert h.records[1]["request_headers"]["authorization"] == "***"  # the real headers, scrubbed
    assert h.records[1]["status"] == 200 and "diagnosis" in h.records[1]["body"]
    assert_no_secret(h, caplog.text)
    assert h.sleeps == []


def test_rate_limit_honours_retry_after(harness: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    h = harness("rate_limit_then_success", backoff_initial_s=7.0)
    plan = h.client.complete(MESSAGES, Plan)
    assert plan.next_action is NextAction.TUNE_MORE
    assert len(h.server.requests) == 2
    assert h.sleeps == [0.0]  # Retry-After: 0 wins over the 7 s backoff
    assert [r.get("status") for r in h.records if r["event"] == "reply"] == [429, 200]
    assert "429" in caplog.text
    assert_no_secret(h, caplog.text)


def test_500_twice_then_success_backs_off_exponentially(harness: Any) -> None:
    h = harness("server_error_twice_then_success", backoff_initial_s=0.5, backoff_max_s=10.0)
    h.client.complete(MESSAGES, Plan)
    assert len(h.server.requests) == 3
    assert h.sleeps == [0.5, 1.0]


def test_persistent_500_ends_in_clear_error(harness: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    h = harness("persistent_500", max_attempts=3, backoff_initial_s=1.0, backoff_max_s=1.5)
    with pytest.raises(LLMEndpointError) as info:
        h.client.complete(MESSAGES, Plan)
    assert info.value.status == 500 and info.value.attempts == 3
    assert "3 attempt(s)" in str(info.value) and "HTTP 500" in str(info.value)
    assert len(h.server.requests) == 3
    assert h.sleeps == [1.0, 1.5]  # capped at backoff_max_s
    assert_no_secret(h, caplog.text, str(info.value), repr(info.value.details))


@pytest.mark.timeout(30)
def test_timeout_ends_in_timeout_error(harness: Any) -> None:
    h = harness("timeout", attempt_timeout_s=0.3, max_attempts=2)
    with pytest.raises(LLMTimeoutError) as info:
        h.client.complete(MESSAGES, Plan)
    assert info.value.attempts == 2 and info.value.status is None
    assert "0.3 s" in str(info.value)
    assert len(h.sleeps) == 1


@pytest.mark.timeout(30)
def test_timeout_then_success(harness: Any) -> None:
    h = harness("timeout_then_success", attempt_timeout_s=0.3, max_attempts=3)
    assert h.client.complete(MESSAGES, Plan).next_action is NextAction.TUNE_MORE
    assert [r["event"] for r in h.records] == ["request", "error", "request", "reply"]


def test_dropped_connection_is_retried(harness: Any) -> None:
    h = harness("dropped_connection_then_success")
    assert h.client.complete(MESSAGES, Plan).next_action is NextAction.TUNE_MORE
    assert len(h.server.requests) == 2


def test_refusal(harness: Any) -> None:
    h = harness("refusal")
    with pytest.raises(LLMRefusalError) as info:
        h.client.complete(MESSAGES, Plan)
    assert "I can't help" in info.value.raw_reply
    assert "refused" in str(info.value)


def test_truncated(harness: Any) -> None:
    h = harness("truncated")
    with pytest.raises(LLMTruncatedError) as info:
        h.client.complete(MESSAGES, Plan)
    assert info.value.raw_reply.startswith('{"diagnosis"')
    assert "finish_reason=length" in str(info.value)
    assert h.client.usage.usage.completion_tokens == 64  # truncated replies still cost tokens


def test_malformed_json(harness: Any) -> None:
    h = harness("malformed_json")
    with pytest.raises(LLMInvalidJSONError) as info:
        h.client.complete(MESSAGES, Plan)
    assert "no JSON object" in str(info.value)
    assert info.value.raw_reply.startswith('{"diagnosis": "bandwidth bound"')


def test_schema_violation_names_the_field(harness: Any) -> None:
    h = harness("schema_violation")
    with pytest.raises(LLMSchemaError) as info:
        h.client.complete(MESSAGES, Plan)
    assert any(e.startswith("next_action") for e in info.value.errors)
    assert "rewrite_everything" in info.value.raw_reply


def test_prose_wrapped_json_uses_fallback_parser(harness: Any) -> None:
    h = harness("prose_wrapped_json")
    plan = h.client.complete(MESSAGES, Plan)
    assert plan.hypotheses == ["two tokens per block"]
    assert plan.configs_to_enqueue == [{"BLOCK_THREADS": 256, "VEC": 8}]


def test_response_format_rejected_falls_back_and_remembers(harness: Any) -> None:
    h = harness("response_format_rejected")
    plan = h.client.complete(MESSAGES, Plan)
    assert plan.next_action is NextAction.STOP
    first, second = h.server.requests
    assert "response_format" in first.body
    assert "response_format" not in second.body
    assert "JSON schema" in second.body["messages"][-1]["content"]
    assert h.client._json_schema_ok is False
    assert h.sleeps == []  # a 400 about the format is not a retry with backoff


def test_unauthorized_not_retried_and_key_not_leaked(harness: Any,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    h = harness("unauthorized")
    with pytest.raises(LLMEndpointError) as info:
        h.client.complete(MESSAGES, Plan)
    assert info.value.status == 401 and info.value.attempts == 1
    assert len(h.server.requests) == 1 and h.sleeps == []
    assert_no_secret(h, caplog.text, str(info.value), repr(info.value.details))


def test_budget_stops_requests(harness: Any) -> None:
    h = harness("success_json_schema")
    h.client.usage = UsageCounter(budget_tokens=100)
    h.client.usage.add(80, 30)
    with pytest.raises(LLMBudgetError) as info:
        h.client.complete(MESSAGES, Plan)
    assert info.value.details["used_tokens"] == 110
    assert h.server.requests == []


def test_settings_repr_hides_key_and_env() -> None:
    settings = LLMSettings.from_env({"OPENAI_API_KEY": SECRET, "WORKBENCH_MODEL": "m",
                                     "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert settings.model == "m" and settings.api_key == SECRET
    assert SECRET not in repr(settings) and SECRET not in str(settings)
    assert "<set>" in repr(settings)
    with pytest.raises(LLMConfigError) as info:
        LLMSettings.from_env({"OPENAI_API_KEY": SECRET})
    assert info.value.details["missing"] == "model"
    with pytest.raises(LLMConfigError):
        LLMSettings.from_env({"WORKBENCH_MODEL": "m"})
    assert LLMSettings.from_env({"OPENAI_API_KEY": SECRET}, model="x").model == "x"


def test_exhausted_transcript_fails_loudly(harness: Any) -> None:
    h = harness("refusal", max_attempts=1)
    with pytest.raises(LLMRefusalError):
        h.client.complete(MESSAGES, Plan)
    with pytest.raises(LLMEndpointError) as info:
        h.client.complete(MESSAGES, Plan)
    assert "transcript exhausted" in str(info.value)


@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": 1}', {"a": 1}),
    ('Sure!\n```json\n{"a": [1, 2,],}\n```\nDone.', {"a": [1, 2]}),
    ('Result: {"a": "brace } in string", "b": {"c": 2}} and {"d": 3}',
     {"a": "brace } in string", "b": {"c": 2}}),
    ('```\n{"a": 1}\n```', {"a": 1}),
    ('[1, 2] then {"a": 2}', {"a": 2}),
    ('{"s": "comma ,} kept", }', {"s": "comma ,} kept"}),
])
def test_tolerant_parser(text: str, expected: dict[str, Any]) -> None:
    assert parse_json_object(text) == expected


@pytest.mark.parametrize("text", ["no json here", '{"a": 1', "```json\n[1, 2]\n```", ""])
def test_tolerant_parser_refuses(text: str) -> None:
    with pytest.raises(LLMInvalidJSONError) as info:
        parse_json_object(text)
    assert info.value.raw_reply == text


CLIENT_TRANSCRIPTS = sorted(p.stem for p in TRANSCRIPTS.glob("*.json")
                            if not p.stem.startswith(("template_", "plan_")))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", CLIENT_TRANSCRIPTS)
def test_key_never_recorded_logged_or_raised(name: str, harness: Any,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    h = harness(name, timeout_s=0.3, max_attempts=3)
    outcome = ""
    try:
        outcome = repr(h.client.complete(MESSAGES, Plan))
    except Exception as exc:  # every failure mode counts: the key must not be in any of them
        outcome = f"{exc!s} {exc!r} {getattr(exc, 'details', '')}"
    assert h.records, "every exchange is recorded"
    assert all(r["event"] in ("request", "reply", "error") for r in h.records)
    assert_no_secret(h, caplog.text, outcome)
    for req in h.server.requests:
        assert SECRET not in req.raw_body  # the key travels only in the Authorization header
        assert req.headers["authorization"] == f"Bearer {SECRET}"


def test_server_also_serves_path_without_v1(harness: Any) -> None:
    h = harness("success_json_schema", base_url=None)
    h.client.close()
    base = h.server.base_url.removesuffix("/v1")
    h.client = LLMClient(LLMSettings(model="m", api_key=SECRET, base_url=base))
    assert h.client.complete(MESSAGES, Plan).next_action is NextAction.TUNE_MORE
    assert h.server.requests[0].path == "/chat/completions"


@pytest.mark.parametrize(("headers", "expected"), [
    ({"Retry-After": "2"}, 2.0),
    ({"retry-after-ms": "250"}, 0.25),
    ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # in the past: no wait
    ({"Retry-After": "soon"}, None),
    ({}, None),
])
def test_retry_after_parsing(headers: dict[str, str], expected: float | None) -> None:
    from workbench.llm.transport import retry_after_s

    assert retry_after_s(headers) == expected
