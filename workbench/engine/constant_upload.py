"""Module globals read as inputs: their bytes from the host inputs, copied into a module.

Before every run of the baseline or a candidate, each ``[[constants]]`` global of the kernel
folder (:mod:`workbench.core.module_constants`) is uploaded into the loaded module's symbol
of that name; a module without it, or whose symbol holds another size, is a wrong result
naming the global.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.engine.output_compare import _Mismatch

__all__ = ["ConstantUpload", "constant_uploads", "upload_constants"]


class ConstantUpload:
    """One module global's bytes, ready for the device (what :func:`upload_constants`
    copies into the module's symbol)."""

    def __init__(self, name: str, dtype: str, bits: Any) -> None:
        self.name = name
        self.dtype = dtype
        self.bits = bits

    @property
    def nbytes(self) -> int:
        return int(self.bits.nbytes)


def constant_uploads(constants: Sequence[Mapping[str, Any]],
                     host_inputs: Mapping[str, Any]) -> tuple[list[ConstantUpload],
                                                              dict[str, Any]]:
    """The bytes of every constant of a problem (``ProblemSpec.constants``) from the host
    inputs (make_inputs' or generated values: :func:`workbench.core.inputs.complete_inputs`),
    and the values the kernel sees (float32, or int64 for integers), which reference() gets.
    KeyError / ValueError name a constant with no values or the wrong element count."""
    import numpy as np

    from workbench.core import dtypes as wdt

    uploads: list[ConstantUpload] = []
    seen: dict[str, Any] = {}
    for const in constants:
        name, adt = str(const["name"]), str(const["dtype"])
        if name not in host_inputs:
            raise KeyError(f"no values for the module global {name!r}")
        shape = tuple(int(n) for n in const["shape"])
        raw = np.asarray(host_inputs[name])
        if raw.size != (int(np.prod(shape)) if shape else 1):
            raise ValueError(f"values for the module global {name!r} hold {raw.size} "
                             f"elements; it holds {list(shape)}")
        bits = np.ascontiguousarray(wdt.encode_arg(raw.reshape(shape), adt))
        values = wdt.decode_arg(bits, adt)
        seen[name] = values if wdt.is_integer_dtype(adt) else values.astype(np.float32)
        uploads.append(ConstantUpload(name, adt, bits))
    return uploads, seen


def upload_constants(cuda: Any, module: Any, uploads: Sequence[ConstantUpload]) -> None:
    """Copy each constant into ``module``'s global of that name (``module.get_global``, then
    a synchronous host-to-device copy). A module without the symbol, or whose symbol holds
    another number of bytes, is a _Mismatch naming it: the kernel would read values no
    input set gave it."""
    for up in uploads:
        try:
            address, size = module.get_global(up.name)
        except cuda.Error as exc:
            raise _Mismatch(f"the module has no global named {up.name} ({exc}); the template "
                            f"must keep the baseline's {up.name} (an input uploaded before "
                            "every run)", None) from None
        if int(size) != up.nbytes:
            raise _Mismatch(f"the module global {up.name} holds {int(size)} bytes; its "
                            f"{up.dtype} values hold {up.nbytes} (kernel.toml [[constants]] or "
                            "the source declaration disagree with this module)", None)
        cuda.memcpy_htod(address, up.bits)


