"""The held-back compute corpora (issue 28), pure tier, every set the same way: the plain
kernel computes what its reference.py says (g++ host simulation); the hand-written expert
template computes what the plain kernel computes at the configs
:meth:`HeldBackSet.checked_configs` lists (the same host simulation, same inputs); nvcc
compiles the plain kernel and the expert default for sm_90 without spilling (each set's
first and last kernel; ``WORKBENCH_FULL_MATRIX=1`` every kernel, every all-ends config and
every extra). Each set's data: tests/held_back_unseenN.py; the folder checks:
tests/test_held_back_folders.py; the GPU tier: tests/gpu/test_gpu_held_back.py.

The folders are kept from the offline templater's authors until they are measured (the
templater route against the expert template, same stage 2, on the H100)."""

from __future__ import annotations

import re
from pathlib import Path

import held_back_unseen4
import held_back_unseen5
import held_back_unseen6
import held_back_unseen7
import held_back_unseen8
import held_back_unseen9
import held_back_unseen10
import held_back_unseen11
import held_back_unseen12
import held_back_unseen13
import held_back_unseen14
import held_back_unseen15
import held_back_unseen16
import held_back_unseen17
import held_back_unseen18
import held_back_unseen19
import held_back_unseen20
import held_back_unseen21
import held_back_unseen22
import held_back_unseen23
import held_back_unseen24
import held_back_unseen25
import held_back_unseen26
import held_back_unseen27
import held_back_unseen28
import pytest
from held_back_harness import BENCHMARKS, HeldBackSet
from helpers_nvcc import needs_nvcc
from helpers_templater import FULL_MATRIX
from test_corpus_unseen3 import (
    _SPILLS,
    _assert_same,
    _inputs,
    _ptxas_log,
    _run,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

SETS: tuple[HeldBackSet, ...] = (held_back_unseen4.SET, held_back_unseen5.SET,
                                 held_back_unseen6.SET, held_back_unseen7.SET,
                                 held_back_unseen8.SET, held_back_unseen9.SET,
                                 held_back_unseen10.SET, held_back_unseen11.SET,
                                 held_back_unseen12.SET, held_back_unseen13.SET,
                                 held_back_unseen14.SET, held_back_unseen15.SET,
                                 held_back_unseen16.SET, held_back_unseen17.SET,
                                 held_back_unseen18.SET, held_back_unseen19.SET,
                                 held_back_unseen20.SET, held_back_unseen21.SET,
                                 held_back_unseen22.SET, held_back_unseen23.SET,
                                 held_back_unseen24.SET,
                                 held_back_unseen25.SET,
                                 held_back_unseen26.SET,
                                 held_back_unseen27.SET,
                                 held_back_unseen28.SET)
KERNELS = [pytest.param(s, name, id=f"{s.key}-{name}") for s in SETS for name in s.kernels]
_FULL_ONLY = [pytest.mark.slow, pytest.mark.skipif(
    not FULL_MATRIX, reason="each set's first and last kernel by default; "
    "WORKBENCH_FULL_MATRIX=1 compiles all")]
COMPILED = [pytest.param(s, name, id=f"{s.key}-{name}",
                         marks=() if name in (s.kernels[0], s.kernels[-1]) else _FULL_ONLY)
            for s in SETS for name in s.kernels]


# -- folders -------------------------------------------------------------------------------


@pytest.mark.parametrize("corpus", SETS, ids=[s.key for s in SETS])
def test_kernel_names_are_new(corpus: HeldBackSet) -> None:
    """No kernel of a set shares a name with a folder of another corpus or sample set."""
    others = {p.name for p in BENCHMARKS.glob("corpus*/*") if p.parent != corpus.root}
    others |= {p.name for p in (BENCHMARKS.parent / "sample_kernels").iterdir()}
    assert not set(corpus.kernels) & others
    assert sorted(corpus.kernels) == sorted(p.name for p in corpus.root.iterdir()
                                            if p.is_dir())


@pytest.mark.parametrize("corpus", SETS, ids=[s.key for s in SETS])
def test_stage1_corpus_knows_the_set_and_its_memory_bound_kernels(corpus: HeldBackSet) -> None:
    text = (BENCHMARKS / "stage1_corpus.py").read_text()
    assert f'"{corpus.key}": ROOT / "benchmarks" / "corpus_compute_{corpus.key}"' in text
    bound = re.search(r"MEMORY_BOUND = frozenset\(\{(.*?)\}\)", text, re.S)
    assert bound is not None
    listed = {n.strip(' "\n') for n in bound.group(1).split(",")}
    assert listed & set(corpus.kernels) == corpus.memory_bound


# -- host simulation -----------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("corpus", "name"), KERNELS)
def test_plain_kernel_matches_its_reference_on_host(
        corpus: HeldBackSet, name: str, tmp_path: Path,
        host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = corpus.folder(name)
    got = corpus.plain_outputs(name, tmp_path, host_flags)
    sizes = kf.shape_values(kf.check_shape)
    want = kf.load_reference().reference(dict(_inputs(kf)), sizes, "fp32")
    _assert_same(kf, got, want, "plain kernel vs reference.py")


@pytest.mark.timeout(1800 if FULL_MATRIX else 240)  # every all-ends config: minutes a kernel
@pytest.mark.parametrize(("corpus", "name"), KERNELS)
def test_expert_template_computes_what_the_plain_kernel_computes(
        corpus: HeldBackSet, name: str, tmp_path: Path,
        host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """At the configs :meth:`HeldBackSet.checked_configs` lists, on the same inputs."""
    plain, expert = corpus.folder(name), corpus.folder(name, expert=True)
    env = plain.env(plain.check_shape, "fp32")
    inputs = _inputs(plain)
    want = corpus.plain_outputs(name, tmp_path / "plain", host_flags)
    for i, config in enumerate(corpus.checked_configs(expert)):
        source = corpus.host_source(expert.template.render(config, "fp32").source)
        got = _run(expert, source, expert.template.launch_for(config, env), inputs,
                   tmp_path / f"config{i}", host_flags)
        _assert_same(expert, got, want, f"expert at {config}")


# -- nvcc ----------------------------------------------------------------------------------


@needs_nvcc
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("corpus", "name"), COMPILED)
def test_plain_kernel_and_expert_default_compile_without_spills(
        corpus: HeldBackSet, name: str, tmp_path: Path) -> None:
    expert = corpus.folder(name, expert=True)
    sources = {"plain": expert.baseline.render({}, "fp32").source,
               "expert_default": expert.template.render(expert.template.default_config(),
                                                        "fp32").source}
    for label, source in sources.items():
        log = _ptxas_log(source, tmp_path, label)
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{label} spills:\n{log}"
