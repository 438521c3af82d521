"""A real HTTP server on loopback that speaks the OpenAI chat-completions API.

It serves a *transcript*: a list of steps answered in order, one per request received.
Tests point the real ``openai`` client at it (``base_url=server.base_url``) so requests go
over a real socket. Each step is one of::

    {"status": 200, "headers": {...}, "body": {...} | "text"}      # served verbatim
    {"status": 200, "message": {"content": "...", "refusal": null},  # a chat.completion body
     "finish_reason": "stop", "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
    {"status": 200, "content_json": {...}}                          # message content = JSON text
    {"delay_s": 2.0, ...}                                           # wait, then answer
    {"drip_s": 0.05, ...}                                           # body one byte at a time
    {"drop": true}                                                  # close the socket, no answer

A ``body`` given as ``bytes`` is sent as it is (e.g. a gzip stream).

Transcript files are JSON: ``{"name": ..., "description": ..., "steps": [...]}``.
Every request received is kept (:attr:`OpenAITranscriptServer.requests`) so tests can assert
what was asked and how the key was sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from workbench.core.errors import WorkbenchError


@dataclass(frozen=True)
class TranscriptStep:
    """One canned answer (see the module docstring for the forms)."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    delay_s: float = 0.0
    drop: bool = False
    drip_s: float = 0.0  # seconds between the body's bytes (a slow-drip endpoint)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], index: int = 0) -> TranscriptStep:
        body = data.get("body")
        if body is None and ("message" in data or "content_json" in data):
            message = dict(data.get("message") or {})
            if "content_json" in data:
                message["content"] = json.dumps(data["content_json"], indent=1)
            body = chat_completion_body(
                content=message.get("content"), refusal=message.get("refusal"),
                finish_reason=str(data.get("finish_reason", "stop")),
                usage=data.get("usage"), completion_id=f"chatcmpl-transcript-{index}")
        return cls(status=int(data.get("status", 200)), headers=dict(data.get("headers") or {}),
                   body=body, delay_s=float(data.get("delay_s", 0.0)),
                   drop=bool(data.get("drop", False)), drip_s=float(data.get("drip_s", 0.0)))


@dataclass(frozen=True)
class Transcript:
    """A named sequence of steps."""

    name: str
    steps: tuple[TranscriptStep, ...]
    description: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Transcript:
        steps = tuple(TranscriptStep.from_dict(s, i) for i, s in enumerate(data["steps"]))
        return cls(name=str(data.get("name", "")), steps=steps,
                   description=str(data.get("description", "")))

    @classmethod
    def load(cls, path: str | Path) -> Transcript:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def chat_completion_body(*, content: str | None, refusal: str | None = None,
                         finish_reason: str = "stop", model: str = "transcript-model",
                         usage: Mapping[str, int] | None = None,
                         completion_id: str = "chatcmpl-transcript") -> dict[str, Any]:
    """A ``chat.completion`` object as the API returns it."""
    use = dict(usage or {"prompt_tokens": 100, "completion_tokens": 50})
    use.setdefault("total_tokens", use.get("prompt_tokens", 0) + use.get("completion_tokens", 0))
    return {
        "id": completion_id, "object": "chat.completion", "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason, "logprobs": None,
                     "message": {"role": "assistant", "content": content, "refusal": refusal}}],
        "usage": use,
    }


@dataclass(frozen=True)
class ReceivedRequest:
    """What the server was sent."""

    method: str
    path: str
    headers: Mapping[str, str]  # names lower-cased
    raw_body: str
    body: Any  # parsed JSON, or None


class OpenAITranscriptServer:
    """Serve a transcript on ``127.0.0.1:<ephemeral port>`` from a daemon thread.

    Use as a context manager; :attr:`base_url` ends in ``/v1``. Requests beyond the last step
    get HTTP 500 ``transcript exhausted``, so a test that asks too often fails loudly.
    """

    def __init__(self, transcript: Transcript | Sequence[TranscriptStep]) -> None:
        steps = transcript.steps if isinstance(transcript, Transcript) else tuple(transcript)
        self._steps = list(steps)
        self._lock = threading.Lock()
        self._requests: list[ReceivedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def remaining_steps(self) -> int:
        with self._lock:
            return len(self._steps)

    @property
    def port(self) -> int:
        if self._server is None:
            raise WorkbenchError("server not started: call start() first")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _next_step(self, received: ReceivedRequest) -> TranscriptStep | None:
        with self._lock:
            self._requests.append(received)
            return self._steps.pop(0) if self._steps else None

    def start(self) -> OpenAITranscriptServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _send(self, status: int, headers: Mapping[str, str], payload: bytes,
                      drip_s: float = 0.0) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if not any(k.lower() == "content-type" for k in headers):
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if not drip_s:
                    self.wfile.write(payload)
                    self.wfile.flush()
                    return
                self.wfile.flush()
                for i in range(len(payload)):
                    if owner._server is None:  # the server is stopping
                        return
                    self.wfile.write(payload[i:i + 1])
                    self.wfile.flush()
                    time.sleep(drip_s)

            def do_GET(self) -> None:
                self._send(404, {}, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                try:
                    parsed: Any = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    parsed = None
                received = ReceivedRequest(method="POST", path=self.path,
                                           headers={k.lower(): v for k, v in self.headers.items()},
                                           raw_body=raw, body=parsed)
                if self.path.split("?")[0] not in ("/v1/chat/completions", "/chat/completions"):
                    with owner._lock:
                        owner._requests.append(received)
                    self._send(404, {}, b'{"error": {"message": "unknown path"}}')
                    return
                step = owner._next_step(received)
                try:
                    if step is None:
                        self._send(500, {}, json.dumps({"error": {
                            "message": "transcript exhausted", "type": "server_error"}}).encode())
                        return
                    if step.delay_s:
                        time.sleep(step.delay_s)
                    if step.drop:
                        self.close_connection = True
                        self.connection.close()
                        return
                    body = step.body
                    payload = (body if isinstance(body, bytes) else
                               (body if isinstance(body, str) else json.dumps(body or {})).encode())
                    self._send(step.status, step.headers, payload, step.drip_s)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    # The client gave up (timeout) before the answer was written.
                    self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        name="openai-transcript-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> OpenAITranscriptServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
