"""One held-back compute corpus (issue 28) as the host tier checks it: its folders, the
configs its expert is checked at, and the plain kernel's outputs on the host (computed once
a session). The host harness itself (program generation, runs, comparison, precompiled
headers) is tests/test_corpus_unseen3.py's; a set adds only the CUDA built-ins its kernels
use beyond that set's (``host_source``). tests/test_held_back_host.py runs the checks over
every set; each set's data lives in tests/held_back_unseenN.py."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from helpers_templater import FULL_MATRIX, end_configs, host_configs
from test_corpus_unseen3 import _assert_same, _inputs, _run, folder_runs

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.template import KernelTemplate

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@dataclass(frozen=True)
class HeldBackSet:
    """``key`` is the set's ``stage1_corpus.py --set`` name (``unseen4``); ``extra_configs``
    are hand-picked configs (over the default) the all-ends corners do not reach, the last
    of each kernel's checked on every run; ``corners_every_run`` is the kernel whose default
    and last all-ends config are checked on every run too."""

    key: str
    kernels: tuple[str, ...]
    extra_configs: Mapping[str, list[dict[str, int]]]
    corners_every_run: str
    memory_bound: frozenset[str]
    host_source: Callable[[str], str]
    _plain: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, compare=False,
                                                     repr=False)

    @property
    def root(self) -> Path:
        return BENCHMARKS / f"corpus_compute_{self.key}"

    def folder(self, name: str, expert: bool = False) -> KernelFolder:
        return load_kernel_folder(self.root / name / "expert" if expert else self.root / name)

    def plain_outputs(self, name: str, work: Path,
                      flags: tuple[str, ...]) -> dict[str, np.ndarray]:
        """The plain kernel's outputs on the check shape's inputs (one host run a session)."""
        if name not in self._plain:
            plain = self.folder(name)
            env = plain.env(plain.check_shape, "fp32")
            source = self.host_source(plain.baseline.render({}, "fp32").source)
            self._plain[name] = _run(plain, source, plain.baseline.launch_for({}, env),
                                     _inputs(plain), work, flags)
        return self._plain[name]

    def checked_configs(self, kf: KernelFolder) -> list[dict[str, Any]]:
        """The last of the kernel's extra configs; for ``corners_every_run`` the default and
        the last all-ends config before it. With ``WORKBENCH_FULL_MATRIX=1`` the default,
        every all-ends config and every extra. Each valid at the check shape."""
        env = kf.env(kf.check_shape, "fp32")
        ends = end_configs(kf.template, env)
        assert ends, "no all-ends config is valid"
        default = dict(kf.template.default_config())
        extras = [{**default, **extra} for extra in self.extra_configs.get(kf.name, [])]
        for extra in extras:
            assert kf.template.space(env).rejection(extra) is None, extra
        assert extras, "no hand-picked config"
        if FULL_MATRIX:
            picked = [default, *ends, *extras]
        elif kf.name == self.corners_every_run:
            picked = [default, ends[-1], extras[-1]]
        else:
            picked = extras[-1:]
        configs: list[dict[str, Any]] = []
        for config in picked:
            if config not in configs:
                configs.append(config)
        return configs


def prepended(extras: str, dropped: str = "") -> Callable[[str], str]:
    """A set's ``host_source``: a kernel's source as the host program compiles it, ``extras``
    (host forms of the CUDA built-ins it uses) before it and the line ``dropped`` (a device
    header ``extras`` stands for), if any, taken out."""
    def host_source(source: str) -> str:
        return extras + (source.replace(dropped, "") if dropped else source)
    return host_source


def respelled(folder: Path, root: Path, source: str) -> KernelFolder:
    """A copy of the held-back ``folder`` under ``root`` (its kernel.toml and reference.py:
    shapes, arguments, launch) with ``source`` as the kernel as written (its ``<name>.cu``
    and baseline.cu): another spelling of the same kernel, checked as the folder's own is."""
    copy = root / folder.name
    copy.mkdir(parents=True)
    for name in ("kernel.toml", "reference.py"):
        shutil.copy(folder / name, copy / name)
    for name in ("baseline.cu", f"{folder.name}.cu"):
        (copy / name).write_text(source)
    return load_kernel_folder(copy)


def same_as_written(kf: KernelFolder, template: KernelTemplate, configs: list[dict[str, Any]],
                    host: Callable[[str], str], work: Path, flags: tuple[str, ...], *,
                    within_tolerance: bool = False) -> int:
    """Runs ``template`` (a lift of ``kf``) at ``configs`` and ``kf``'s kernel as written on
    the host, each source through ``host`` (the set's built-ins); asserts every output bit
    for bit, or (``within_tolerance``: knobs that round or sum in another order by design)
    as the engine compares them; the configs run."""
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = _run(kf, host(kf.baseline.render({}, "fp32").source),
                kf.baseline.launch_for({}, env), inputs, work / "plain", flags)
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, work / "lift"), strict=True):
        if within_tolerance:
            _assert_same(kf, got, want, f"{kf.name} at {config}")
            continue
        for name, values in want.items():
            assert (got[name] == values).all(), f"{kf.name} at {config}: {name} differs"
    return len(configs)


def default_and_mix(template: KernelTemplate, kf: KernelFolder,
                    mix: dict[str, Any]) -> list[dict[str, Any]]:
    """The configs a respelling's host check runs: the default and ``mix`` over it (every
    all-ends config too under ``WORKBENCH_FULL_MATRIX=1``), each inside the space."""
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), [mix])
    return configs if FULL_MATRIX else configs[:2]
