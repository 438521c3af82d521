"""Approval: one key, one review record, one version id, one gate.

The **approval key** of a template is the sha256 of exactly what gets tuned: the source,
the parameters with their ranges, the constraints and the launch rules
(:func:`approval_text`). Widening a range changes the key, so it makes a new template
version that needs its own approval; an approval never carries over to a template that
differs by one character or one range bound.

The **version id** is ``<kernel>-<first 12 hex of the key>``: the same template always has
the same id, in the panel, the agent and the store. A **review** is the store's
:class:`~workbench.store.base.Review` (its ``approved_text_sha256`` holds the key the
reviewer judged, whatever the decision). :func:`require_approved` is the gate the one tune
path calls before any GPU time: the kernel folder's own curated template passes (it is
reviewed with the folder); any other template needs an approval of its key, unless the
caller explicitly sets ``auto_approve``; a rejection always stops it.

What a version and a review keep (source, parameters, constraints, launch rules, diff, note)
is scrubbed of configured keys before it is stored (:mod:`workbench.core.secrets`); proposals
are scrubbed where they arrive, so this only changes a template that came in another way.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from workbench.core.errors import ReviewError
from workbench.core.kernel_folder import KernelFolder
from workbench.core.secrets import scrub, scrub_data
from workbench.core.template import KernelTemplate
from workbench.store.base import Review, Store, TemplateVersion

__all__ = ["CURATED_REVIEWER", "DECISIONS", "Approval", "approval_key", "approval_text",
           "ensure_version", "latest_review", "record_review", "require_approved",
           "version_id"]

DECISIONS = ("proposed", "approved", "rejected")
CURATED_REVIEWER = "kernel folder (curated template)"


def approval_text(template: KernelTemplate) -> str:
    """The exact text a reviewer approves: the source plus its parameters, constraints,
    launch rules and shape-aware range expressions as canonical JSON (so widening a range,
    or making it follow the shape differently, also needs a new approval)."""
    meta = {k: v for k, v in template.to_dict().items() if k != "source_sha256"}
    if template.shape_bounds:
        meta["shape_aware"] = {b.name: b.to_dict() for b in template.shape_bounds}
    return template.source + "\n/* workbench template metadata\n" + json.dumps(
        meta, sort_keys=True, indent=1) + "\n*/\n"


def approval_key(template: KernelTemplate) -> str:
    """sha256 (hex) of :func:`approval_text`: what a review approves."""
    return hashlib.sha256(approval_text(template).encode("utf-8")).hexdigest()


def version_id(kernel: str, template: KernelTemplate) -> str:
    """The one version id of ``template``: ``<kernel>-<key[:12]>``."""
    return f"{kernel}-{approval_key(template)[:12]}"


def ensure_version(store: Store, kernel: str, template: KernelTemplate, *, origin: str,
                   parent_id: str | None = None, diff: str = "",
                   session_id: str | None = None) -> str:
    """Store ``template`` as a version (once: the id is its key) and return the id.

    The stored text is scrubbed of configured keys; where that changes the source, the
    stored ``source_sha256`` is the scrubbed text's (the id stays the template's key)."""
    vid = version_id(kernel, template)
    if vid not in {v.id for v in store.template_versions(kernel)}:
        source = scrub(template.source)
        sha = (template.source_sha256 if source == template.source
               else hashlib.sha256(source.encode("utf-8")).hexdigest())
        store.add_template_version(TemplateVersion(
            id=vid, kernel=kernel, source_text=source, source_sha256=sha,
            params=scrub_data({p.name: p.to_dict() for p in template.params}),
            constraints=tuple(scrub(c.text) for c in template.constraints),
            launch=scrub_data(template.launch.to_dict()), origin=origin, parent_id=parent_id,
            diff_vs_parent=scrub(diff), session_id=session_id, created=_now()))
    return vid


def record_review(store: Store, kernel: str, template: KernelTemplate, decision: str,
                  reviewer: str, note: str = "", *, origin: str = "curated") -> Review:
    """Record a decision on ``template`` (its version is stored first where needed).

    A rejection needs a note saying why; every review needs a reviewer name."""
    if decision not in DECISIONS:
        raise ReviewError(f"decision must be one of {list(DECISIONS)}, got {decision!r}",
                          key="decision", value=decision, expected=list(DECISIONS))
    if not reviewer.strip():
        raise ReviewError("a review needs a reviewer name", key="reviewer", value=reviewer,
                          expected="a non-empty name")
    if decision == "rejected" and not note.strip():
        raise ReviewError("a rejection needs a note saying why", key="note", value=note,
                          expected="a non-empty note")
    vid = ensure_version(store, kernel, template, origin=origin)
    review = Review(template_version_id=vid, decision=decision, reviewer=scrub(reviewer),
                    time=_now(), note=scrub(note), approved_text_sha256=approval_key(template))
    store.add_review(review)
    return review


def latest_review(store: Store, kernel: str, template: KernelTemplate,
                  *, decided_only: bool = True) -> Review | None:
    """The newest review of exactly this template's key (``proposed`` ones skipped unless
    ``decided_only=False``)."""
    key = approval_key(template)
    reviews = [r for r in store.reviews(version_id(kernel, template))
               if r.approved_text_sha256 == key
               and (not decided_only or r.decision != "proposed")]
    return reviews[-1] if reviews else None


@dataclass(frozen=True)
class Approval:
    """Why a template may be tuned: an approving review, the curated folder, or an explicit
    auto-approve."""

    version_id: str
    key: str
    by: str  # the reviewer, CURATED_REVIEWER, or "auto_approve"
    review: Review | None = None


def require_approved(store: Store, folder: KernelFolder, template: KernelTemplate, *,
                     auto_approve: bool = False) -> Approval:
    """The gate before GPU time: an :class:`Approval`, or ReviewError saying what is missing.

    The folder's curated template as shipped passes; a rejected key never passes; any other
    template needs an approving review of its key, or ``auto_approve=True`` set explicitly.
    """
    key = approval_key(template)
    vid = version_id(folder.name, template)
    latest = latest_review(store, folder.name, template)
    if latest is not None and latest.decision == "rejected":
        raise ReviewError(f"template version {vid} was rejected by {latest.reviewer} at "
                          f"{latest.time}: {latest.note or '(no note)'}", version_id=vid,
                          template_key=key, decision="rejected")
    if latest is not None and latest.decision == "approved":
        return Approval(vid, key, latest.reviewer, latest)
    if key == approval_key(folder.template):
        return Approval(vid, key, CURATED_REVIEWER)
    if auto_approve:
        return Approval(vid, key, "auto_approve")
    raise ReviewError(f"template version {vid} is not approved (a proposed template, or "
                      f"edited ranges make a new version); approve it before tuning, or set "
                      f"auto_approve explicitly", version_id=vid, template_key=key,
                      decision=None, expected="an approving review of this version")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
