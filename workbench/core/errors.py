"""The exception tree. Every error the workbench raises derives from WorkbenchError.

Errors carry data (which file, key, value, limit, what was expected) so that a panel or a
CLI can show a precise message without parsing text.

    WorkbenchError
    ├── UsageError               a function was given a value it cannot use (also a
    │                            ValueError; key, value, expected)
    ├── SettingError             a WORKBENCH_* variable does not parse (core/settings.py)
    ├── InputsError              reference.make_inputs gave unusable arrays (also a
    │                            ValueError; name, expected)
    ├── ExpressionError          a constraint / launch / shape expression is refused
    ├── ParameterError           a parameter definition or value is invalid
    ├── SpaceError
    │   └── EmptySpaceError      constraints leave no config (names the binding constraint)
    ├── KernelFolderError        a kernel folder is malformed (lists every problem)
    ├── WriteRefusedError        the write policy refused a target (path, root, reason)
    ├── CudaSourceError          a .cu file cannot be read as CUDA (file, line)
    ├── ScaffoldError            init needs the user to say an argument's role or dtype
    ├── TemplateError            rendering or launch-rule evaluation failed
    │   └── DefineError          a name or value may not enter a #define (core/defines.py)
    ├── CompilerNotFoundError    nvcc is missing (says how to install it)
    ├── CompileError             nvcc failed (kind, log path)
    ├── DeviceError
    │   └── NoGPUError           no CUDA GPU here (points to replay)
    ├── WorkerError              the GPU worker process misbehaved
    │   └── ClusterError         a Dask cluster cannot serve a runner (no GPU worker,
    │                            devices of different models behind one resource)
    ├── RecordingError           a recording is missing or malformed
    ├── StoreError
    │   ├── StoreCorruptError
    │   └── StoreLockedError
    ├── SearchError
    │   └── UnknownStrategyError (lists the choices)
    ├── LLMError                 endpoint, reply or budget problems
    └── ReviewError              e.g. tuning an unapproved template
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.secrets import scrub


class WorkbenchError(Exception):
    """Root of every workbench error. ``details`` holds the data behind the message."""

    def __init__(self, message: str, **details: Any) -> None:
        message = scrub(message)  # a configured key never travels inside an error
        super().__init__(message)
        self.message = message
        self.details = details


class UsageError(WorkbenchError, ValueError):
    """A function was called with a value it cannot use: ``key``, ``value``, ``expected``.
    Also a ValueError, as Python's own argument checks are."""

    def __init__(self, message: str, *, key: str, value: Any, expected: str) -> None:
        super().__init__(message, key=key, value=value, expected=expected)
        self.key = key
        self.value = value
        self.expected = expected


class InputsError(WorkbenchError, ValueError):
    """``reference.make_inputs`` returned arrays the kernel cannot use: ``name`` the input
    or module global, ``expected`` what it must hold. Also a ValueError."""

    def __init__(self, message: str, *, name: str, expected: str) -> None:
        super().__init__(message, name=name, expected=expected)
        self.name = name
        self.expected = expected


class ExpressionError(WorkbenchError):
    """An expression was refused: ``text`` is the expression, ``piece`` the offending part."""

    def __init__(self, message: str, *, text: str, piece: str = "", **details: Any) -> None:
        super().__init__(message, text=text, piece=piece, **details)
        self.text = text
        self.piece = piece


class ParameterError(WorkbenchError):
    pass


class SpaceError(WorkbenchError):
    pass


class EmptySpaceError(SpaceError):
    """No config satisfies the constraints; ``binding`` names the constraint that emptied it."""

    def __init__(self, message: str, *, binding: str | None, **details: Any) -> None:
        super().__init__(message, binding=binding, **details)
        self.binding = binding


@dataclass(frozen=True)
class Problem:
    """One problem in a kernel folder: where it is, what was found, what was expected."""

    file: str
    key: str
    value: str
    expected: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}" if self.key else self.file
        return f"{where}: got {self.value}; expected {self.expected}"


class KernelFolderError(WorkbenchError):
    """A kernel folder is malformed. ``problems`` lists every problem found, not just the first."""

    def __init__(self, folder: str, problems: Sequence[Problem]) -> None:
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"kernel folder {folder} has {len(problems)} problem(s):\n{lines}",
                         folder=folder, problems=list(problems))
        self.folder = folder
        self.problems = list(problems)


class WriteRefusedError(WorkbenchError):
    """The write policy refused ``path`` below ``root``: a symlink on the way, a target
    outside the root, an existing file without overwrite, or an I/O failure (``reason``)."""

    def __init__(self, message: str, *, path: str, root: str, reason: str) -> None:
        super().__init__(message, path=path, root=root, reason=reason)
        self.path = path
        self.root = root
        self.reason = reason


class CudaSourceError(WorkbenchError):
    """A CUDA source cannot be used: ``file`` and 1-based ``line`` (0: the whole file)."""

    def __init__(self, message: str, *, file: str, line: int, **details: Any) -> None:
        super().__init__(message, file=file, line=line, **details)
        self.file = file
        self.line = line


class ScaffoldError(WorkbenchError):
    """``workbench init`` cannot decide alone: ``argument`` names the (first) argument and
    ``asks`` lists every question, each naming the option that answers it."""

    def __init__(self, message: str, *, file: str, line: int, argument: str,
                 **details: Any) -> None:
        super().__init__(message, file=file, line=line, argument=argument, **details)
        self.file = file
        self.line = line
        self.argument = argument


class TemplateError(WorkbenchError):
    pass


class CompilerNotFoundError(WorkbenchError):
    pass


class CompileError(WorkbenchError):
    pass


class DeviceError(WorkbenchError):
    pass


class NoGPUError(DeviceError):
    pass


class WorkerError(WorkbenchError):
    pass


class ClusterError(WorkerError):
    """A Dask cluster cannot serve a runner: no worker offers the GPU resource, the
    workers' devices differ (``details["groups"]`` lists them), or one failed to start."""


class RecordingError(WorkbenchError):
    pass


class StoreError(WorkbenchError):
    pass


class StoreCorruptError(StoreError):
    pass


class StoreLockedError(StoreError):
    pass


class SearchError(WorkbenchError):
    pass


class UnknownStrategyError(SearchError):
    def __init__(self, name: str, choices: Sequence[str]) -> None:
        super().__init__(f"unknown strategy {name!r}; choose one of: {', '.join(sorted(choices))}",
                         name=name, choices=sorted(choices))
        self.name = name
        self.choices = sorted(choices)


class LLMError(WorkbenchError):
    pass


class ReviewError(WorkbenchError):
    pass
