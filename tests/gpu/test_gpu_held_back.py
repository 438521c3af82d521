"""GPU tier for the held-back compute corpora (benchmarks/corpus_compute_unseen3 to
corpus_compute_unseen28): on the device, each plain kernel passes its reference.py at the
check shape and runs at least 20 us at every timed shape (so its timings are not launch
overhead), and each expert template is correct at the configs the host simulation checks
(tests/test_corpus_unseen3.py, tests/test_held_back_host.py) and at every all-ends config.
Run on the GPU machine:
``python -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_held_back.py``."""

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
from helpers_templater import end_configs

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Candidate, Config, Status
from workbench.engine.bench import BenchSettings
from workbench.engine.runner import LocalRunner

pytestmark = pytest.mark.gpu

SHORT = BenchSettings(warmup_ms=2.0, min_reps=5, max_reps=50, max_time_s=0.2, timeout_s=10.0)
MIN_TIMED_US = 20.0
#: each held-back set's host harness (its ROOT, KERNELS and checked_configs)
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


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("corpus", "name"), FOLDERS)
def test_plain_kernel_passes_its_reference_and_runs_long_enough(corpus: ModuleType,
                                                                name: str) -> None:
    plain = load_kernel_folder(corpus.ROOT / name)
    with LocalRunner(plain, settings=SHORT) as runner:
        for shape in plain.shapes:
            if shape == plain.check_shape:
                continue
            result = runner.baseline(shape, "fp32")  # the load checks it against reference.py
            assert result.status is Status.OK, (shape, result.reason)
            assert result.timing is not None
            print(f"{name} {shape}: as written {result.timing.median_us:.1f} us")
            assert result.timing.median_us >= MIN_TIMED_US, (shape, result.timing.median_us)


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("corpus", "name"), FOLDERS)
def test_expert_template_is_correct_on_the_device(corpus: ModuleType, name: str) -> None:
    expert = load_kernel_folder(corpus.ROOT / name / "expert")
    check = expert.check_shape
    configs = corpus.checked_configs(expert)
    must_run = len(configs)  # the host-checked ones must run; other corners may be pruned
    for config in end_configs(expert.template, expert.env(check, "fp32")):
        if config not in configs:
            configs.append(config)
    with LocalRunner(expert, settings=SHORT) as runner:
        results = list(runner.measure([Candidate(Config(c), check, "fp32") for c in configs]))
    assert len(results) == len(configs)
    wrong = [(dict(r.config), r.status.value, r.reason) for r in results
             if r.status.is_failure]
    assert not wrong, wrong
    by_config = {r.config: r for r in results}
    skipped = [(c, by_config[Config(c)].reason) for c in configs[:must_run]
               if by_config[Config(c)].status is not Status.OK]
    assert not skipped, skipped
