"""Kernel Workbench: interactive, reviewable GPU kernel tuning.

    from workbench import Workbench
    Workbench("sample_kernels/silu_and_mul").panel()

``Workbench`` and ``open`` are imported lazily, so ``import workbench.core`` stays free of
the UI, LLM and GPU libraries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Workbench", "import_kt", "open"]

if TYPE_CHECKING:
    from workbench.api import Workbench, open
    from workbench.core.kt_folder import import_kt


def __getattr__(name: str) -> Any:
    if name == "import_kt":  # a Kernel Tuner script as a kernel folder (core.kt_folder)
        from workbench.core.kt_folder import import_kt
        return import_kt
    if name in __all__:
        from workbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")
