"""A hostile endpoint for the adversarial tier: the real openai client over real loopback
sockets against :class:`~workbench.testing.openai_server.OpenAITranscriptServer`."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from workbench.llm.client import LLMClient, LLMSettings
from workbench.testing.openai_server import (
    OpenAITranscriptServer,
    TranscriptStep,
    chat_completion_body,
)

KEY = "sk-adversarial-KEY-0123456789abcdef"
MESSAGES = [{"role": "system", "content": "You tune kernels."},
            {"role": "user", "content": "Plan the next step."}]
PLAN = {"diagnosis": "memory bound", "hypotheses": ["wider loads"],
        "next_action": "tune_more", "configs_to_enqueue": []}


_STEP_OPTIONS = ("delay_s", "drip_s", "drop", "headers", "status")


def ok_step(content: Any = None, **fields: Any) -> TranscriptStep:
    """A 200 chat.completion whose content is ``content`` (JSON-encoded unless a str);
    ``fields`` go to the completion body, or to the step (delay_s, drip_s, headers, ...)."""
    text = content if isinstance(content, str) else json.dumps(PLAN if content is None
                                                              else content)
    options = {k: fields.pop(k) for k in _STEP_OPTIONS if k in fields}
    return TranscriptStep(body=chat_completion_body(content=text, **fields), **options)


def raw_step(body: Any, status: int = 200, **options: Any) -> TranscriptStep:
    return TranscriptStep(status=status, body=body, **options)


class Recorded:
    """What a client recorded and how long it was asked to sleep."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.sleeps: list[float] = []

    def text(self) -> str:
        return json.dumps(self.events, default=str)


@contextmanager
def endpoint(steps: Sequence[TranscriptStep], *, key: str = KEY,
             **settings: Any) -> Iterator[tuple[OpenAITranscriptServer, LLMClient, Recorded]]:
    """A server serving ``steps`` and a client pointed at it (sleeps recorded, not slept)."""
    recorded = Recorded()
    with OpenAITranscriptServer(list(steps)) as server:
        values: dict[str, Any] = {"model": "m", "api_key": key, "base_url": server.base_url,
                                  "timeout_s": 5.0, "max_attempts": 4,
                                  "structured_output": False}
        values.update(settings)
        clock = values.pop("clock", None)
        extra = {"clock": clock} if clock is not None else {}
        client = LLMClient(LLMSettings(**values), recorder=recorded.events.append,
                           sleep=recorded.sleeps.append, **extra)
        try:
            yield server, client, recorded
        finally:
            client.close()
