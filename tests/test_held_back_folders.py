"""The held-back corpora's folders (benchmarks/corpus_compute_unseen3, _unseen4, _unseen5,
_unseen6, _unseen7, _unseen8, _unseen9, _unseen10, _unseen11, _unseen12, _unseen13,
_unseen14, _unseen15, _unseen16, _unseen17, _unseen18, _unseen19, _unseen20, _unseen21,
_unseen22, _unseen23, _unseen24, _unseen25, _unseen26, _unseen27, _unseen28),
checked the same way for every set: the plain folder is what `workbench init` writes (no
template), the expert is its copy plus a [template] whose defaults launch the kernel as
written, and every config of the expert's space stays inside its constraints and the launch
limits.
tests/test_corpus_unseen3.py and tests/test_held_back_host.py (the later sets, data in
tests/held_back_unseenN.py) run the kernels on the host."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

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
import test_corpus_unseen3

from workbench.engine.source_policy import check_source

#: each held-back set's harness (its ROOT, KERNELS and _folder)
SETS: tuple[ModuleType, ...] = (test_corpus_unseen3, held_back_unseen4, held_back_unseen5,
                                held_back_unseen6, held_back_unseen7, held_back_unseen8,
                                held_back_unseen9, held_back_unseen10,
                                held_back_unseen11, held_back_unseen12,
                                held_back_unseen13, held_back_unseen14,
                                held_back_unseen15, held_back_unseen16, held_back_unseen17,
                                held_back_unseen18, held_back_unseen19,
                                held_back_unseen20, held_back_unseen21,
                                held_back_unseen22, held_back_unseen23,
                                held_back_unseen24, held_back_unseen25,
                                held_back_unseen26, held_back_unseen27,
                                held_back_unseen28)
FOLDERS = [pytest.param(s, name, id=f"{Path(s.ROOT).name}-{name}")
           for s in SETS for name in s.KERNELS]


@pytest.mark.parametrize(("corpus", "name"), FOLDERS)
def test_plain_folder_is_init_shaped_and_expert_is_its_copy(corpus: ModuleType, name: str) -> None:
    """The plain folder has no [template]; baseline.cu is the kernel as written; expert/
    holds the same kernel, reference, baseline, shapes and launch plus its [template]."""
    plain, expert = corpus._folder(name), corpus._folder(name, expert=True)
    assert not plain.has_template and expert.has_template
    written = (corpus.ROOT / name / f"{name}.cu").read_text()
    for copy in ("baseline.cu", "expert/baseline.cu", f"expert/{name}.cu"):
        assert (corpus.ROOT / name / copy).read_text() == written, copy
    if (corpus.ROOT / name / "reference.py").exists():
        assert (corpus.ROOT / name / "expert" / "reference.py").read_text() == \
            (corpus.ROOT / name / "reference.py").read_text()
    assert expert.baseline.launch.to_dict() == plain.baseline.launch.to_dict()
    assert expert.args == plain.args and expert.shapes == plain.shapes
    assert expert.constants == plain.constants
    assert "large" in plain.shapes and len(plain.shapes) >= 3  # check shape + two timed


@pytest.mark.parametrize(("corpus", "name"), FOLDERS)
def test_sources_pass_the_source_policy(corpus: ModuleType, name: str) -> None:
    """The compiler refuses a source the policy refuses before nvcc runs (rk4_duffing's
    expert reached the H100 with a stringizing _Pragma macro the host checks never met):
    the plain kernel and the expert template pass it here."""
    for path in (corpus.ROOT / name / f"{name}.cu", corpus.ROOT / name / "expert" / "template.cu"):
        assert check_source(path.read_text(), file_name=path.name).refusals == (), path


@pytest.mark.parametrize(("corpus", "name"), FOLDERS)
def test_expert_defaults_launch_the_kernel_as_written(corpus: ModuleType, name: str) -> None:
    expert = corpus._folder(name, expert=True)
    default = expert.template.default_config()
    for shape in expert.shapes:
        env = expert.env(shape, "fp32")
        ours, base = expert.template.launch_for(default, env), expert.baseline.launch_for({}, env)
        assert (ours.grid, ours.block, ours.smem_bytes) == \
            (base.grid, base.block, base.smem_bytes), shape


@pytest.mark.parametrize(("corpus", "name"), FOLDERS)
def test_expert_space_keeps_its_constraints_and_launch_limits(corpus: ModuleType, name: str) -> None:
    expert = corpus._folder(name, expert=True)
    for shape in expert.shapes:
        env = expert.env(shape, "fp32")
        space = expert.template.space(env)
        assert len(space) > 50
        for config in space:
            launch = expert.template.launch_for(config, env)
            threads = launch.block[0] * launch.block[1] * launch.block[2]
            assert 32 <= threads <= env["max_threads_per_block"], (shape, dict(config))
            assert launch.grid[1] < 65536 and launch.grid[2] < 65536, (shape, dict(config))
