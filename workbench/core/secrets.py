"""The one home of credential scrubbing: configured keys, whatever their form, never leave.

A key is *registered* when an LLM client is configured (the key itself, and the value of
every environment variable that can hold one: ``OPENAI_API_KEY`` and any ``*_API_KEY``).
:func:`scrub` replaces every registered value, plus anything shaped like a bearer token or
an ``sk-`` key, in any text; the store, the LLM errors and records, the ``workbench``
loggers and report notebooks all pass their text through it.

Values of 8 characters or more are replaced wherever they occur and in the forms an echo
can take: any of their characters percent-encoded (``%73``) or JSON-escaped (``\\u0073``,
however many backslashes a nested encoding adds), split across a line break (with a comment
marker continuing the next line) or across adjacent string literals (``"sk-ab" "cd"``),
base64 (either alphabet, at any of the three byte alignments, so also inside a longer blob)
and hex. Where a split key is replaced, the line breaks, comment markers and quotes between
its pieces are kept, so a comment stays a comment and a string literal stays balanced.
Shorter values (``EMPTY``, ``ollama``: placeholders of local endpoints) are replaced only
verbatim and as whole tokens, so that scrubbing them does not mangle ordinary words that
contain them. :func:`scrub_data` scrubs every string (and key) of parsed JSON-like data.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

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


#: Values shorter than this are placeholders a local server accepts (``EMPTY``, ``ollama``,
#: ``x``), not keys: scrubbing them as words would rewrite code and logs (a kernel argument
#: ``x``, a kernel named ``k``). Real keys are tens of characters.
MIN_SECRET_CHARS = 8


def register_secret(value: str | None) -> None:
    """Scrub ``value`` from now on (empty, whitespace-only and placeholder values shorter
    than :data:`MIN_SECRET_CHARS` are ignored)."""
    global _compiled
    if value is None or len(value.strip()) < MIN_SECRET_CHARS:
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


# What may sit between two pieces of a key split by its echo: a line break (raw, or written
# as an escape inside a JSON string) followed by a comment marker, or the quotes of two
# adjacent string literals. Kept when the key is replaced (see _replace).
_BREAK = r"(?:\r?\n|(?:\\+r)?\\+n)"
_SEPARATOR = (rf"(?:[ \t]*\\*{_BREAK}[ \t]*(?:(?://+|\*+|\#)[ \t]*)?"
              rf"|\\*\"[ \t]*(?:{_BREAK}[ \t]*)?\\*\")")
_SEPARATOR_RE = re.compile(_SEPARATOR)


def _char(c: str) -> str:
    """One character of a key: itself, percent-encoded or JSON-escaped (its UTF-8 bytes)."""
    encoded = c.encode("utf-8")
    percent = "".join(f"%{b:02x}" for b in encoded)
    escapes = [percent]
    if ord(c) < 0x10000:
        escapes.append(rf"\\+u{ord(c):04x}")
    return rf"(?:{re.escape(c)}|(?i:{'|'.join(escapes)}))"


def _base64_cores(value: str) -> set[str]:
    """The base64 characters that depend on ``value``'s bytes only, at each of the three
    alignments a longer blob can give it, in both alphabets (padding never included)."""
    raw = value.encode("utf-8")
    cores: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        first = -(-8 * shift // 6)  # the first character made of the key's bits only
        last = 8 * (shift + len(raw)) // 6
        core = encoded[first:last]
        if len(core) >= _LONG:
            cores.add(core)
            cores.add(core.translate(str.maketrans("+/", "-_")))
    return cores


def _long_pattern(value: str) -> str:
    spelled = f"{_SEPARATOR}?".join(_char(c) for c in value)
    forms = [spelled, *(re.escape(core) for core in sorted(_base64_cores(value)))]
    forms.append(f"(?i:{value.encode('utf-8').hex()})")
    return "|".join(forms)


def _first_chars(value: str) -> set[str]:
    """Every character a match of ``value`` in any of its forms can start with."""
    starts = {value[0], *(core[0] for core in _base64_cores(value))}
    if len(value) >= _LONG:
        hex_first = value.encode("utf-8").hex()[0]
        starts |= {hex_first, hex_first.upper()}
    return starts


def _pattern() -> re.Pattern[str] | None:
    global _compiled
    with _lock:
        if _compiled is None and _secrets:
            parts, starts = [], {"%", "\\"}
            for value in sorted(_secrets, key=len, reverse=True):
                escaped = re.escape(value)
                parts.append(_long_pattern(value) if len(value) >= _LONG
                             else rf"(?<![A-Za-z0-9_\-]){escaped}(?![A-Za-z0-9_\-])")
                starts |= _first_chars(value)
            # a cheap first-character test keeps the scan fast on long texts
            first = "".join(re.escape(c) for c in sorted(starts))
            _compiled = re.compile(f"(?=[{first}])(?:{'|'.join(parts)})")
        return _compiled


def _replace(match: re.Match[str]) -> str:
    """``[scrubbed]`` followed by the separators the key's pieces had between them."""
    return SCRUBBED + "".join(m.group(0) for m in _SEPARATOR_RE.finditer(match.group(0)))


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every registered (and every ``extra``) secret replaced by ``[scrubbed]``."""
    for value in extra:
        if value and value.strip():
            text = text.replace(value, SCRUBBED)
    pattern = _pattern()
    if pattern is not None:
        text = pattern.sub(_replace, text)
    for regex, replacement in _PATTERNS:
        text = regex.sub(replacement, text)
    return text


def scrub_data(value: Any, extra: Iterable[str] = ()) -> Any:
    """A copy of JSON-like ``value`` (dicts, lists, tuples, strings) with every string and
    every dict key passed through :func:`scrub`; other values are returned as they are."""
    extra = tuple(extra)
    if isinstance(value, str):
        return scrub(value, extra)
    if isinstance(value, Mapping):
        return {(scrub(k, extra) if isinstance(k, str) else k): scrub_data(v, extra)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_data(v, extra) for v in value)
    return value


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
