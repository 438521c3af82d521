"""The one home of credential scrubbing: configured keys, whatever their form, never leave.

A key is *registered* when an LLM client is configured (the key itself, and the value of
every environment variable that can hold one: ``OPENAI_API_KEY`` and any ``*_API_KEY``).
:func:`scrub` replaces every registered value, plus anything shaped like a bearer token or
an ``sk-`` key, in any text; the store, the LLM errors and records, the ``workbench``
loggers and report notebooks all pass their text through it.

Values of 8 characters or more are replaced wherever they occur; shorter ones (``EMPTY``,
``ollama``: placeholders of local endpoints) only as whole tokens, so that scrubbing them
does not mangle ordinary words that contain them.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping

SCRUBBED = "[scrubbed]"
KEY_ENV_VARS = ("OPENAI_API_KEY",)
_KEY_ENV_SUFFIXES = ("API_KEY", "API_TOKEN")
_PATTERNS = (
    (re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer\s+)?[^\s\"',;]+"), rf"\g<1>{SCRUBBED}"),
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/\-]+=*"), rf"\g<1>{SCRUBBED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), SCRUBBED),
)
_LONG = 8

_lock = threading.Lock()
_secrets: set[str] = set()
_compiled: re.Pattern[str] | None = None


def register_secret(value: str | None) -> None:
    """Scrub ``value`` from now on (empty and whitespace-only values are ignored)."""
    global _compiled
    if value is None or not value.strip():
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        _compiled = None
    _install_log_filter()


def register_key_environment(environ: Mapping[str, str] | None = None,
                             names: Iterable[str] = KEY_ENV_VARS) -> None:
    """Register the value of each named variable and of every ``*_API_KEY`` variable."""
    env = os.environ if environ is None else environ
    wanted = set(names)
    for name, value in env.items():
        if name in wanted or name.upper().endswith(_KEY_ENV_SUFFIXES):
            register_secret(value)


def registered_count() -> int:
    """How many distinct values are registered (for tests and diagnostics)."""
    with _lock:
        return len(_secrets)


def _pattern() -> re.Pattern[str] | None:
    global _compiled
    with _lock:
        if _compiled is None and _secrets:
            parts = []
            for value in sorted(_secrets, key=len, reverse=True):
                escaped = re.escape(value)
                parts.append(escaped if len(value) >= _LONG
                             else rf"(?<![A-Za-z0-9_\-]){escaped}(?![A-Za-z0-9_\-])")
            _compiled = re.compile("|".join(parts))
        return _compiled


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every registered (and every ``extra``) secret replaced by ``[scrubbed]``."""
    for value in extra:
        if value and value.strip():
            text = text.replace(value, SCRUBBED)
    pattern = _pattern()
    if pattern is not None:
        text = pattern.sub(SCRUBBED, text)
    for regex, replacement in _PATTERNS:
        text = regex.sub(replacement, text)
    return text


_factory_installed = False


def _install_log_filter() -> None:
    """Scrub every log record of the ``workbench`` loggers as it is made (a record factory
    reaches every handler, including ones added later, which a logger filter does not)."""
    global _factory_installed
    with _lock:
        if _factory_installed:
            return
        _factory_installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.name == "workbench" or record.name.startswith("workbench."):
            message = record.getMessage()
            clean = scrub(message)
            if clean != message:
                record.msg, record.args = clean, ()
        return record

    logging.setLogRecordFactory(factory)
