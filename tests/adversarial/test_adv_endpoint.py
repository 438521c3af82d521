"""A hostile endpoint: every unusable, slow or malicious reply has one exact, bounded outcome."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest
from adv_endpoint import KEY, MESSAGES, PLAN, endpoint, ok_step, raw_step

from workbench.llm.errors import (
    LLMEndpointError,
    LLMInvalidJSONError,
    LLMRefusalError,
    LLMReplyError,
    LLMSchemaError,
    LLMTimeoutError,
    LLMTruncatedError,
)
from workbench.llm.schemas import NextAction, Plan
from workbench.testing.openai_server import OpenAITranscriptServer, TranscriptStep

BIG = 5_000_000


def body_with(**choice: Any) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "model": "m", "choices": [choice],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}}


# (case, steps, exception, words in the message)
BAD_REPLIES: list[tuple[str, list[TranscriptStep], type[Exception], str]] = [
    ("html 200", [raw_step("<html><body>Welcome to nginx</body></html>",
                           headers={"Content-Type": "text/html"})], LLMInvalidJSONError,
     "not JSON"),
    ("malformed json 200", [raw_step('{"choices": [')], LLMInvalidJSONError, "not JSON"),
    ("empty body 200", [raw_step("")], LLMInvalidJSONError, "not JSON"),
    ("json nested 1e5 deep (lists)", [raw_step("[" * 100_000 + "]" * 100_000)],
     LLMInvalidJSONError, "nested too deeply"),
    ("json nested 1e5 deep (objects)", [raw_step('{"a":' * 100_000 + "1" + "}" * 100_000)],
     LLMInvalidJSONError, "nested too deeply"),
    ("json list", [raw_step("[]")], LLMInvalidJSONError, "JSON list, not an object"),
    ("json null", [raw_step("null")], LLMInvalidJSONError, "JSON NoneType"),
    ("json string", [raw_step('"hello"')], LLMInvalidJSONError, "JSON str"),
    ("json number", [raw_step("42")], LLMInvalidJSONError, "JSON int"),
    ("no choices key", [raw_step({"id": "x"})], LLMInvalidJSONError, "no `choices` list"),
    ("200 with no choices", [raw_step({"choices": []})], LLMInvalidJSONError, "no choices"),
    ("choices not a list", [raw_step({"choices": "many"})], LLMInvalidJSONError,
     "no `choices` list"),
    ("choice not an object", [raw_step({"choices": [1]})], LLMInvalidJSONError,
     "no `message` object"),
    ("message a string", [raw_step({"choices": [{"message": "hi"}]})], LLMInvalidJSONError,
     "no `message` object"),
    ("content a number", [raw_step(body_with(message={"content": 42}))], LLMInvalidJSONError,
     "content is a int"),
    ("content a list", [raw_step(body_with(message={"content": ["a"]}))], LLMInvalidJSONError,
     "content is a list"),
    ("content an object", [raw_step(body_with(message={"content": {"a": 1}}))],
     LLMInvalidJSONError, "content is a dict"),
    ("refusal a number", [raw_step(body_with(message={"content": "x", "refusal": 7}))],
     LLMInvalidJSONError, "refusal is not text"),
    ("content null", [raw_step(body_with(message={"content": None}, finish_reason="stop"))],
     LLMReplyError, "the reply is empty"),
    ("content blank", [ok_step("   \n ")], LLMReplyError, "the reply is empty"),
    ("truncated reply", [ok_step('{"diagnosis": "mem', finish_reason="length")],
     LLMTruncatedError, "cut off at the token limit"),
    ("content filter", [ok_step("", finish_reason="content_filter")], LLMRefusalError,
     "content filter"),
    ("refusal", [ok_step(refusal="I will not")], LLMRefusalError, "the model refused"),
    ("5 MB JSON body", [raw_step(body_with(message={"content": "x" * BIG}))], LLMReplyError,
     "larger than 2097152 bytes"),
    ("5 MB non-JSON body", [raw_step("A" * BIG)], LLMReplyError, "larger than 2097152 bytes"),
    ("gzip body despite identity", [raw_step(gzip.compress(json.dumps(
        body_with(message={"content": json.dumps(PLAN)})).encode()),
        headers={"Content-Encoding": "gzip"})], LLMInvalidJSONError, "not JSON"),
    ("invalid json content", [ok_step("this is prose, no JSON at all")], LLMInvalidJSONError,
     "no JSON object"),
    ("content nested 1e5 deep", [ok_step("{" * 100_000)], LLMInvalidJSONError,
     "no JSON object"),
    ("content json list", [ok_step("[1, 2, 3]")], LLMInvalidJSONError, "no JSON object"),
    ("unknown fields", [ok_step({**PLAN, "shell": "rm -rf /"})], LLMSchemaError,
     "does not match Plan"),
    ("wrong enum", [ok_step({**PLAN, "next_action": "format_disk"})], LLMSchemaError,
     "does not match Plan"),
    ("wrong types", [ok_step({**PLAN, "hypotheses": "one"})], LLMSchemaError,
     "does not match Plan"),
    ("401 unauthorized", [raw_step({"error": {"message": "bad key"}}, status=401)],
     LLMEndpointError, "HTTP 401"),
    ("403 forbidden", [raw_step({"error": {"message": "no"}}, status=403)], LLMEndpointError,
     "HTTP 403"),
    ("404 not found", [raw_step("<html>404</html>", status=404)], LLMEndpointError, "HTTP 404"),
    ("422 unprocessable", [raw_step({"error": "?"}, status=422)], LLMEndpointError, "HTTP 422"),
    ("307 redirect is not followed", [raw_step("", status=307, headers={
        "Location": "http://127.0.0.1:9/v1/chat/completions"})], LLMEndpointError, "HTTP 307"),
    ("500 every time", [raw_step({"error": "boom"}, status=500)] * 4, LLMEndpointError,
     "4 attempt(s)"),
    ("dropped connection every time", [TranscriptStep(drop=True)] * 4, LLMEndpointError,
     "connection failed"),
]


@pytest.mark.parametrize(("case", "steps", "error", "words"), BAD_REPLIES,
                         ids=[c[0] for c in BAD_REPLIES])
def test_unusable_reply_is_a_clean_error(case: str, steps: list[TranscriptStep],
                                         error: type[Exception], words: str) -> None:
    with endpoint(steps) as (server, client, recorded), pytest.raises(error) as info:
        client.complete(MESSAGES, Plan)
    assert type(info.value) is error, repr(info.value)
    assert words in str(info.value)
    assert KEY not in str(info.value) and KEY not in recorded.text()
    assert server.remaining_steps == 0  # exactly the requests expected, no more


# Retry-After values an endpoint may send, and how long the client may then take.
HUGE_WAITS = [
    {"Retry-After": "1000000000"},
    {"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"},
    {"retry-after-ms": "1000000000000"},
    {"Retry-After": "1e308"},
    {"Retry-After": "inf"},
]


@pytest.mark.parametrize("headers", HUGE_WAITS, ids=lambda h: "|".join(h.values()))
def test_huge_retry_after_ends_at_once(headers: dict[str, str]) -> None:
    started = time.monotonic()
    with endpoint([raw_step({"error": "slow down"}, status=429, headers=headers)],
                  timeout_s=60.0) as (_, client, recorded), pytest.raises(LLMTimeoutError) as info:
        client.complete(MESSAGES, Plan)
    assert time.monotonic() - started < 5.0
    assert recorded.sleeps == []
    assert "asked to retry after" in str(info.value) and "would pass" in str(info.value)
    assert info.value.attempts == 1


@pytest.mark.parametrize(("headers", "slept"), [
    ({"Retry-After": "-5"}, [0.0]), ({"Retry-After": "nan"}, [1.0]),
    ({"Retry-After": "soon"}, [1.0]), ({"Retry-After": "2"}, [2.0]),
    ({"retry-after-ms": "250"}, [0.25]), ({}, [1.0])])
def test_odd_retry_after_values_then_success(headers: dict[str, str],
                                             slept: list[float]) -> None:
    steps = [raw_step({"error": "busy"}, status=503, headers=headers), ok_step()]
    with endpoint(steps) as (_, client, recorded):
        assert client.complete(MESSAGES, Plan).next_action is NextAction.TUNE_MORE
    assert recorded.sleeps == slept


def test_backoff_past_the_deadline_ends_the_request() -> None:
    now = [0.0]
    steps = [raw_step({"error": "busy"}, status=503)] * 2
    with endpoint(steps, timeout_s=1.5, clock=lambda: now[0]) as (server, client, recorded):
        def sleep(seconds: float) -> None:
            recorded.sleeps.append(seconds)
            now[0] += seconds
        client._sleep = sleep
        with pytest.raises(LLMTimeoutError) as info:
            client.complete(MESSAGES, Plan)
        assert len(server.requests) == 2
    assert recorded.sleeps == [1.0] and "the next retry (in 2 s)" in str(info.value)


@pytest.mark.parametrize(("step", "deadline_s"), [
    (ok_step(drip_s=0.02), 0.4),  # the whole body, one byte every 20 ms (about 5 s)
    (ok_step(drip_s=5.0), 0.4),   # one byte, then silence
    (ok_step(delay_s=5.0), 0.4),  # no answer at all
    (raw_step("[" * 5000, drip_s=0.01), 0.3),
])
def test_slow_endpoints_are_cut_at_the_deadline(step: TranscriptStep, deadline_s: float) -> None:
    started = time.monotonic()
    with (endpoint([step], timeout_s=deadline_s, max_attempts=3) as (_, client, recorded),
          pytest.raises(LLMTimeoutError) as info):
        client.complete(MESSAGES, Plan)
    elapsed = time.monotonic() - started
    assert elapsed < deadline_s + 1.0, elapsed
    assert "request deadline" in str(info.value)
    assert recorded.sleeps == []


def test_stage_deadline_covers_every_request_of_the_stage() -> None:
    now = [0.0]
    with endpoint([ok_step(), ok_step()], stage_timeout_s=10.0,
                  clock=lambda: now[0]) as (server, client, _):
        client.complete(MESSAGES, Plan)
        now[0] = 10.5
        with pytest.raises(LLMTimeoutError) as info:
            client.complete(MESSAGES, Plan)
        assert "stage deadline of 10 s" in str(info.value)
        assert len(server.requests) == 1  # nothing was sent after the deadline
        client.start_stage()
        assert client.complete(MESSAGES, Plan).next_action is NextAction.TUNE_MORE


def test_redirect_sends_nothing_to_the_other_host() -> None:
    with OpenAITranscriptServer([ok_step()]) as elsewhere:
        step = raw_step("", status=307, headers={
            "Location": f"{elsewhere.base_url}/chat/completions"})
        with endpoint([step]) as (_, client, _recorded), pytest.raises(LLMEndpointError):
            client.complete(MESSAGES, Plan)
        assert elsewhere.requests == []


def test_each_agent_stage_gets_its_own_deadline(tmp_path: Path) -> None:
    """Tuning between LLM stages (here 1000 s of it on an injected clock) does not eat the
    next stage's deadline."""
    from workbench.agent import run_agent
    from workbench.core.kernel_folder import load_kernel_folder
    from workbench.engine.compiler import Compiler
    from workbench.llm.client import LLMClient, LLMSettings
    from workbench.store.sqlite import SQLiteStore
    from workbench.testing.openai_server import Transcript
    from workbench.testing.synthetic_runner import SyntheticRunner

    root = Path(__file__).resolve().parents[2]
    folder = load_kernel_folder(root / "sample_kernels" / "silu_and_mul")
    now = [0.0]

    class SlowRunner(SyntheticRunner):
        def for_template(self, template: Any) -> SlowRunner:
            return SlowRunner(self.folder, template)

        def measure(self, candidates: Any, *, condition: Any = None) -> Any:
            results = super().measure(candidates, condition=condition)
            if candidates:
                now[0] += 1000.0  # a long tune step
            return results

    transcript = Transcript.load(root / "tests" / "transcripts" / "agent_two_iterations.json")
    with OpenAITranscriptServer(transcript) as server, \
            SQLiteStore(tmp_path / "wb.sqlite") as store:
        client = LLMClient(LLMSettings(model="m", api_key=KEY, base_url=server.base_url,
                                       stage_timeout_s=600.0), clock=lambda: now[0])
        outcome = run_agent(folder, runner=SlowRunner(folder), store=store, client=client,
                            compiler=Compiler(cache_dir=tmp_path / "cubins"), iterations=2,
                            auto_approve=True, allow_unverified=True, strategy="random",
                            budget=3, shape="small", dtype="bf16")
        client.close()
    assert now[0] >= 2000.0 and outcome.state.value == "done", outcome.reason
