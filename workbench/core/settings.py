"""Every ``WORKBENCH_*`` environment variable, read and parsed in one place.

:func:`workbench_settings` reads the environment once into a frozen :class:`Settings`;
a value that does not parse raises :class:`SettingError` naming the variable, the value
and what was expected (``WORKBENCH_LLM_TIMEOUT = 'soon'; expected a positive number of
seconds``). :data:`VARIABLES` lists each variable with what it sets (the doctor, the docs
and the test that no other module reads a ``WORKBENCH_*`` variable use it).

Pure apart from reading the mapping it is given (``os.environ`` by default).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from workbench.core.errors import WorkbenchError

#: Each variable and what it sets.
VARIABLES: Mapping[str, str] = {
    "WORKBENCH_MODEL": "the LLM model name (none: the offline templater and planner)",
    "WORKBENCH_LLM_TIMEOUT": "seconds one LLM request may take",
    "WORKBENCH_LLM_STAGE_TIMEOUT": "seconds one LLM stage (all its attempts) may take",
    "WORKBENCH_CACHE_DIR": "the compiled-kernel cache folder",
    "WORKBENCH_CUPTI_LIB": "the libcupti to load for timer='cupti'",
    "WORKBENCH_KERNELS": "more kernel folders for the lab sidebar (os.pathsep-separated)",
    "WORKBENCH_STORE": "the store the lab server and its notebooks read",
    "WORKBENCH_INIT_TIMEOUT_S": "wall seconds one lab init may run (at most the default)",
    "WORKBENCH_REPLAY_PACE": "a replay's seconds per config, or 'recorded' (the GPU's pace)",
    "WORKBENCH_NVRTC": "compile with NVRTC: 'off' (nvcc), 'on' (kernels without shared memory), "
                       "'all', or a libnvrtc path",
}

_SECONDS = "a positive number of seconds, e.g. 120"


class SettingError(WorkbenchError):
    """A ``WORKBENCH_*`` variable holds a value that does not parse: ``variable``,
    ``value`` and ``expected``."""

    def __init__(self, variable: str, value: str, expected: str) -> None:
        super().__init__(f"{variable} = {value[:80]!r}; expected {expected}",
                         variable=variable, key=variable, value=value[:80], expected=expected)
        self.variable = variable
        self.value = value[:80]
        self.expected = expected


@dataclass(frozen=True)
class Settings:
    """The parsed ``WORKBENCH_*`` variables; None (or empty) where one is unset."""

    model: str = ""
    llm_timeout_s: float | None = None
    llm_stage_timeout_s: float | None = None
    cache_dir: Path | None = None
    cupti_lib: str | None = None
    kernels: tuple[Path, ...] = ()
    store: Path | None = None
    init_timeout_s: float | None = None
    replay_pace: str | float = 0.0
    nvrtc: str = "off"  # "off", "on", "all", or the path of a libnvrtc to use


def _seconds(variable: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise SettingError(variable, raw, _SECONDS)
    return value


def _pace(raw: str) -> str | float:
    if raw.strip() == "recorded":
        return "recorded"
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise SettingError("WORKBENCH_REPLAY_PACE", raw,
                           "seconds per config (a number >= 0) or 'recorded'")
    return value


def _nvrtc(raw: str) -> str:
    """'off', 'on', 'all' or a path (anything with a '/' in it, user-expanded)."""
    if raw.lower() in ("off", "on", "all"):
        return raw.lower()
    if "/" in raw:
        return str(Path(raw).expanduser())
    raise SettingError("WORKBENCH_NVRTC", raw, "'off', 'on', 'all' or the path of a libnvrtc")


def workbench_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The ``WORKBENCH_*`` variables of ``environ`` (default ``os.environ``), parsed; an
    empty value counts as unset. SettingError for a value that does not parse."""
    env = os.environ if environ is None else environ

    def get(variable: str) -> str:
        return env.get(variable, "").strip()

    def seconds(variable: str) -> float | None:
        return _seconds(variable, get(variable)) if get(variable) else None

    return Settings(
        model=get("WORKBENCH_MODEL"),
        llm_timeout_s=seconds("WORKBENCH_LLM_TIMEOUT"),
        llm_stage_timeout_s=seconds("WORKBENCH_LLM_STAGE_TIMEOUT"),
        cache_dir=Path(get("WORKBENCH_CACHE_DIR")) if get("WORKBENCH_CACHE_DIR") else None,
        cupti_lib=get("WORKBENCH_CUPTI_LIB") or None,
        kernels=tuple(Path(p).expanduser()
                      for p in get("WORKBENCH_KERNELS").split(os.pathsep) if p),
        store=Path(get("WORKBENCH_STORE")).expanduser() if get("WORKBENCH_STORE") else None,
        init_timeout_s=seconds("WORKBENCH_INIT_TIMEOUT_S"),
        replay_pace=_pace(get("WORKBENCH_REPLAY_PACE")) if get("WORKBENCH_REPLAY_PACE") else 0.0,
        nvrtc=_nvrtc(get("WORKBENCH_NVRTC")) if get("WORKBENCH_NVRTC") else "off",
    )
