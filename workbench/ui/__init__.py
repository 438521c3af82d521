"""The UI layer: panel (ipywidgets + one run view drawn with plotly.js), pure figure builders, diff
HTML, the parameter editor, report notebooks and ``workbench lab``.

Importing this package imports no widget library; the modules that need one import it.
Entry points: :class:`workbench.api.Workbench` (``.panel()``, ``.report()``) and
:func:`workbench.ui.lab.launch`.
"""
