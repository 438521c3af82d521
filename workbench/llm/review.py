"""Review records: a human's decision on the exact text of a template.

A :class:`Review` names the sha256 of the template text it judged, so an approval never
carries over to a template that differs by even one character. ``require_approved`` is the
gate the tuner calls before it spends GPU time on a template.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from workbench.core.errors import ReviewError
from workbench.core.template import KernelTemplate


class Decision(enum.StrEnum):
    PROPOSED = "proposed"
    APPROVED = "approved"
    REJECTED = "rejected"


def template_text(template: KernelTemplate) -> str:
    """The exact text a reviewer approves: the source plus its parameters, constraints and
    launch rules as canonical JSON (so widening a range also needs a new approval)."""
    meta = {k: v for k, v in template.to_dict().items() if k != "source_sha256"}
    return template.source + "\n/* workbench template metadata\n" + json.dumps(
        meta, sort_keys=True, indent=1) + "\n*/\n"


def template_sha256(template: KernelTemplate | str) -> str:
    """sha256 (hex) of :func:`template_text` (or of a plain string)."""
    text = template if isinstance(template, str) else template_text(template)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Review:
    """One decision on one exact template text."""

    template_sha256: str
    decision: Decision
    reviewer: str
    time_utc: str  # ISO 8601, UTC
    note: str = ""

    @classmethod
    def make(cls, template: KernelTemplate | str, decision: Decision | str, reviewer: str,
             note: str = "", *, time_utc: datetime | None = None) -> Review:
        """A review of ``template`` now (or at ``time_utc``)."""
        if not reviewer.strip():
            raise ReviewError("a review needs a reviewer name", key="reviewer", value=reviewer)
        when = (time_utc or datetime.now(UTC)).astimezone(UTC)
        return cls(template_sha256=template_sha256(template), decision=Decision(decision),
                   reviewer=reviewer, time_utc=when.isoformat(timespec="seconds"), note=note)

    def to_dict(self) -> dict[str, Any]:
        return {"template_sha256": self.template_sha256, "decision": self.decision.value,
                "reviewer": self.reviewer, "time_utc": self.time_utc, "note": self.note}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Review:
        return cls(template_sha256=str(data["template_sha256"]),
                   decision=Decision(data["decision"]), reviewer=str(data["reviewer"]),
                   time_utc=str(data["time_utc"]), note=str(data.get("note", "")))


def latest_decision(template: KernelTemplate | str, reviews: Iterable[Review]) -> Review | None:
    """The most recent review of exactly this text (by ``time_utc``, then order given)."""
    digest = template_sha256(template)
    matching = [r for r in reviews if r.template_sha256 == digest]
    if not matching:
        return None
    return max(enumerate(matching), key=lambda pair: (pair[1].time_utc, pair[0]))[1]


def require_approved(template: KernelTemplate | str, reviews: Iterable[Review], *,
                     auto_approve: bool = False) -> Review | None:
    """Return the approving review, or raise ReviewError.

    With ``auto_approve=True`` (an explicit opt-in) an unreviewed template passes and None is
    returned; a template whose latest review is a rejection never passes.
    """
    digest = template_sha256(template)
    latest = latest_decision(template, reviews)
    if latest is not None and latest.decision is Decision.APPROVED:
        return latest
    if latest is not None and latest.decision is Decision.REJECTED:
        raise ReviewError(f"template {digest[:12]} was rejected by {latest.reviewer} at "
                          f"{latest.time_utc}: {latest.note or '(no note)'}",
                          template_sha256=digest, decision=latest.decision.value)
    if auto_approve:
        return None
    state = "only proposed" if latest is not None else "never reviewed"
    raise ReviewError(f"template {digest[:12]} is {state}; approve it before tuning (or set "
                      "auto_approve=True explicitly)", template_sha256=digest,
                      decision=latest.decision.value if latest else None)
