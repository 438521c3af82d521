"""The parameter table: editable ranges, validated as you type, with the space they leave.

Pure part: :func:`edit_parameter` (text fields -> Parameter, or an error naming the field)
and :func:`summarize_space` (size, raw size, configs each constraint and each hardware
limit prunes, and why). Widget part: :class:`ParamsEditor`, a grid of text boxes that calls
back with the new parameters whenever every row is valid.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.errors import WorkbenchError

# A full hardware check walks every feasible config; above this the walk is skipped (and
# the summary says so) to keep typing responsive.
MAX_HARDWARE_CHECK = 50_000

FIELDS_BY_KIND: Mapping[str, tuple[str, ...]] = {
    "int": ("min", "max", "step"),
    "pow2": ("min", "max"),
    "choice": ("values",),
}


@dataclass(frozen=True)
class SpaceSummary:
    """What a set of parameter ranges leaves to search, and what pruned the rest."""

    raw_size: int
    size: int  # after constraints
    by_constraint: Mapping[str, int]  # constraint text -> raw configs it rejects
    by_hardware: Mapping[str, int]  # reason -> feasible configs the device cannot launch
    launchable: int | None  # size minus hardware rejections; None when not checked
    note: str = ""
    errors: tuple[str, ...] = field(default=())

    def to_html(self) -> str:
        """A small HTML block for the panel (classes ``wb-space-*``)."""
        if self.errors:
            items = "".join(f"<li>{html.escape(e)}</li>" for e in self.errors)
            return f'<div class="wb-space-error" style="color:#b00020"><ul>{items}</ul></div>'
        parts = [f'<div class="wb-space-size"><b>{self.size:,}</b> configs satisfy the '
                 f"constraints (of {self.raw_size:,} raw)"]
        if self.launchable is not None:
            parts.append(f"; <b>{self.launchable:,}</b> launchable on the device")
        parts.append("</div>")
        rows = [f"<tr><td>constraint <code>{html.escape(text)}</code></td><td>{n:,}</td></tr>"
                for text, n in self.by_constraint.items()]
        rows += [f"<tr><td>hardware: {html.escape(reason)}</td><td>{n:,}</td></tr>"
                 for reason, n in self.by_hardware.items()]
        if rows:
            parts.append('<table class="wb-space-pruning"><tr><th>pruned by</th>'
                         f"<th>configs</th></tr>{''.join(rows)}</table>")
        if self.note:
            parts.append(f'<div class="wb-space-note">{html.escape(self.note)}</div>')
        return "".join(parts)


def _parse_scalar(text: str) -> int | str | bool:
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    try:
        return int(t)
    except ValueError:
        return t


def field_texts(param: Any) -> dict[str, str]:
    """The editable text of each field of a parameter (inverse of :func:`edit_parameter`)."""
    d = param.to_dict()
    if d["kind"] == "choice":
        return {"values": ", ".join(str(v).lower() if isinstance(v, bool) else str(v)
                                    for v in d["values"])}
    return {k: str(d[k]) for k in FIELDS_BY_KIND[d["kind"]] if k in d}


def edit_parameter(param: Any, texts: Mapping[str, str]) -> tuple[Any, str]:
    """A new parameter from edited field texts, and a note (e.g. that the default moved).

    Raises :class:`ParameterError` (from ``parameter_from_dict``) or ``WorkbenchError``
    naming the field when a text is not valid.
    """
    from workbench.core.params import parameter_from_dict

    base = param.to_dict()
    kind = base["kind"]
    data: dict[str, Any] = {k: v for k, v in base.items() if k not in FIELDS_BY_KIND[kind]}
    for key in FIELDS_BY_KIND[kind]:
        text = texts.get(key, "").strip()
        if key == "values":
            items = [t for t in text.split(",") if t.strip()]
            if not items:
                raise WorkbenchError(f"{param.name}: values is empty; expected a comma-separated "
                                     "list", key=f"{param.name}.values", value=text,
                                     expected="a comma-separated list")
            data["values"] = [_parse_scalar(t) for t in items]
        else:
            try:
                data[key] = int(text)
            except ValueError:
                raise WorkbenchError(f"{param.name}: {key} = {text!r} is not an integer",
                                     key=f"{param.name}.{key}", value=text,
                                     expected="an integer") from None
    note = ""
    default = data.get("default")
    try:
        return parameter_from_dict(param.name, data), note
    except WorkbenchError:
        # The old default may lie outside the edited range: retry without it, say so.
        if default is None:
            raise
        data.pop("default")
        new = parameter_from_dict(param.name, data)
        note = f"{param.name}: default {default!r} is outside the new range; default is now {new.default!r}"
        return new, note


def summarize_space(template: Any, params: Sequence[Any], env: Mapping[str, Any],
                    device: Any | None) -> SpaceSummary:
    """Size of the space the edited ranges leave, and what prunes the rest.

    Constraints are counted over raw configs by the space itself; hardware limits
    (``launch_problem`` of the template's launch rules on ``device``) over feasible configs.
    """
    from workbench.core.space import SearchSpace

    space = SearchSpace(params, template.constraints, env)
    by_constraint = dict(space.rejections_by_constraint())
    size = int(space.size)
    by_hardware: Counter[str] = Counter()
    launchable: int | None = None
    note = ""
    if device is not None and size <= MAX_HARDWARE_CHECK:
        from workbench.core.hardware import launch_problem

        launchable = 0
        for config in space:
            try:
                launch = template.launch_for(config, env)
                reason = launch_problem(device, launch.grid, launch.block, launch.smem_bytes)
            except WorkbenchError as exc:
                reason = f"launch rules failed: {exc.message}"
            if reason is None:
                launchable += 1
            else:
                by_hardware[_generalize(reason)] += 1
    elif device is not None:
        note = (f"hardware limits not checked: {size:,} configs is above "
                f"{MAX_HARDWARE_CHECK:,}; they are checked per candidate during the search")
    return SpaceSummary(raw_size=int(space.raw_size), size=size, by_constraint=by_constraint,
                        by_hardware=dict(by_hardware), launchable=launchable, note=note)


def _generalize(reason: str) -> str:
    """Group reasons that differ only by the offending number ("block of 2048 threads ...")."""
    import re

    return re.sub(r"\b(of|is|=)\s*\d+", r"\1 N", reason, count=1)


class ParamsEditor:
    """Editable parameter table (ipywidgets); ``on_change(params)`` fires when all rows are valid.

    ``summarize(params)`` returns a :class:`SpaceSummary` for the current ranges; the editor
    shows it (or the errors) in place, under the table.
    """

    def __init__(self, params: Sequence[Any],
                 summarize: Callable[[Sequence[Any]], SpaceSummary],
                 on_change: Callable[[Sequence[Any]], None] | None = None) -> None:
        import ipywidgets as w

        self._params = list(params)
        self._current = list(params)
        self._summarize = summarize
        self._on_change = on_change
        self.inputs: dict[str, dict[str, Any]] = {}
        cells: list[Any] = []
        header = ["parameter", "kind", "range / choices", "default", "description"]
        cells += [w.HTML(f"<b>{h}</b>") for h in header]
        for p in self._params:
            d = p.to_dict()
            texts = field_texts(p)
            boxes: dict[str, Any] = {}
            for key, text in texts.items():
                box = w.Text(value=text, description=key, continuous_update=True,
                             layout=w.Layout(width="180px" if key != "values" else "300px"),
                             style={"description_width": "40px"})
                box.add_class("wb-param-input")
                box.add_class(f"wb-param-{p.name}-{key}")
                box.observe(self._changed, names="value")
                boxes[key] = box
            self.inputs[p.name] = boxes
            cells += [w.HTML(f"<code>{html.escape(p.name)}</code>"), w.HTML(d["kind"]),
                      w.HBox(list(boxes.values())), w.HTML(html.escape(str(d.get("default")))),
                      w.HTML(html.escape(d.get("description", "")))]
        self.grid = w.GridBox(cells, layout=w.Layout(
            grid_template_columns="auto auto auto auto 1fr", grid_gap="2px 12px"))
        self.grid.add_class("wb-param-table")
        self.summary = w.HTML()
        self.summary.add_class("wb-space-summary")
        self.widget = w.VBox([self.grid, self.summary])
        self.widget.add_class("wb-params-editor")
        self.refresh()

    @property
    def params(self) -> list[Any]:
        """The last valid parameters."""
        return list(self._current)

    def texts(self) -> dict[str, dict[str, str]]:
        return {name: {k: b.value for k, b in boxes.items()} for name, boxes in self.inputs.items()}

    def set_text(self, name: str, key: str, value: str) -> None:
        """Programmatic edit (tests, notebooks): same path as typing."""
        self.inputs[name][key].value = value

    def _changed(self, _change: Any = None) -> None:
        self.refresh(notify=True)

    def refresh(self, *, notify: bool = False) -> SpaceSummary:
        """Validate every row, show the summary or the errors; call on_change when valid."""
        errors: list[str] = []
        notes: list[str] = []
        new: list[Any] = []
        for p in self._params:
            try:
                edited, note = edit_parameter(p, self.texts()[p.name])
                new.append(edited)
                if note:
                    notes.append(note)
            except WorkbenchError as exc:
                errors.append(exc.message)
        summary: SpaceSummary
        if errors:
            summary = SpaceSummary(0, 0, {}, {}, None, errors=tuple(errors))
        else:
            try:
                summary = self._summarize(new)
            except WorkbenchError as exc:  # e.g. EmptySpaceError naming the binding constraint
                summary = SpaceSummary(0, 0, {}, {}, None, errors=(exc.message,))
            except Exception as exc:  # shown in place: the table must stay usable
                summary = SpaceSummary(0, 0, {}, {}, None,
                                       errors=(f"{type(exc).__name__}: {exc}",))
            if summary.size == 0 and not summary.errors:
                worst = max(summary.by_constraint.items(), key=lambda kv: kv[1], default=None)
                why = f" (most rejections: {worst[0]})" if worst else ""
                summary = SpaceSummary(summary.raw_size, 0, summary.by_constraint,
                                       summary.by_hardware, summary.launchable,
                                       errors=(f"no config satisfies the constraints{why}",))
        if notes and not summary.errors:
            summary = SpaceSummary(summary.raw_size, summary.size, summary.by_constraint,
                                   summary.by_hardware, summary.launchable,
                                   note="; ".join([summary.note, *notes]).strip("; "))
        self.summary.value = summary.to_html()
        if not summary.errors:
            self._current = new
            if notify and self._on_change is not None:
                self._on_change(new)
        return summary
