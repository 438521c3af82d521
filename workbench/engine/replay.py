"""ReplayRunner: the Runner protocol answered from recorded real measurements.

Lets everything above the engine (search, UI, agent, tests) run on a machine without a GPU.
Every result names the recording it came from in ``source`` (file, device and date); a
config the recording never measured comes back ``pruned`` with the reason "not in the
recording". When the recording was made from a different template text than the folder's
current one, a warning goes into ``description`` and into every result (``extra["warning"]``)
but the replay still answers.

``pace="recorded"`` answers at the pace the recording's sweep measured (its wall time per
config, e.g. 43 ms on the H100 for silu_and_mul) instead of at once, so the panel behaves as
it would live (``WORKBENCH_REPLAY_PACE=recorded`` selects it through ``select_runner``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from workbench.core.errors import RecordingError
from workbench.core.hardware import DeviceSpec, get_device, match_device_name
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Candidate, Config, TrialResult
from workbench.core.template import KernelTemplate
from workbench.engine.bench import CopyTiming
from workbench.engine.recording import Recording, load_recording, recording_paths
from workbench.engine.worker import rule_for_event

log = logging.getLogger(__name__)


class ReplayRunner:
    """Answers ``baseline``/``measure``/``copy_timing`` from one recording of a kernel folder."""

    def __init__(self, folder: KernelFolder, recording: str | Path | Recording | None = None,
                 template: KernelTemplate | None = None, *, pace: str | float = 0.0) -> None:
        self.folder = folder
        self.template = template or folder.template
        if isinstance(recording, Recording):
            self.recording = recording
        else:
            path = Path(recording) if recording is not None else self._newest(folder)
            self.recording = load_recording(path)
        rec = self.recording
        if rec.kernel != folder.name:
            raise RecordingError(f"{rec.path}: kernel is {rec.kernel!r}, but the folder is "
                                 f"{folder.name!r}", file=str(rec.path), key="kernel",
                                 value=rec.kernel, expected=folder.name)
        spec_key = str(rec.device.get("spec") or match_device_name(rec.device_name) or "")
        if not spec_key:  # never a silent default device: the limits would be another GPU's
            raise RecordingError(f"{rec.path}: device {rec.device_name!r} matches no device "
                                 f"table entry and the recording names no 'spec'",
                                 file=str(rec.path), key="device.spec", value=rec.device_name,
                                 expected="a device.spec key of workbench.core.hardware.DEVICES")
        self.device: DeviceSpec = get_device(spec_key)
        file_name = rec.path.name if rec.path else "recording"
        self.source = f"replay:{file_name} ({rec.device_name}, {rec.date})"
        self.warning = ""
        if rec.template_sha256 != self.template.source_sha256:
            self.warning = (f"the recording was measured with a different template text "
                            f"(sha256 {rec.template_sha256[:12]}, folder's "
                            f"{self.template.source_sha256[:12]}): its numbers may not match "
                            f"this template")
            log.warning("%s: %s", file_name, self.warning)
        self.description = f"replay of {rec.label}"
        if self.warning:
            self.description += f" (warning: {self.warning})"
        self.pace_s = self._pace_s(pace)
        self._trials = {(t.config.key(), t.shape, t.dtype): t for t in rec.trials}
        self._baselines = {(t.shape, t.dtype): t for t in rec.baseline}
        self._copies = {(c.shape, c.dtype): c for c in rec.copy}

    def _pace_s(self, pace: str | float) -> float:
        """Seconds per answered config: a number, or "recorded" (the sweep's wall time per
        config; 0 when the recording has no sweep summary)."""
        if pace == "recorded":
            sweep = self.recording.sweep or {}
            configs, wall_s = sweep.get("configs"), sweep.get("wall_s")
            return float(wall_s) / int(configs) if configs and wall_s else 0.0
        try:
            value = float(pace)
        except (TypeError, ValueError):
            raise RecordingError(f"replay pace must be seconds per config or 'recorded', got "
                                 f"{pace!r}", key="pace", value=pace,
                                 expected="a number >= 0 or 'recorded'") from None
        if value < 0:
            raise RecordingError(f"replay pace must be >= 0, got {value}", key="pace",
                                 value=value, expected="a number >= 0 or 'recorded'")
        return value

    @staticmethod
    def _newest(folder: KernelFolder) -> Path:
        paths = recording_paths(folder.path)
        if not paths:
            raise RecordingError(f"{folder.path}/recordings has no recordings (*.json)",
                                 file=str(Path(folder.path) / "recordings"), key="",
                                 value=None, expected="at least one recording")
        return paths[-1]

    def __enter__(self) -> ReplayRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release."""

    def _stamp(self, result: TrialResult) -> TrialResult:
        extra = dict(result.extra)
        if self.warning:
            extra["warning"] = self.warning
        return replace(result, source=self.source, extra=extra)

    @property
    def facts(self) -> dict[str, object]:
        """The recorded machine's facts (device name, driver, CUDA version)."""
        return dict(self.recording.device)

    @property
    def shapes_dtypes(self) -> list[tuple[str, str]]:
        """The (shape, dtype) pairs the recording covers."""
        return sorted(self._baselines)

    def baseline(self, shape: str, dtype: str) -> TrialResult:
        """The recorded baseline; RecordingError if the recording lacks this problem."""
        try:
            return self._stamp(self._baselines[(shape, dtype)])
        except KeyError:
            raise RecordingError(
                f"{self.recording.path}: no baseline for shape {shape!r} dtype {dtype!r}",
                file=str(self.recording.path), key="baseline", value=[shape, dtype],
                expected=f"one of {self.shapes_dtypes}") from None

    def copy_timing(self, shape: str, dtype: str) -> CopyTiming:
        """The recorded device-to-device copy for this problem's bytes."""
        try:
            return self._copies[(shape, dtype)]
        except KeyError:
            raise RecordingError(
                f"{self.recording.path}: no copy timing for {shape!r}/{dtype!r}",
                file=str(self.recording.path), key="copy", value=[shape, dtype],
                expected=f"one of {sorted(self._copies)}") from None

    def use_template(self, template: KernelTemplate) -> None:
        """Answer for ``template`` from now on (``tune --widen``: wider ranges; configs the
        recording lacks come back pruned as never measured)."""
        self.template = template

    def measure(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
        """Recorded results, in the order asked; unrecorded configs come back pruned."""
        rule = rule_for_event("not_recorded")
        for candidate in candidates:
            if self.pace_s:
                time.sleep(self.pace_s)  # the recorded GPU's time per config (pace option)
            found = self._trials.get((candidate.config.key(), candidate.shape, candidate.dtype))
            if found is not None:
                yield self._stamp(found)
                continue
            reason = (f"not in the recording {self.source.removeprefix('replay:')}: config "
                      f"{dict(candidate.config)} at {candidate.shape}/{candidate.dtype} was "
                      f"never measured")
            yield self._stamp(TrialResult(config=candidate.config, shape=candidate.shape,
                                          dtype=candidate.dtype, status=rule.status,
                                          reason=reason, device=self.recording.device_name,
                                          bytes_moved=self.folder.bytes_moved_for(
                                              candidate.shape, candidate.dtype)))

    def recorded_confirmation(self, config: Config, shape: str,
                              dtype: str) -> TrialResult | None:
        """The recording's independent re-measurement of ``config`` (made in a fresh worker
        after the sweep, for each problem's fastest few configs), or None."""
        found = self.recording.confirmed_result(config, shape, dtype)
        return self._stamp(found) if found is not None else None

    def status_counts(self) -> dict[str, int]:
        """How many recorded trials have each status."""
        counts: dict[str, int] = {}
        for t in self.recording.trials:
            counts[t.status.value] = counts.get(t.status.value, 0) + 1
        return counts

