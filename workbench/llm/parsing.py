"""Tolerant reading of a JSON object out of a model's reply.

Used when the endpoint does not support JSON-schema structured output, or answers with
prose anyway. Tried in order: the whole text as JSON; each fenced block (```json ... ```);
the first balanced ``{...}`` object in the text. Each candidate is also retried with
trailing commas removed. Nothing here evaluates code: only :func:`json.loads`. The object
comes back with every string scrubbed of configured keys (:func:`workbench.core.secrets.scrub_data`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from workbench.core.secrets import scrub_data
from workbench.llm.errors import LLMInvalidJSONError

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n(.*?)```", re.DOTALL)


def strip_trailing_commas(text: str) -> str:
    """Remove commas that directly precede ``}`` or ``]`` outside JSON strings."""
    out: list[str] = []
    in_string = False
    escaped = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif ch == ",":
            j = i + 1
            while j < len(text) and text[j] in " \t\r\n":
                j += 1
            if j >= len(text) or text[j] not in "}]":
                out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def balanced_objects(text: str) -> Iterator[str]:
    """Yield each top-level balanced ``{...}`` span of ``text``, left to right.

    Braces inside JSON strings are ignored. An unbalanced tail yields nothing.
    """
    depth = 0
    start = -1
    in_string = False
    escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"' and depth > 0:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                yield text[start : i + 1]


def _candidates(text: str) -> Iterator[str]:
    yield text.strip()
    for match in _FENCE.finditer(text):
        yield match.group(2).strip()
        yield from balanced_objects(match.group(2))
    yield from balanced_objects(text)


def _loads_object(candidate: str) -> dict[str, Any] | None:
    for attempt in (candidate, strip_trailing_commas(candidate)):
        try:
            value = json.loads(attempt)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def parse_json_object(text: str) -> dict[str, Any]:
    """Return the first JSON object found in ``text`` (strict JSON first, then tolerant).

    Raises :class:`LLMInvalidJSONError` (with ``raw_reply=text``) when there is none.
    """
    for candidate in _candidates(text):
        if not candidate:
            continue
        value = _loads_object(candidate)
        if value is not None:
            clean: dict[str, Any] = scrub_data(value)
            return clean
    preview = text.strip().replace("\n", " ")[:200]
    raise LLMInvalidJSONError(
        f"the reply holds no JSON object (first 200 characters: {preview!r})", raw_reply=text
    )
