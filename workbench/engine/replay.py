"""ReplayRunner: the Runner protocol answered from recorded real measurements.

Lets everything above the engine (search, UI, agent, tests) run on a machine without a GPU.
Every result names the recording it came from in ``source`` (file, device and date); a
config the recording never measured comes back ``pruned`` with the reason "not in the
recording". A replay answers only for the template the recording holds
(:func:`template_differences`): the exact source text (its sha256, the key the store and
the approvals use too, so a comment or whitespace edit is another template), the parameter
names of the recorded configs, the entry (the recorded text's one ``extern "C"`` kernel)
and the launch rules (a sample of the recorded trials' grid, block and dynamic shared
memory). A runner built for another template still describes itself (``problem`` says
what differs, for the panel's header), but :meth:`ReplayRunner.measure` refuses it with a
:class:`RecordingError` naming the recording file and every difference, before any result
exists to be stored: answering by config key would pass another template's numbers off as
this one's.

A replay cannot measure again: under its search's condition ("read", what a recording
holds) ``measure(candidates, condition="read")`` answers with the recording's own
confirmation (each config the sweep's fastest few measured again in a fresh worker after
the sweep), every result marked ``extra[RECORDED_CONFIRMATION]``; any other condition is
:class:`~workbench.engine.conditions.ConditionUnavailable`.

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

from workbench.core.cuda_source import parse_cuda
from workbench.core.errors import RecordingError, WorkbenchError
from workbench.core.hardware import DeviceSpec, get_device, match_device_name
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Candidate, TrialResult
from workbench.core.template import KernelTemplate
from workbench.core.trial_labels import NOT_RECORDED_REASON
from workbench.engine.bench import CopyTiming
from workbench.engine.conditions import RECORDED_CONFIRMATION, ConditionUnavailable
from workbench.engine.recording import Recording, load_recording, recording_paths
from workbench.engine.worker import rule_for_event

log = logging.getLogger(__name__)


#: The one cache condition a recording holds (its sweep flushed the L2 by reading).
RECORDED_CONDITION = "read"


class ReplayRunner:
    """Answers ``baseline``/``measure``/``copy_timing`` from one recording of a kernel folder."""

    compiler = None  # it compiles nothing: no compiler keys its trials
    search_condition = RECORDED_CONDITION

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
        self.description = f"replay of {rec.label}"
        self.differences: tuple[str, ...] = ()
        self._check_template()
        self.pace_s = self._pace_s(pace)
        self._trials = rec.trial_index
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
        return replace(result, source=self.source)

    def _check_template(self) -> None:
        self.differences = tuple(template_differences(self.recording, self.template,
                                                      self.folder, self.device))
        if self.differences:
            log.warning("%s does not hold template %s: %s", self.recording.path,
                        self.template.source_sha256[:12], "; ".join(self.differences))

    @property
    def problem(self) -> str:
        """Why this replay cannot answer for its template ("" when it can)."""
        if not self.differences:
            return ""
        return (f"the recording {self.recording.path} does not hold this template: "
                + "; ".join(self.differences))

    def require_held(self) -> None:
        """RecordingError naming the recording file and what differs, unless the recording
        holds this runner's template."""
        if self.differences:
            raise RecordingError(
                self.problem + ". Measure this template on a GPU, or replay the recorded one",
                file=str(self.recording.path), key="template",
                value=self.template.source_sha256,
                expected=f"the template recorded (source sha256 "
                         f"{self.recording.template_sha256})",
                differences=list(self.differences))

    @property
    def facts(self) -> dict[str, object]:
        """The recorded machine's facts (device name, driver, CUDA version)."""
        return dict(self.recording.device)

    @property
    def shapes_dtypes(self) -> list[tuple[str, str]]:
        """The (shape, dtype) pairs the recording covers."""
        return sorted(self._baselines)

    def _recorded(self, condition: str) -> None:
        """ConditionUnavailable unless ``condition`` is the one the recording holds."""
        if condition != RECORDED_CONDITION:
            raise ConditionUnavailable(
                f"{self.description} cannot measure under '{condition}': its recording "
                f"holds one cache condition ('{RECORDED_CONDITION}')",
                runner=self.description, condition=condition,
                measurable=[RECORDED_CONDITION], why="a recording holds one condition")

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult:
        """The recorded baseline; RecordingError if the recording lacks this problem (under
        another condition than the recording's: ConditionUnavailable)."""
        if condition is not None:
            self._recorded(condition)
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
        recording lacks come back pruned as never measured; another text, parameter names,
        entry or launch rules are refused at :meth:`measure`)."""
        self.template = template
        self._check_template()

    def for_template(self, template: KernelTemplate) -> ReplayRunner:
        """A replay of the same recording for ``template`` (refused at :meth:`measure`
        unless the recording holds it)."""
        return ReplayRunner(self.folder, self.recording, template=template)

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        """Recorded results, in the order asked; unrecorded configs come back pruned.
        RecordingError before the first result when the recording does not hold the
        template (:meth:`require_held`). Under the recording's condition: its confirmation
        (the module docstring); under another: ConditionUnavailable."""
        if condition is not None:
            self._recorded(condition)
            if candidates:
                self.require_held()
            return iter([self._confirmation(c) for c in candidates])
        self.require_held()
        return self._answers(candidates)

    def _confirmation(self, candidate: Candidate) -> TrialResult:
        """The recording's re-measurement of ``candidate``, or pruned when it has none."""
        found = self.recording.confirmed_result(candidate.config, candidate.shape,
                                                candidate.dtype)
        if found is None:
            rule = rule_for_event("not_recorded")
            found = TrialResult(config=candidate.config, shape=candidate.shape,
                                dtype=candidate.dtype, status=rule.status,
                                reason=f"{self.source.removeprefix('replay:')} did not measure "
                                       f"it again at {candidate.shape}/{candidate.dtype}",
                                device=self.recording.device_name)
        return self._stamp(replace(found, extra={**found.extra, RECORDED_CONFIRMATION: True}))

    def _answers(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
        rule = rule_for_event("not_recorded")
        for candidate in candidates:
            if self.pace_s:
                time.sleep(self.pace_s)  # the recorded GPU's time per config (pace option)
            found = self._trials.get((candidate.config.key(), candidate.shape, candidate.dtype))
            if found is not None:
                yield self._stamp(found)
                continue
            # the config is the result's own field: the reason does not repeat it (lists
            # that print a config and its reason showed it twice)
            reason = (f"{NOT_RECORDED_REASON} {self.source.removeprefix('replay:')}: never "
                      f"measured at {candidate.shape}/{candidate.dtype}")
            yield self._stamp(TrialResult(config=candidate.config, shape=candidate.shape,
                                          dtype=candidate.dtype, status=rule.status,
                                          reason=reason, device=self.recording.device_name,
                                          bytes_moved=self.folder.bytes_moved_for(
                                              candidate.shape, candidate.dtype)))

    def status_counts(self) -> dict[str, int]:
        """How many recorded trials have each status."""
        counts: dict[str, int] = {}
        for t in self.recording.trials:
            counts[t.status.value] = counts.get(t.status.value, 0) + 1
        return counts



#: recorded trials whose launch is compared with the template's rules (spread over the
#: recording; all of them take about a second on the largest sample recording)
LAUNCH_SAMPLE = 64


def template_differences(recording: Recording, template: KernelTemplate,
                         folder: KernelFolder, device: DeviceSpec) -> list[str]:
    """What makes ``template`` another template than the one ``recording`` measured, each
    as one sentence ([] when the recording holds it).

    Recordings store the sha256 of the exact template text (``template_sha256``; a
    comment, whitespace or line-ending byte that differs makes another template, as it
    does for the store's trials and the approvals), the configs (their keys are the
    parameter names) and each trial's launch; the entry is derived from the recorded text
    (its one ``extern "C"`` kernel: the folder loader accepts no other entry)."""
    out: list[str] = []
    if recording.template_sha256 != template.source_sha256:
        out.append(f"template_sha256: the recording was measured with template text "
                   f"{recording.template_sha256[:12]}, this template's text is "
                   f"{template.source_sha256[:12]} (any byte counts, comments and "
                   f"whitespace included)")
        return out  # names, entry and launch of another text say nothing more
    recorded_names = recording.config_names
    names = set(template.param_names)
    if recording.trials and recorded_names != names:
        out.append(f"parameters: the recorded configs have {sorted(recorded_names)}; the "
                   f"template has {sorted(names)} (missing from the template: "
                   f"{sorted(recorded_names - names)}, not recorded: "
                   f"{sorted(names - recorded_names)})")
    try:
        kernels = sorted(k.name for k in parse_cuda(template.source,
                                                     template.source_name).kernels
                         if k.extern_c)
    except WorkbenchError as exc:  # the recorded text parses; this guards a built template
        kernels = [f"none readable ({exc.message})"]
    if kernels != [template.entry]:
        out.append(f"entry: the recorded text's extern \"C\" kernels are {kernels}; the "
                   f"template's entry is {template.entry!r}")
    if not out:
        out.extend(_launch_differences(recording, template, folder, device))
    return out


def _launch_differences(recording: Recording, template: KernelTemplate, folder: KernelFolder,
                        device: DeviceSpec) -> list[str]:
    launched = [t for t in recording.trials if isinstance(t.extra.get("launch"), dict)]
    step = max(1, len(launched) // LAUNCH_SAMPLE)
    for trial in launched[::step]:
        recorded = trial.extra["launch"]
        try:
            env = folder.env(trial.shape, trial.dtype, device)
            launch = template.launch_for(trial.config, env)
        except WorkbenchError:
            continue  # a shape the folder no longer has: nothing to compare it with
        now = {"grid": list(launch.grid), "block": list(launch.block),
               "smem_bytes": launch.smem_bytes}
        for key, value in now.items():
            if key in recorded and recorded[key] != value:
                return [f"launch.{key}: the recording launched {dict(trial.config)} at "
                        f"{trial.shape}/{trial.dtype} with {key} {recorded[key]}; this "
                        f"template's rules give {value}"]
    return []
