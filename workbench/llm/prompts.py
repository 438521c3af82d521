"""Prompt building: pure functions from typed context to chat messages.

Prompt texts live in ``workbench/llm/prompts/<name>_v<N>.txt`` (shipped in the package, read
with importlib.resources) and are filled with :class:`string.Template` (``$name``), so
braces in CUDA or JSON need no escaping. The builders do no I/O beyond reading those files
and are covered by golden tests (tests/golden/*.txt).

Kernel source, compiler logs, profiler output and earlier proposals are DATA: each is
fenced between ``<<<BEGIN DATA: name>>>`` and ``<<<END DATA: name>>>`` lines, and the system
prompt tells the model to ignore instructions inside such blocks.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import Any

from workbench.core.cache_profile import L2Profile
from workbench.core.hardware import DeviceSpec
from workbench.core.kernel_folder import KernelFolder
from workbench.core.proposal import TemplateProposal
from workbench.core.records import Occupancy, ResourceUsage, Value

# "families": the transform families the offline templater applies, named in the template
# and plan prompts (one text, substituted into both)
PROMPT_VERSIONS: Mapping[str, str] = {"system": "v1", "template": "v2", "plan": "v2",
                                      "repair": "v1", "families": "v2"}

Messages = list[dict[str, str]]


@functools.cache
def load_prompt(name: str, version: str | None = None) -> str:
    """The text of ``prompts/<name>_<version>.txt`` (current version by default)."""
    version = version or PROMPT_VERSIONS[name]
    return (resources.files("workbench.llm") / "prompts" / f"{name}_{version}.txt").read_text(
        encoding="utf-8")


def fence(name: str, text: str) -> str:
    """Wrap ``text`` as a data block. Fence markers inside the data are defused."""
    safe = text.replace("<<<", "<< <").replace(">>>", "> >>")
    if not safe.endswith("\n"):
        safe += "\n"
    return f"<<<BEGIN DATA: {name}>>>\n{safe}<<<END DATA: {name}>>>"


@dataclass(frozen=True)
class KernelBrief:
    """What the prompts say about a kernel (built from a kernel folder)."""

    name: str
    description: str
    entry: str
    dtypes: tuple[str, ...]
    shapes: Mapping[str, Mapping[str, int]]
    args: tuple[str, ...]  # one line per argument, in call order
    bytes_moved: str  # roofline expression
    baseline_launch: Mapping[str, Any]  # {"grid": [...], "block": [...], "smem_bytes": "..."}
    baseline_source: str
    baseline_source_name: str = "baseline.cu"

    @property
    def shape_names(self) -> tuple[str, ...]:
        names: list[str] = []
        for sizes in self.shapes.values():
            names.extend(n for n in sizes if n not in names)
        return tuple(names)

    @classmethod
    def from_folder(cls, folder: KernelFolder) -> KernelBrief:
        args = []
        for a in folder.args:
            if a.role == "scalar":
                value = a.value.text if a.value is not None else "?"
                args.append(f"{a.name}: {a.dtype} = {value} (scalar)")
            else:
                dims = ", ".join(e.text for e in a.shape)
                args.append(f"{a.name}: {a.dtype}[{dims}] ({a.role})")
        return cls(name=folder.name, description=folder.description, entry=folder.baseline.entry,
                   dtypes=tuple(folder.dtypes),
                   shapes={k: dict(v) for k, v in folder.shapes.items()}, args=tuple(args),
                   bytes_moved=folder.bytes_moved.text,
                   baseline_launch=folder.baseline.launch.to_dict(),
                   baseline_source=folder.baseline.source,
                   baseline_source_name=folder.baseline.source_name)


@dataclass(frozen=True)
class Measurement:
    """Performance of the current best at one (shape, dtype), all numbers measured.

    ``copy_gb_per_s`` is the measured device-to-device copy bandwidth for the same bytes:
    the practical roofline of a memory-bound kernel. ``ncu_metrics`` is optional Nsight
    Compute output as a plain dict (e.g. DRAM throughput %, L2 hit rate %, achieved
    occupancy %, top warp-stall reasons). ``l2`` holds a 2-D tiled kernel's finalists with
    their times and L2 hit rates (SwizzlePerf's signal for choosing a block order), or why
    they were not measured.
    """

    shape: str
    dtype: str
    sizes: Mapping[str, int]
    bytes_moved: int
    baseline_median_us: float | None = None
    best_median_us: float | None = None
    best_config: Mapping[str, Value] | None = None
    copy_gb_per_s: float | None = None
    usage: ResourceUsage | None = None
    occupancy: Occupancy | None = None
    ncu_metrics: Mapping[str, float | int | str] | None = None
    l2: L2Profile | None = None


@dataclass(frozen=True)
class Iteration:
    """One earlier step of the session: what was tried and what it gave."""

    index: int
    action: str  # new_template | refine_template | tune_more | ...
    summary: str  # what was tried
    result: str  # what it gave (e.g. "best 4.1 us at decode/bf16, 1.24x")
    template_sha256: str = ""


@dataclass(frozen=True)
class PromptContext:
    """Everything hardware- and measurement-related a prompt may show."""

    device: DeviceSpec
    measurements: tuple[Measurement, ...] = ()
    history: tuple[Iteration, ...] = ()
    extra_data: Mapping[str, str] = field(default_factory=dict)  # name -> text (fenced)


def _fmt_bytes(n: int) -> str:
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit} ({n} B)"
    return f"{n} B"


def _gbps(nbytes: int, us: float) -> float:
    return nbytes / (us * 1e-6) / 1e9


def _kernel_section(k: KernelBrief) -> str:
    shapes = "; ".join(f"{name} ({', '.join(f'{n}={v}' for n, v in sizes.items())})"
                       for name, sizes in k.shapes.items())
    launch = k.baseline_launch
    lines = [
        "## Kernel",
        f"name: {k.name}",
        f"description: {k.description}",
        f"entry: {k.entry}",
        "arguments (in call order):",
        *(f"  - {a}" for a in k.args),
        f"element dtypes: {', '.join(k.dtypes)}",
        f"shapes: {shapes}",
        f"bytes moved (roofline expression): {k.bytes_moved}",
        f"baseline launch: grid {list(launch.get('grid', []))}, block "
        f"{list(launch.get('block', []))}, dynamic smem bytes {launch.get('smem_bytes', '0')}",
    ]
    return "\n".join(lines)


def _hardware_section(d: DeviceSpec) -> str:
    return "\n".join([
        f"## Hardware: {d.name} ({d.key}, {d.arch})",
        f"- SMs: {d.num_sms}; warp size {d.warp_size}; max threads per block "
        f"{d.max_threads_per_block}, per SM {d.max_threads_per_sm}; max blocks per SM "
        f"{d.max_blocks_per_sm}",
        f"- registers: {d.regs_per_sm} per SM, {d.max_regs_per_block} per block, at most "
        f"{d.max_regs_per_thread} per thread",
        f"- shared memory: {_fmt_bytes(d.smem_per_block_default_bytes)} per block by default, "
        f"{_fmt_bytes(d.smem_per_block_optin_bytes)} per block opt-in, "
        f"{_fmt_bytes(d.smem_per_sm_bytes)} per SM",
        f"- L2 cache: {_fmt_bytes(d.l2_bytes)}; peak DRAM bandwidth (datasheet): "
        f"{d.peak_mem_bandwidth_gb_per_s:g} GB/s",
    ])


def _time_line(label: str, us: float, m: Measurement) -> str:
    achieved = _gbps(m.bytes_moved, us)
    text = f"- {label}: {us:.2f} us ({achieved:.1f} GB/s"
    if m.copy_gb_per_s:
        text += f", {100 * achieved / m.copy_gb_per_s:.1f}% of measured copy bandwidth"
    return text + ")"


def _measurement_section(m: Measurement) -> str:
    sizes = ", ".join(f"{n}={v}" for n, v in m.sizes.items())
    lines = [f"### shape {m.shape} ({sizes}), {m.dtype}",
             f"- bytes moved (roofline): {m.bytes_moved} B"]
    if m.copy_gb_per_s:
        roof_us = m.bytes_moved / (m.copy_gb_per_s * 1e9) * 1e6
        lines.append(f"- measured copy bandwidth: {m.copy_gb_per_s:.1f} GB/s -> roofline time "
                     f"{roof_us:.2f} us")
    if m.baseline_median_us:
        lines.append(_time_line("baseline median", m.baseline_median_us, m))
    if m.best_median_us:
        line = _time_line("current best median", m.best_median_us, m)
        if m.best_config:
            line += " with " + ", ".join(f"{k}={v}" for k, v in sorted(m.best_config.items()))
        if m.baseline_median_us:
            line += f"; {m.baseline_median_us / m.best_median_us:.2f}x vs baseline"
        lines.append(line)
    if m.usage is not None:
        u = m.usage
        spills = (f"spills {u.spill_store_bytes} B stored / {u.spill_load_bytes} B loaded"
                  if u.spills else "no spills")
        lines.append(f"- resources of the best: {u.regs_per_thread} registers/thread, "
                     f"{u.static_smem_bytes} B static + {u.dynamic_smem_bytes} B dynamic shared "
                     f"memory/block, {u.stack_frame_bytes} B stack, {spills}")
    if m.occupancy is not None:
        o = m.occupancy
        lines.append(f"- occupancy: {o.blocks_per_sm} blocks/SM, {o.warps_per_sm} of "
                     f"{o.max_warps_per_sm} warps ({100 * o.fraction:.0f}%), limited by "
                     f"{o.limited_by}")
    if m.ncu_metrics:
        metrics = "\n".join(f"  {k}: {v}" for k, v in m.ncu_metrics.items())
        lines.append("- profiler metrics (Nsight Compute):\n"
                     + fence(f"ncu_{m.shape}_{m.dtype}", metrics))
    if m.l2 is not None:
        lines.append("- the finalists' L2 hit rates (for a 2-D tiled kernel the block order "
                     "decides which tiles share L2; a higher hit rate at a lower time points "
                     "to the order to keep):\n"
                     + fence(f"l2_{m.shape}_{m.dtype}", "\n".join(m.l2.lines())))
    return "\n".join(lines)


def context_text(kernel: KernelBrief, ctx: PromptContext) -> str:
    """The shared context: kernel, hardware, measurements, history, extra data blocks."""
    parts = [_kernel_section(kernel), _hardware_section(ctx.device)]
    if ctx.measurements:
        parts.append("## Measurements (current best, per shape)\n"
                     + "\n".join(_measurement_section(m) for m in ctx.measurements))
    else:
        parts.append("## Measurements\nnone yet")
    if ctx.history:
        hist = "\n".join(f"{it.index}. [{it.action}]"
                         + (f" template {it.template_sha256[:12]}" if it.template_sha256 else "")
                         + f": {it.summary} -> {it.result}" for it in ctx.history)
        parts.append("## History of this session\n" + hist)
    for name, text in ctx.extra_data.items():
        parts.append(f"## {name}\n" + fence(name, text))
    return "\n\n".join(parts)


def _proposal_section(title: str, proposal: TemplateProposal, data_name: str) -> str:
    params = "\n".join(
        f"  - {p.name}: {json.dumps(p.to_core_dict(), sort_keys=True)}" for p in proposal.parameters)
    launch = proposal.launch
    return "\n".join([
        f"## {title}",
        "parameters:", params or "  (none)",
        f"constraints: {json.dumps(list(proposal.constraints))}",
        f"launch: grid {list(launch.grid)}, block {list(launch.block)}, dynamic smem bytes "
        f"{launch.smem_bytes}",
        fence(data_name, proposal.source),
    ])


def _guidance(guidance: str) -> str:
    if not guidance.strip():
        return ""
    return ("Guidance from the engineer (follow it where it is consistent with the rules):\n"
            + guidance.strip() + "\n\n")


def _messages(user: str) -> Messages:
    return [{"role": "system", "content": load_prompt("system")},
            {"role": "user", "content": user}]


def template_messages(kernel: KernelBrief, ctx: PromptContext, *,
                      current: TemplateProposal | None = None, guidance: str = "") -> Messages:
    """Messages asking for a :class:`TemplateProposal` (new, or a refinement of ``current``)."""
    sections = [context_text(kernel, ctx)]
    if current is not None:
        sections.append(_proposal_section("Current template (refine it)", current,
                                          "current_template.cu"))
    sections.append(f"## Baseline source\n{fence(kernel.baseline_source_name, kernel.baseline_source)}")
    user = Template(load_prompt("template")).substitute(
        device_name=ctx.device.name, entry=kernel.entry,
        shape_names=", ".join(kernel.shape_names), context="\n\n".join(sections),
        transform_families=load_prompt("families").rstrip(),
        guidance_section=_guidance(guidance))
    return _messages(user)


def plan_messages(kernel: KernelBrief, ctx: PromptContext, template: TemplateProposal, *,
                  space_summary: str = "", guidance: str = "") -> Messages:
    """Messages asking for a :class:`Plan` about the current ``template``."""
    sections = [context_text(kernel, ctx),
                _proposal_section("Current template", template, "template.cu")]
    if space_summary:
        sections.append(f"## Search space\n{space_summary}")
    user = Template(load_prompt("plan")).substitute(
        device_name=ctx.device.name, context="\n\n".join(sections),
        transform_families=load_prompt("families").rstrip(),
        guidance_section=_guidance(guidance))
    return _messages(user)


def repair_messages(kernel: KernelBrief, ctx: PromptContext, rejected_reply: str,
                    problems: Sequence[str]) -> Messages:
    """Messages asking to fix a rejected proposal; ``rejected_reply`` is the raw JSON reply."""
    sections = [context_text(kernel, ctx),
                f"## Baseline source\n{fence(kernel.baseline_source_name, kernel.baseline_source)}",
                f"## Your rejected proposal\n{fence('rejected_proposal.json', rejected_reply)}"]
    user = Template(load_prompt("repair")).substitute(
        problems="\n".join(f"- {p}" for p in problems) or "- (none given)",
        context="\n\n".join(sections))
    return _messages(user)


def render_messages(messages: Sequence[Mapping[str, str]]) -> str:
    """One text for humans and golden files: each message under a ``=== role ===`` line."""
    return "".join(f"=== {m['role']} ===\n{m['content'].rstrip()}\n" for m in messages)
