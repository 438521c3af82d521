"""The validation gate for a template proposal, and ``propose_template`` with its repair round.

A proposal passes when, in order:

1. every parameter definition is valid (kind, range, default) and names no problem symbol;
2. every declared parameter is used in the source as a whole-word identifier (outside
   comments and outside its own ``#ifndef``/``#define`` guard);
3. the entry point is in the source;
4. constraints and launch rules parse with the safe parser and name only known symbols
   (parameters, shape names, ``elem_bytes``, device limits);
5. for every shape and dtype the space is non-empty (the binding constraint is named), the
   defaults satisfy the constraints and give a launch the device accepts;
6. it compiles at its defaults for every dtype (nvcc);
7. the space-wide gate (:mod:`workbench.llm.space_gate`): its defaults, every corner of
   its space and a seeded sample of it match the baseline's outputs on the GPU, for every
   dtype at the check shape — only with a ``correctness`` check (a GPU); otherwise the
   report says ``unverified: needs a GPU`` and how many configs the gate would check.

Problems are data (:class:`ValidationProblem`), never exceptions, so they can be fed back to
the model (one repair round) and then shown to the human.

Every reply and proposal :func:`propose_template` receives is scrubbed of configured keys
(:func:`scrub_proposal`) before it is validated, diffed or kept, whichever client sent it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from workbench.core.code_mask import code_mask
from workbench.core.errors import (
    CompilerNotFoundError,
    EmptySpaceError,
    ExpressionError,
    ParameterError,
    SpaceError,
    TemplateError,
)
from workbench.core.expr import parse_constraint, parse_expr
from workbench.core.feasibility import evaluated_launch_rejection
from workbench.core.hardware import DeviceSpec, default_device, device_env
from workbench.core.kernel_folder import KernelFolder
from workbench.core.params import parameter_from_dict
from workbench.core.proposal import TemplateProposal
from workbench.core.records import Candidate, Config, Status, TrialResult
from workbench.core.secrets import scrub, scrub_data
from workbench.core.template import KernelTemplate
from workbench.llm.diagnostics import describe_compile_failure
from workbench.llm.errors import (
    LLMInvalidJSONError,
    LLMReplyError,
    LLMSchemaError,
    LLMTruncatedError,
)
from workbench.llm.prompts import KernelBrief, PromptContext, repair_messages, template_messages
from workbench.llm.space_gate import GATE_SAMPLE, GateReport, run_gate
from workbench.templater import unified_diff

if TYPE_CHECKING:
    from workbench.llm.client import ChatClient

UNVERIFIED_NOTE = "unverified: needs a GPU"
_LISTED_FAILURES = 8  # failing configs named one by one (to the human and the repair round)


class CorrectnessCheck(Protocol):
    """Runs ``template`` at ``config`` on a GPU and compares with the reference."""

    def __call__(self, template: KernelTemplate, config: Config, shape: str,
                 dtype: str) -> TrialResult: ...


class CompilerLike(Protocol):
    """What validation needs of :class:`workbench.engine.compiler.Compiler`."""

    def compile(self, instance: Any, *, timeout_s: float | None = None) -> Any: ...


class _GpuCheck:
    """See :func:`gpu_correctness`. ``many`` runs a batch in one runner (parallel compiles)."""

    def __init__(self, folder: KernelFolder, runner_options: Mapping[str, Any]) -> None:
        self.folder = folder
        self.options = dict(runner_options)

    def many(self, template: KernelTemplate, configs: Sequence[Config], shape: str,
             dtype: str) -> list[TrialResult]:
        from workbench.engine.open import open_runner  # the GPU edge, only when asked for

        if "settings" not in self.options:
            from workbench.engine.bench import BenchSettings

            # the gate checks outputs; a few timed repetitions are enough
            self.options["settings"] = BenchSettings(max_time_s=0.02, min_reps=3, max_reps=10)
        with closing(open_runner(self.folder, template, **self.options)) as runner:
            by_config = {r.config: r for r in runner.measure(
                [Candidate(Config(c), shape, dtype) for c in configs])}
        return [by_config[Config(c)] for c in configs]

    def __call__(self, template: KernelTemplate, config: Config, shape: str,
                 dtype: str) -> TrialResult:
        return self.many(template, [config], shape, dtype)[0]


def local_correctness(folder: KernelFolder) -> CorrectnessCheck | None:
    """:func:`gpu_correctness` where this machine can run kernels (pycuda and an NVIDIA
    device node), else None: the gate then reports the template unverified."""
    import importlib.util
    import os

    if importlib.util.find_spec("pycuda") is None or not (
            os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")):
        return None
    return gpu_correctness(folder)


def gpu_correctness(folder: KernelFolder, **runner_options: Any) -> CorrectnessCheck:
    """A :class:`CorrectnessCheck` on the local GPU: a ``LocalRunner`` for the proposed
    template verifies configs against the baseline's outputs (and times them briefly).

    Raises NoGPUError when this machine cannot run kernels (checked on first use).
    """
    return _GpuCheck(folder, runner_options)


@dataclass(frozen=True)
class ValidationProblem:
    """One named problem: ``check`` is the gate that failed, ``subject`` what it is about."""

    check: str  # parameter | unused_parameter | entry | expression | empty_space | defaults |
    #             launch | compile | correctness
    subject: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __str__(self) -> str:
        return f"[{self.check}] {self.subject}: {self.message}"


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of the gate. ``status``: ``ok`` | ``unverified`` | ``failed``."""

    problems: tuple[ValidationProblem, ...]
    checks_passed: tuple[str, ...]
    checks_skipped: tuple[str, ...]  # each with its reason, e.g. "correctness: unverified: needs a GPU"
    verified_on_gpu: bool
    space_sizes: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)
    gate: GateReport | None = field(default=None, compare=False, hash=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def status(self) -> str:
        if self.problems:
            return "failed"
        return "ok" if self.verified_on_gpu else "unverified"

    @property
    def note(self) -> str:
        if self.problems:
            return f"{len(self.problems)} problem(s)"
        if self.verified_on_gpu:
            return self.gate.verdict if self.gate is not None else "verified on the GPU"
        return UNVERIFIED_NOTE

    def messages(self) -> list[str]:
        return [str(p) for p in self.problems]

    def checks(self) -> set[str]:
        """The names of the checks that found problems."""
        return {p.check for p in self.problems}


def scrub_proposal(proposal: TemplateProposal) -> TemplateProposal:
    """``proposal`` with every configured key scrubbed from its source, parameter
    rationales, constraints, launch rules and summary (itself when nothing changed)."""
    data = proposal.model_dump(mode="json")
    clean = scrub_data(data)
    return proposal if clean == data else TemplateProposal.model_validate(clean)


def used_outside_guard(source: str, name: str) -> bool:
    """Whether ``name`` occurs as a whole word in code, outside comments and its own guard."""
    mask = code_mask(source)
    code = "".join(ch if keep or ch == "\n" else " " for ch, keep in zip(source, mask, strict=True))
    guard = re.compile(rf"^[ \t]*#[ \t]*(ifndef|ifdef|define|undef)[ \t]+{re.escape(name)}\b.*$",
                       re.M)
    code = guard.sub("", code)
    return re.search(rf"\b{re.escape(name)}\b", code) is not None


def _known_names(folder: KernelFolder, device: DeviceSpec) -> list[str]:
    shape_names = sorted({n for sizes in folder.shapes.values() for n in sizes})
    return [*shape_names, "elem_bytes", *device_env(device)]


def validate_proposal(proposal: TemplateProposal, folder: KernelFolder, *,
                      device: DeviceSpec | None = None, compiler: CompilerLike | None = None,
                      correctness: CorrectnessCheck | None = None,
                      dtypes: Sequence[str] | None = None, gate_sample: int = GATE_SAMPLE,
                      gate_seed: int = 0) -> ValidationReport:
    """Run every check on ``proposal`` for ``folder``; see the module docstring.

    ``compiler=None`` skips compiling (reported in ``checks_skipped``); ``correctness=None``
    (no GPU) leaves the report ``unverified: needs a GPU``.
    """
    spec = device or default_device()
    problems: list[ValidationProblem] = []
    passed: list[str] = []
    skipped: list[str] = []
    sizes: dict[str, int] = {}
    dts = list(dtypes or folder.dtypes)
    known_env = _known_names(folder, spec)
    entry = folder.template.entry if folder.template is not None else folder.baseline.entry

    def problem(check: str, subject: str, message: str, **details: Any) -> None:
        problems.append(ValidationProblem(check, subject, message, details))

    # 1. parameters
    params = []
    names = [p.name for p in proposal.parameters]
    for p in proposal.parameters:
        if names.count(p.name) > 1:
            problem("parameter", p.name, "declared more than once")
            continue
        if p.name in known_env or p.name in ("SCALAR_T", "ELEM_BYTES", "WB_KERNEL_NAME"):
            problem("parameter", p.name, "clashes with a reserved, shape or device name")
            continue
        try:
            params.append(parameter_from_dict(p.name, p.to_core_dict()))
        except ParameterError as exc:
            problem("parameter", p.name, exc.message)
    if not proposal.parameters:
        problem("parameter", "(none)", "the proposal declares no parameters")
    n_before = len(problems)

    # 2. every parameter used in the source or in a launch rule (a block count that only
    # sizes the grid of a grid-stride kernel is a real knob: Kernel Tuner's grid_div ones)
    launch_text = " ".join([*proposal.launch.grid, *proposal.launch.block,
                            proposal.launch.smem_bytes])
    for p in proposal.parameters:
        if not used_outside_guard(proposal.source, p.name) and \
                not re.search(rf"\b{re.escape(p.name)}\b", launch_text):
            problem("unused_parameter", p.name,
                    f"parameter {p.name} is declared but never used in the source (outside "
                    "comments and its own #ifndef/#define guard) or the launch rules; use it "
                    "or remove it")
    # 3. entry point
    if not re.search(rf"\b__global__\b[^;{{]*\b{re.escape(entry)}\s*\(", proposal.source):
        problem("entry", entry, f'the source has no `extern "C" __global__ void {entry}(...)`')

    # 4. expressions
    known = [*known_env, *(p.name for p in proposal.parameters)]
    for text in proposal.constraints:
        try:
            parse_constraint(text, known_names=known)
        except ExpressionError as exc:
            problem("expression", f"constraint `{text}`", exc.message, piece=exc.piece)
    for label, exprs in (("grid", proposal.launch.grid), ("block", proposal.launch.block),
                         ("smem_bytes", [proposal.launch.smem_bytes])):
        for text in exprs:
            try:
                parse_expr(text, known_names=known)
            except ExpressionError as exc:
                problem("expression", f"launch {label} `{text}`", exc.message, piece=exc.piece)
    if len(problems) == n_before:
        passed.append("static")

    template: KernelTemplate | None = None
    if not problems:
        try:
            template = proposal.to_template(name=folder.name, entry=entry, known_names=known_env)
        except (ExpressionError, ParameterError, TemplateError) as exc:
            problem("expression", "template", exc.message)

    # 5. space per shape and dtype; defaults feasible and launchable
    if template is not None:
        n_before = len(problems)
        defaults = template.default_config()
        for shape in folder.shapes:
            for dtype in dts:
                where = f"{shape}/{dtype}"
                env = folder.env(shape, dtype, spec)
                try:
                    space = template.space(env)
                    sizes[where] = space.size
                    space.require_nonempty()
                except EmptySpaceError as exc:
                    problem("empty_space", where, exc.message, binding=exc.binding)
                    continue
                except (SpaceError, ExpressionError) as exc:
                    problem("expression", where, exc.message)
                    continue
                rejected = space.rejection(defaults)
                if rejected is not None:
                    problem("defaults", where, f"the defaults {dict(defaults)} violate `{rejected}`",
                            constraint=rejected)
                    continue
                try:
                    launch = template.launch_for(defaults, env)
                except (TemplateError, ExpressionError) as exc:
                    problem("launch", where, exc.message)
                    continue
                why = evaluated_launch_rejection(spec, launch)
                if why:
                    problem("launch", where, f"at the defaults: {why}")
        if len(problems) == n_before:
            passed.append("space")

    # 6. compile at the defaults
    if template is not None and not problems:
        if compiler is None:
            skipped.append("compile: no compiler given")
        else:
            n_before = len(problems)
            for dtype in dts:
                instance = template.render(template.default_config(), dtype)
                try:
                    result = compiler.compile(instance)
                except CompilerNotFoundError as exc:
                    skipped.append(f"compile: {exc.message}")
                    break
                if not result.ok:
                    # The message goes back to the model: only template-owned diagnostics.
                    log_tail = "\n".join(result.log.strip().splitlines()[-12:])
                    problem("compile", dtype, describe_compile_failure(
                        result.error_kind, result.error_summary, result.log, instance.source),
                            log_excerpt=log_tail, line=result.error_line,
                            log_path=result.log_path)
            if len(problems) == n_before and not any(s.startswith("compile") for s in skipped):
                passed.append("compile")

    # 7. correctness across the space on the GPU
    verified = False
    gate: GateReport | None = None
    if template is not None and not problems:
        spaces = {d: template.space(folder.env(folder.check_shape, d, spec)) for d in dts}
        others = {s: {d: template.space(folder.env(s, d, spec)) for d in dts}
                  for s in folder.shapes if s != folder.check_shape}
        gate = run_gate(template, spaces, folder.check_shape, correctness,
                        sample=gate_sample, seed=gate_seed, other_shapes=others)
        if not gate.on_gpu:
            skipped.append(f"correctness: {UNVERIFIED_NOTE}")
        else:
            for failure in gate.failures[:_LISTED_FAILURES]:
                problem("correctness" if failure.status == Status.WRONG_RESULT.value
                        else "launch", f"{failure.shape}/{failure.dtype} "
                        f"{dict(failure.config)}", f"{failure.status}: {failure.reason}",
                        config=dict(failure.config), dtype=failure.dtype)
            if len(gate.failures) > _LISTED_FAILURES:
                problem("correctness", "gate", f"{len(gate.failures) - _LISTED_FAILURES} more "
                        f"failing configs; {gate.verdict}")
            if gate.only_defaults_pass:
                problem("correctness", "gate", gate.only_defaults_reason())
            verified = not gate.failures
            if verified:
                passed.append("correctness")
    return ValidationReport(problems=tuple(problems), checks_passed=tuple(passed),
                            checks_skipped=tuple(skipped), verified_on_gpu=verified,
                            space_sizes=sizes, gate=gate)


@dataclass(frozen=True)
class ProposalAttempt:
    """One model reply and what the gate made of it."""

    round: int  # 0 = first proposal, 1.. = repair rounds
    raw_reply: str
    proposal: TemplateProposal | None
    report: ValidationReport | None
    problems: tuple[str, ...]  # what was wrong (reply errors or validation problems)


@dataclass(frozen=True)
class ProposalOutcome:
    """What reaches the human: the last proposal, its report and every attempt.

    ``status``: ``ok`` (verified on a GPU), ``unverified`` (passed every check it could run;
    needs a GPU), ``failed`` (problems remain after the repair rounds; see ``reasons``).
    """

    proposal: TemplateProposal | None
    template: KernelTemplate | None
    report: ValidationReport | None
    attempts: tuple[ProposalAttempt, ...]
    diff: str  # baseline -> proposed source

    @property
    def status(self) -> str:
        if self.report is None:
            return "failed"
        return self.report.status

    @property
    def reasons(self) -> list[str]:
        return list(self.attempts[-1].problems) if self.attempts else ["no attempt made"]


def propose_template(folder: KernelFolder, client: ChatClient, *,
                     context: PromptContext | None = None, device: DeviceSpec | None = None,
                     compiler: CompilerLike | None = None,
                     correctness: CorrectnessCheck | None = None,
                     current: TemplateProposal | None = None, guidance: str = "",
                     repair_rounds: int = 1,
                     on_attempt: Callable[[ProposalAttempt], None] | None = None) -> ProposalOutcome:
    """Ask the model for a template, validate it, and repair it at most ``repair_rounds`` times.

    Unusable replies (invalid JSON, schema violations, truncation) count as problems and go
    to the repair round like validation problems. Endpoint failures and refusals raise
    (LLMEndpointError, LLMRefusalError). The result always goes to a human for review.
    """
    spec = device or (context.device if context is not None else default_device())
    ctx = context or PromptContext(device=spec)
    kernel = KernelBrief.from_folder(folder)
    messages = template_messages(kernel, ctx, current=current, guidance=guidance)
    attempts: list[ProposalAttempt] = []
    proposal: TemplateProposal | None = None
    report: ValidationReport | None = None
    for round_index in range(repair_rounds + 1):
        purpose = "template" if round_index == 0 else f"template-repair-{round_index}"
        raw = ""
        proposal, report = None, None
        try:
            reply = client.chat(messages, schema=TemplateProposal, purpose=purpose)
            raw = scrub(reply.text)
            proposal = scrub_proposal(client.parse_reply(raw, TemplateProposal))
        except (LLMInvalidJSONError, LLMSchemaError, LLMTruncatedError) as exc:
            raw = raw or scrub(exc.raw_reply)
            problems: tuple[str, ...] = (f"[reply] {exc.message}",)
            if isinstance(exc, LLMSchemaError):
                problems = tuple(f"[reply] schema: {e}" for e in exc.errors)
        except LLMReplyError:
            raise
        else:
            report = validate_proposal(proposal, folder, device=spec, compiler=compiler,
                                       correctness=correctness)
            problems = tuple(report.messages())
        attempt = ProposalAttempt(round_index, raw, proposal, report, problems)
        attempts.append(attempt)
        if on_attempt is not None:
            on_attempt(attempt)
        if not problems:
            break
        if round_index < repair_rounds:
            messages = repair_messages(kernel, ctx, raw, problems)
    template = None
    if proposal is not None and report is not None and report.ok:
        template = proposal.to_template(name=folder.name, entry=folder.template.entry,
                                        known_names=_known_names(folder, spec))
    diff = unified_diff(folder.baseline.source, proposal.source) if proposal is not None else ""
    return ProposalOutcome(proposal=proposal, template=template, report=report,
                           attempts=tuple(attempts), diff=diff)
