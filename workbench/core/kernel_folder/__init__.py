"""Kernel folders: ``kernel.toml`` + ``baseline.cu`` [+ ``template.cu``] [+ ``reference.py``].

Loading a malformed folder reports every problem at once, each naming the file, the key,
the value found and what was expected (see docs/design.md for the format).

A folder fresh from ``workbench init`` has no ``[template]``: the baseline then stands in
as a template with no parameters (``has_template`` is False) until ``propose --write``
adds one. ``reference.py`` is optional: without it the baseline's own outputs are the
golden outputs and inputs come from :func:`workbench.core.inputs.default_inputs`.

One concept per module:

- :mod:`~workbench.core.kernel_folder.schema`: the typed records and kernel.toml's keys;
- :mod:`~workbench.core.kernel_folder.fields`: reading one field, recording its problem;
- :mod:`~workbench.core.kernel_folder.load`: :func:`load_kernel_folder`;
- :mod:`~workbench.core.kernel_folder.checks`: the defaults at every shape, reference.py.
- :mod:`~workbench.core.kernel_folder.write`: an approved template written into the folder;
- :mod:`~workbench.core.kernel_folder.scaffold`: the kernel.toml ``workbench init`` plans.

The names below are re-exported because about a hundred call sites import them from here.
"""

from workbench.core.kernel_folder.load import load_kernel_folder
from workbench.core.kernel_folder.schema import (
    COMPARES,
    DEFAULT_DEVICE,
    EXACT,
    PLACEHOLDER,
    REFERENCE_FUNCTIONS,
    ROLES,
    SCALAR_DTYPES,
    ArgSpec,
    KernelFolder,
    Tolerance,
    default_bytes_moved,
)

__all__ = ["COMPARES", "DEFAULT_DEVICE", "EXACT", "PLACEHOLDER", "REFERENCE_FUNCTIONS",
           "ROLES", "SCALAR_DTYPES", "ArgSpec", "KernelFolder", "Tolerance",
           "default_bytes_moved", "load_kernel_folder"]
