"""The parameter table: editable ranges, validated as you type, with the space they leave.

:class:`ParamsEditor` is a grid of text boxes that checks every edit the way tuning will
(the pure checks live in :mod:`workbench.ui.range_edits`) and calls back with the new
parameters whenever every row is valid.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.ui.range_edits import (
    SpaceSummary,
    edit_parameter,
    field_texts,
    summarize_space,
)

__all__ = ["ParamsEditor", "SpaceSummary", "edit_parameter", "field_texts", "summarize_space"]


INVALID_CSS = (
    "<style>.wb-invalid input{border:2px solid #b00020!important;background:#fdecee!important}"
    ".wb-default-moved{color:#b26a00;font-weight:bold}</style>")


def _invalid_fields(exc: WorkbenchError, name: str, fields: Sequence[str]) -> list[str]:
    """The fields of parameter ``name`` an error is about (all of them when it names none)."""
    key = str(exc.details.get("key", ""))
    key = key.split(".", 1)[1] if key.startswith(f"{name}.") else key
    return [key] if key in fields else list(fields)


class ParamsEditor:
    """Editable parameter table (ipywidgets) that checks every edit the way tuning will.

    On each edit: the field texts are parsed (a bad field is outlined in red in place, with
    the reason as its tooltip), ``summarize(params)`` counts what the constraints and the
    device's launch limits leave, and, when the edit adds a value the compiler has not seen,
    ``check_compile(before, after)`` compiles the corner configs on a background thread
    (``run_async``); a value that does not compile outlines its cell and the edit is not
    applied. ``on_change(params)`` fires only for an edit that passed every check. The
    default column shows each edited parameter's default (it moves when the range drops it).
    """

    def __init__(self, params: Sequence[Any],
                 summarize: Callable[[Sequence[Any]], SpaceSummary],
                 on_change: Callable[[Sequence[Any]], None] | None = None, *,
                 check_compile: Callable[[Sequence[Any], Sequence[Any]], Any] | None = None,
                 run_async: Callable[[Callable[[], None]], None] | None = None) -> None:
        import ipywidgets as w

        self._summarize = summarize
        self._on_change = on_change
        self._check_compile = check_compile
        self._run_async = run_async or _in_thread
        self._generation = 0
        self._lock = threading.Lock()
        self.last_check: Any | None = None  # the last CompileCheck (tests, notebooks)
        self.grid = w.GridBox(layout=w.Layout(grid_template_columns="auto auto auto auto 1fr auto",
                                              grid_gap="2px 12px"))
        self.grid.add_class("wb-param-table")
        self._rows(params)
        self.summary = w.HTML()
        self.summary.add_class("wb-space-summary")
        self.compile_status = w.HTML()
        self.compile_status.add_class("wb-compile-check")
        self.widget = w.VBox([w.HTML(INVALID_CSS), self.grid, self.summary,
                              self.compile_status])
        self.widget.add_class("wb-params-editor")
        self.refresh()

    def _rows(self, params: Sequence[Any]) -> None:
        """One row per parameter: name, kind, a text box per field, default, description."""
        import ipywidgets as w

        with self._lock:
            self._generation += 1  # a compile check of the old rows no longer applies
        self._params = list(params)
        self._current = list(params)
        self._original = {p.name: p for p in self._params}
        self.inputs: dict[str, dict[str, Any]] = {}
        self.defaults: dict[str, Any] = {}
        # beside each row: why an edit of it was refused (next to the field, not under the
        # whole table)
        self.row_messages: dict[str, Any] = {}
        cells: list[Any] = [w.HTML(f"<b>{h}</b>") for h in
                            ("parameter", "kind", "range / choices", "default", "description",
                             "")]
        for p in self._params:
            d = p.to_dict()
            boxes: dict[str, Any] = {}
            for key, text in field_texts(p).items():
                box = w.Text(value=text, description=key, continuous_update=True,
                             layout=w.Layout(width="180px" if key != "values" else "300px"),
                             style={"description_width": "40px"})
                box.add_class("wb-param-input")
                box.add_class(f"wb-param-{p.name}-{key}")
                box.observe(self._changed, names="value")
                boxes[key] = box
            self.inputs[p.name] = boxes
            default = w.HTML(html.escape(str(d.get("default"))))
            default.add_class(f"wb-param-{p.name}-default")
            self.defaults[p.name] = default
            note = w.HTML()
            note.add_class("wb-param-message")
            note.add_class(f"wb-param-{p.name}-message")
            self.row_messages[p.name] = note
            cells += [w.HTML(f"<code>{html.escape(p.name)}</code>"), w.HTML(d["kind"]),
                      w.HBox(list(boxes.values())), default,
                      w.HTML(html.escape(d.get("description", ""))), note]
        old = self.grid.children
        self.grid.children = tuple(cells)
        for cell in old:  # the old rows' widgets leave the browser with them
            for child in getattr(cell, "children", ()):
                child.close()
            cell.close()

    def set_params(self, params: Sequence[Any]) -> None:
        """Show another template's parameters (a proposal, an adopted template): new rows,
        their ranges and defaults, checked as if typed; nothing is sent to ``on_change``."""
        self._rows(params)
        self.compile_status.value = ""
        self.refresh()

    @property
    def params(self) -> list[Any]:
        """The last parameters that passed every check."""
        return list(self._current)

    def texts(self) -> dict[str, dict[str, str]]:
        return {name: {k: b.value for k, b in boxes.items()} for name, boxes in self.inputs.items()}

    def set_text(self, name: str, key: str, value: str) -> None:
        """Programmatic edit (tests, notebooks): same path as typing."""
        self.inputs[name][key].value = value

    def invalid_cells(self) -> list[str]:
        """``NAME.field`` of every cell outlined as invalid."""
        return [f"{name}.{key}" for name, boxes in self.inputs.items()
                for key, box in boxes.items() if "wb-invalid" in box._dom_classes]

    def _mark(self, invalid: Mapping[str, str]) -> None:
        """Outline the cells in ``invalid`` (``NAME.field`` -> reason), clear the others."""
        for name, boxes in self.inputs.items():
            for key, box in boxes.items():
                reason = invalid.get(f"{name}.{key}")
                if reason is None:
                    box.remove_class("wb-invalid")
                    box.tooltip = None
                else:
                    box.add_class("wb-invalid")
                    box.tooltip = reason

    def _show_defaults(self, params: Sequence[Any]) -> None:
        for p in params:
            was = self._original[p.name].default
            text = html.escape(str(p.default))
            self.defaults[p.name].value = (
                f'<span class="wb-default-moved" title="was {html.escape(str(was))}">{text}</span>'
                if p.default != was else text)

    def _changed(self, _change: Any = None) -> None:
        self.refresh(notify=True)

    def refresh(self, *, notify: bool = False) -> SpaceSummary:
        """Check every row; show the summary or the errors; start the compile check."""
        with self._lock:
            self._generation += 1
            generation = self._generation
        errors: list[str] = []
        notes: list[str] = []
        invalid: dict[str, str] = {}
        new: list[Any] = []
        texts = self.texts()
        for p in self._params:
            try:
                edited, note = edit_parameter(p, texts[p.name])
                new.append(edited)
                if note:
                    notes.append(note)
            except WorkbenchError as exc:
                errors.append(exc.message)
                for key in _invalid_fields(exc, p.name, list(texts[p.name])):
                    invalid[f"{p.name}.{key}"] = exc.message
        summary: SpaceSummary
        if errors:
            summary = SpaceSummary(0, 0, {}, {}, None, errors=tuple(errors))
        else:
            self._show_defaults(new)
            try:
                summary = self._summarize(new)
            except WorkbenchError as exc:  # e.g. EmptySpaceError naming the binding constraint
                summary = SpaceSummary(0, 0, {}, {}, None, errors=(exc.message,))
            except Exception as exc:  # shown in place: the table must stay usable
                summary = SpaceSummary(0, 0, {}, {}, None,
                                       errors=(f"{type(exc).__name__}: {exc}",))
            if summary.launchable == 0 and summary.size and not summary.errors:
                worst_hw = max(summary.by_hardware.items(), key=lambda kv: kv[1], default=None)
                summary = SpaceSummary(summary.raw_size, summary.size, summary.by_constraint,
                                       summary.by_hardware, 0, errors=(
                                           "no config can be launched on the device"
                                           + (f" ({worst_hw[0]})" if worst_hw else ""),))
            if summary.size == 0 and not summary.errors:
                worst = max(summary.by_constraint.items(), key=lambda kv: kv[1], default=None)
                why = f" (most rejections: {worst[0]})" if worst else ""
                summary = SpaceSummary(summary.raw_size, 0, summary.by_constraint,
                                       summary.by_hardware, summary.launchable,
                                       errors=(f"no config satisfies the constraints{why}",))
            if summary.errors:
                for p in new:  # the space as a whole: outline every edited cell
                    for key, text in field_texts(self._original[p.name]).items():
                        if texts[p.name][key].strip() != text:
                            invalid[f"{p.name}.{key}"] = "; ".join(summary.errors)
        if notes and not summary.errors:
            summary = SpaceSummary(summary.raw_size, summary.size, summary.by_constraint,
                                   summary.by_hardware, summary.launchable,
                                   note="; ".join([summary.note, *notes]).strip("; "))
        self.summary.value = summary.to_html()
        self._mark(invalid)
        self.compile_status.value = ""
        for note in self.row_messages.values():
            note.value = ""
        if summary.errors:
            return summary
        from workbench.ui.edit_check import new_values

        if self._check_compile is None or not new_values(self._params, new):
            self._accept(new, notify)  # nothing new reaches the compiler
            return summary
        self.compile_status.value = ('<div class="wb-compile-running">compiling the corner '
                                     "configs of the edit…</div>")

        def check() -> None:
            try:
                result = self._check_compile(self._params, new)  # type: ignore[misc]
            except Exception as exc:  # shown in place, like every other check
                result = exc
            with self._lock:
                if generation != self._generation:
                    return  # a newer edit superseded this one
            self._compile_done(result, new, notify, dict(invalid))

        self._run_async(check)
        return summary

    def _compile_done(self, result: Any, new: list[Any], notify: bool,
                      invalid: dict[str, str]) -> None:
        if isinstance(result, BaseException):
            message = getattr(result, "message", f"{type(result).__name__}: {result}")
            self.compile_status.value = (f'<div class="wb-space-error" style="color:#b00020">'
                                         f"compile check failed: {html.escape(message)}</div>")
            return
        self.last_check = result
        if not result.ok:
            for failure in result.failures:
                fields = list(self.inputs[failure.param])
                original = field_texts(self._original[failure.param])
                changed = [k for k in fields
                           if self.inputs[failure.param][k].value.strip() != original[k]] or fields
                for key in changed:
                    invalid[f"{failure.param}.{key}"] = failure.message
            self._mark(invalid)
            by_param: dict[str, list[str]] = {}
            for f in result.failures:
                by_param.setdefault(f.param, []).append(f.message)
            for name, messages in by_param.items():
                if name in self.row_messages:
                    self.row_messages[name].value = (
                        '<div class="wb-param-refused" style="color:#b00020;max-width:420px;'
                        'white-space:normal">refused: '
                        + html.escape("; ".join(messages)[:400]) + "</div>")
            self._show_space_without_refused()
            items = "".join(f"<li>{html.escape(f.message)}</li>" for f in result.failures)
            self.compile_status.value = (
                '<div class="wb-space-error wb-compile-error" style="color:#b00020">'
                f"rejected: the edit does not compile, so it was not applied<ul>{items}</ul></div>")
            return
        built = len(result.corners)
        done = (f"{built} corner config{'s' if built != 1 else ''} with the new values compiled"
                if built else "")
        text = "; ".join(t for t in (done, result.note) if t)
        self.compile_status.value = (f'<div class="wb-compile-ok">{html.escape(text)}</div>'
                                     if text else "")
        self._accept(new, notify)

    def _show_space_without_refused(self) -> None:
        """After a refused edit the space count is the one still tuned (the last ranges
        that passed), never one that counts the refused value."""
        try:
            summary = self._summarize(self._current)
        except Exception:  # the count is a courtesy here: the refusal is already shown
            return
        self.summary.value = (summary.to_html() + '<div class="wb-space-note">the refused '
                              "edit is not counted: these are the ranges still tuned</div>")

    def _accept(self, new: list[Any], notify: bool) -> None:
        self._current = new
        if notify and self._on_change is not None:
            self._on_change(new)


def _in_thread(fn: Callable[[], None]) -> None:
    threading.Thread(target=fn, name="wb-compile-check", daemon=True).start()
