"""Range edits, pure: edited field texts -> a parameter, and the space a set of ranges leaves.

:func:`edit_parameter` (text fields -> Parameter, or an error naming the field),
:func:`field_texts` (its inverse) and :func:`summarize_space` (size, raw size, configs each
constraint and each hardware limit prunes, and why, as a :class:`SpaceSummary`). The
editor that shows them is :class:`workbench.ui.params_editor.ParamsEditor`.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping, Sequence
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
        data["default"] = _nearest(new.values(), default)
        new = parameter_from_dict(param.name, data)
        note = f"{param.name}: default {default!r} is outside the new range; default is now {new.default!r}"
        return new, note


def _nearest(values: Sequence[Any], old: Any) -> Any:
    """The value closest to ``old`` (numbers), else the first: where a dropped default moves."""
    numeric = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    if isinstance(old, int) and not isinstance(old, bool) and len(numeric) == len(values):
        return min(values, key=lambda v: (abs(v - old), v))
    return values[0]


def summarize_space(template: Any, params: Sequence[Any], env: Mapping[str, Any],
                    device: Any | None) -> SpaceSummary:
    """Size of the space the edited ranges leave, and what prunes the rest.

    Constraints are counted over raw configs by the space itself; hardware limits
    (:func:`~workbench.core.feasibility.config_rejections`, the launch rules evaluated
    once over every feasible config) over feasible configs.
    """
    from workbench.core.space import SearchSpace

    space = SearchSpace(params, template.constraints, env)
    by_constraint = dict(space.rejections_by_constraint())
    size = int(space.size)
    by_hardware: Counter[str] = Counter()
    launchable: int | None = None
    note = ""
    if device is not None and size <= MAX_HARDWARE_CHECK:
        from workbench.core.feasibility import config_rejections

        launchable = 0
        for refused in config_rejections(template.launch, list(space), env, device):
            if refused is None:
                launchable += 1
            else:
                by_hardware[_generalize(refused.reason)] += 1
    elif device is not None:
        note = (f"hardware limits not checked: {size:,} configs is above "
                f"{MAX_HARDWARE_CHECK:,}; they are checked per candidate during the search")
    return SpaceSummary(raw_size=int(space.raw_size), size=size, by_constraint=by_constraint,
                        by_hardware=dict(by_hardware), launchable=launchable, note=note)


def _generalize(reason: str) -> str:
    """Group reasons that differ only by the offending number ("block of 2048 threads ...")."""
    import re

    return re.sub(r"\b(of|is|=)\s*\d+", r"\1 N", reason, count=1)
