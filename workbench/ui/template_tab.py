"""The panel's Template tab: the side-by-side review, the range editor, approve and reject.

:class:`TemplateTab` draws the backend's current template: :meth:`TemplateTab.follow`
redraws the diff and, when the template's parameters are not the ones the editor shows
(a proposal, ``adopt_template`` from code), rebuilds the editor's rows for them, so the
rows, their defaults and the review status always describe the template tuned now.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from workbench.ui.agent_tab import guarded_button


class TemplateTab:
    """The tab's widgets. ``problem()`` gives the panel's (shape, dtype) the editor checks
    edits for; ``guard`` wraps callbacks so errors are shown, ``info`` shows a message;
    ``on_template(rows)`` runs after anything here changed the template (a proposal, a
    review, accepted range edits: ``rows`` False, the editor already shows them) so the
    rest of the panel follows it."""

    def __init__(self, backend: Any, *, problem: Callable[[], tuple[str, str]],
                 guard: Callable[..., Any], info: Callable[[str], None],
                 on_template: Callable[[bool], None]) -> None:
        import ipywidgets as w

        from workbench.ui.params_editor import ParamsEditor

        self.backend = backend
        self._info = info
        self._on_template = on_template
        self._right_title = "template"
        self.diff_view = w.HTML(self._diff_html())
        self.diff_view.add_class("wb-diff-view")
        self.editor = ParamsEditor(
            backend.params,
            summarize=lambda ps: backend.summarize_space(ps, *problem()),
            on_change=guard(self._params_changed),
            check_compile=lambda before, after: backend.check_compile(before, after,
                                                                      *problem()))
        self.review_note = w.Textarea(placeholder="review note", layout=w.Layout(width="400px"))
        self.review_note.add_class("wb-review-note")
        self.approve_button = guarded_button("Approve", "wb-approve", guard(self._approve),
                                             "success")
        self.reject_button = guarded_button("Reject", "wb-reject", guard(self._reject),
                                            "danger")
        self.propose_button = guarded_button("Propose", "wb-propose", guard(self._propose), "")
        self.review_status = w.HTML()
        self.review_status.add_class("wb-review-status")
        self.widget = w.VBox([
            self.diff_view, w.HTML("<b>parameters</b> (edit ranges; validated as you type)"),
            self.editor.widget,
            w.HBox([self.review_note, w.VBox([self.approve_button, self.reject_button,
                                              self.propose_button])]),
            self.review_status])
        self.widget.add_class("wb-tab-template")

    def _diff_html(self) -> str:
        from workbench.ui.diff import side_by_side_diff_html

        return side_by_side_diff_html(self.backend.baseline_source, self.backend.template_source,
                                      right_title=self._right_title, params=self.backend.params)

    def follow(self, *, rows: bool = True) -> None:
        """Draw the backend's current template: the diff, the editor's rows (with ``rows``,
        rebuilt when its parameters are not the ones shown) and the review status."""
        self.diff_view.value = self._diff_html()
        params: Sequence[Any] = list(self.backend.params)
        if rows and list(params) != self.editor.params:
            self.editor.set_params(params)
        self.refresh_review()

    def refresh_review(self) -> None:
        self.review_status.value = html.escape(self.backend.review_status())

    def _approve(self) -> None:
        self._info(self.backend.review("approved", self.review_note.value))
        self._on_template(True)  # approving may write the template into the folder and reload it

    def _reject(self) -> None:
        self._info(self.backend.review("rejected", self.review_note.value))
        self.refresh_review()

    def _propose(self) -> None:
        note = self.backend.propose_template()
        self._right_title = "proposed template"
        self._info(note)
        self._on_template(True)

    def _params_changed(self, params: Sequence[Any]) -> None:
        """New ranges make a new template version: it needs its own approval to be tuned
        (the review status says so and the Approve button offers it)."""
        self.backend.set_params(params)
        self._on_template(False)
