"""Where and how to call the model (:class:`LLMSettings`) and what a session used
(:class:`Usage`, :class:`UsageCounter`). Re-exported by :mod:`workbench.llm.client`."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.core.secrets import register_key_environment, register_secret
from workbench.core.settings import SettingError, workbench_settings
from workbench.llm.errors import LLMBudgetError, LLMConfigError

TIMEOUT_ENV = "WORKBENCH_LLM_TIMEOUT"
STAGE_TIMEOUT_ENV = "WORKBENCH_LLM_STAGE_TIMEOUT"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_STAGE_TIMEOUT_S = 600.0


def _positive_seconds(value: Any, name: str) -> float:
    """``value`` as a positive, finite number of seconds, or LLMConfigError naming ``name``."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise LLMConfigError(f"{name} = {value!r} is not a time limit; expected a positive "
                             f"number of seconds, e.g. 120", key=name, value=str(value),
                             expected="a positive number of seconds")
    return seconds


@dataclass(frozen=True, repr=False)
class LLMSettings:
    """Where and how to call the model. ``repr`` never shows the key.

    ``timeout_s`` bounds one request with all its retries, ``stage_timeout_s`` every request
    of a stage, ``attempt_timeout_s`` (when set) each attempt, so that a hung attempt
    leaves time to retry; ``max_attempts`` counts the first try; a reply body larger than
    ``max_reply_bytes`` is refused. The key is registered for scrubbing on creation.
    """

    model: str
    api_key: str = field(default="", repr=False)
    base_url: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    stage_timeout_s: float = DEFAULT_STAGE_TIMEOUT_S
    attempt_timeout_s: float | None = None  # one attempt's bound (default: the time left)
    max_reply_bytes: int = 2 << 20
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

    def __post_init__(self) -> None:
        register_secret(self.api_key)
        object.__setattr__(self, "timeout_s", _positive_seconds(self.timeout_s, "timeout_s"))
        object.__setattr__(self, "stage_timeout_s",
                           _positive_seconds(self.stage_timeout_s, "stage_timeout_s"))
        if self.attempt_timeout_s is not None:
            object.__setattr__(self, "attempt_timeout_s",
                               _positive_seconds(self.attempt_timeout_s, "attempt_timeout_s"))
        if self.max_attempts < 1:
            raise LLMConfigError(f"max_attempts = {self.max_attempts}; expected at least 1",
                                 key="max_attempts", value=self.max_attempts)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> LLMSettings:
        """Settings from OPENAI_API_KEY, OPENAI_BASE_URL, WORKBENCH_MODEL,
        WORKBENCH_LLM_TIMEOUT and WORKBENCH_LLM_STAGE_TIMEOUT; ``overrides`` win."""
        env = os.environ if environ is None else environ
        register_key_environment(env)
        try:
            configured = workbench_settings(env)
        except SettingError as exc:
            raise LLMConfigError(exc.message, key=exc.variable, value=exc.value,
                                 expected=exc.expected) from exc
        values: dict[str, Any] = {
            "model": configured.model,
            "api_key": env.get("OPENAI_API_KEY", ""),
            "base_url": env.get("OPENAI_BASE_URL") or None,
        }
        for key, seconds in (("timeout_s", configured.llm_timeout_s),
                             ("stage_timeout_s", configured.llm_stage_timeout_s)):
            if seconds is not None:
                values[key] = seconds
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


