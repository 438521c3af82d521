"""What a trial's status is called on screen: the status, or "not in recording" for a
config a replay's recording never measured.

A replay answers such a config ``pruned`` (the classification table's ``not_recorded``
row, so every strategy and budget treats it as a config that cost no GPU time), with a
reason that starts with :data:`NOT_RECORDED_REASON`. On screen and in tallies it is not
mixed with configs pruned by a hardware limit or a constraint: "268 stored: ok 64, pruned
204" hid that most of the 204 were simply absent from the recording.
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.core.records import Status, TrialResult

NOT_IN_RECORDING = "not in recording"
#: how :class:`workbench.engine.replay.ReplayRunner` starts the reason of such a result
NOT_RECORDED_REASON = "not in the recording"


def status_label(result: TrialResult) -> str:
    """``result``'s status value, or :data:`NOT_IN_RECORDING`."""
    if result.status is Status.PRUNED and result.reason.startswith(NOT_RECORDED_REASON):
        return NOT_IN_RECORDING
    return result.status.value


def label_counts(results: Iterable[TrialResult]) -> dict[str, int]:
    """How many of ``results`` carry each :func:`status_label`."""
    counts: dict[str, int] = {}
    for r in results:
        label = status_label(r)
        counts[label] = counts.get(label, 0) + 1
    return counts
