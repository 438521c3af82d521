"""``offline_template(folder)``: the semantic templater (:func:`.semantic.lift_kernel`) on a
kernel folder's baseline, checked to launch like the kernel as written at its defaults."""

from __future__ import annotations

import traceback
from pathlib import Path

from workbench.core.cuda_source import parse_cuda
from workbench.core.errors import ExpressionError, TemplateError, WorkbenchError
from workbench.core.hardware import DEVICES, device_env
from workbench.core.kernel_folder import KernelFolder
from workbench.core.params import parameter_from_dict
from workbench.core.proposal import TemplateProposal
from workbench.core.template import KernelTemplate
from workbench.templater.records import LiftedSource, TemplaterResult, unified_diff
from workbench.templater.semantic import lift_kernel


def folder_scalars(folder: KernelFolder) -> dict[str, str]:
    """Scalar kernel argument -> the expression it is launched with (``{"d": "d"}``)."""
    return {a.name: a.value.text for a in folder.args
            if a.role == "scalar" and a.value is not None}


def compared_by_total(folder: KernelFolder) -> frozenset[str]:
    """The outputs ``folder`` compares by a reduced quantity, not element by element: those
    with ``compare = "sum"``, and every output when reference.py defines ``verify``."""
    outputs = [a for a in folder.args if a.role in ("out", "inout")]
    if "verify" in folder.reference_functions:
        return frozenset(a.name for a in outputs)
    return frozenset(a.name for a in outputs if a.compare != "elementwise")


def offline_template(folder: KernelFolder, *, source_name: str = "template.cu") -> TemplaterResult:
    """Make a template from ``folder``'s baseline with no LLM.

    Parameters, constraints and launch rules go through the core safe parsers; raises
    TemplateError when nothing in the baseline could be lifted (naming why, per transform).
    """
    base = folder.baseline
    rules = base.launch.to_dict()
    shape_names = sorted({n for sizes in folder.shapes.values() for n in sizes})
    try:
        lifted: LiftedSource = lift_kernel(
            base.source, entry=base.entry, grid=rules["grid"], block=rules["block"],
            smem_bytes=rules["smem_bytes"], scalars=folder_scalars(folder),
            file=base.source_name, compared_by_total=compared_by_total(folder))
    except WorkbenchError:
        raise
    except Exception as exc:  # a templater defect: said with where, never a raw traceback
        raise TemplateError(
            f"the offline templater failed on {folder.name}'s {base.source_name} (a defect of "
            f"the templater, not of the kernel; nothing was written): "
            f"{type(exc).__name__}: {exc} at {_innermost(exc)}",
            kernel=folder.name, error=type(exc).__name__, where=_innermost(exc)) from exc
    if not lifted.params:
        raise TemplateError(f"the offline templater found nothing to lift in {folder.name}'s "
                            f"{base.source_name}: " + "; ".join(lifted.notes), kernel=folder.name,
                            findings=list(lifted.notes))
    known = [*shape_names, "elem_bytes", *device_env(next(iter(DEVICES.values())))]
    params = [parameter_from_dict(p.name, dict(p.spec)) for p in lifted.params]
    template = KernelTemplate.build(
        name=folder.name, source=lifted.source, entry=base.entry, params=params,
        constraints=list(lifted.constraints), grid=list(lifted.grid), block=list(lifted.block),
        smem_bytes=lifted.smem_bytes, source_name=source_name, known_names=known)
    problem = entry_problem(lifted.source, base.entry, source_name) or \
        defaults_launch_problem(template, folder)
    if problem is not None:
        raise TemplateError(f"the offline templater's lift of {folder.name} is refused: "
                            f"{problem}", kernel=folder.name, findings=[*lifted.notes, problem])
    summary = "Offline templater lifted: " + "; ".join(
        f"{p.name} from {p.origin}" for p in lifted.params)
    if lifted.notes:
        summary += ". " + "; ".join(lifted.notes)
    proposal = TemplateProposal.from_template(template, summary_of_changes=summary)
    return TemplaterResult(template=template, proposal=proposal,
                           diff=unified_diff(base.source, lifted.source, base.source_name,
                                             source_name),
                           lifted=lifted, notes=tuple(lifted.notes))


def _innermost(exc: BaseException) -> str:
    """``module.py:line`` where ``exc`` was raised (the deepest frame of its traceback)."""
    frames = traceback.extract_tb(exc.__traceback__)
    last = frames[-1] if frames else None
    return f"{Path(last.filename).name}:{last.lineno}" if last else "an unknown place"


def entry_problem(source: str, entry: str, file: str) -> str | None:
    """Why the kernel folder's reader would not find ``entry`` as an ``extern "C"`` kernel in
    the lifted source (the check ``propose --write`` makes before it writes), or None. A
    lift whose text the reader cannot follow (a brace opened inside a preprocessor
    conditional, say) is refused here, where the host's tests see it, not on the GPU."""
    if parse_cuda(source, file).launches_by_name(entry):
        return None
    return (f'{file}: the lifted source does not read as an extern "C" __global__ function '
            f"named {entry} (the kernel folder's reader would refuse the written template)")


def defaults_launch_problem(template: KernelTemplate, folder: KernelFolder) -> str | None:
    """Why ``template``'s defaults are not the kernel as written (another grid or block than
    the baseline's at some shape and dtype), or None. The offline templater promises that
    its defaults reproduce the kernel as written, GPU or not."""
    defaults = template.default_config()
    spec = next(iter(DEVICES.values()))
    for shape in folder.shapes:
        for dtype in folder.dtypes:
            env = folder.env(shape, dtype, spec)
            try:
                ours = template.launch_for(defaults, env)
                base = folder.baseline.launch_for({}, env)
            except (TemplateError, ExpressionError):
                continue  # the space and folder checks report launches that cannot be made
            if (ours.grid, ours.block) != (base.grid, base.block):
                return (f"at {shape}/{dtype} the defaults {dict(defaults)} launch grid "
                        f"{list(ours.grid)}, block {list(ours.block)}; the kernel as written "
                        f"launches grid {list(base.grid)}, block {list(base.block)}: the "
                        "defaults must reproduce the kernel as written")
    return None
