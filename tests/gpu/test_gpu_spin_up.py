"""GPU tier: the spin-up before a timing runs on evidence, and no timing starts cold
(issue 29 item 5; the rule: workbench/engine/spin_up.py). A LocalRunner times sample
configs back to back, then after idle gaps (a real GPU has to idle: these sleeps are the
subject, not a wait for a result): every trial records what preceded its timing, and each
timing that started without a spin-up ran every batch at a warm SM clock as its own gate
measured it. Run on the GPU machine: ``pytest -m gpu tests/gpu/test_gpu_spin_up.py``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Candidate, Status
from workbench.engine.bench import BenchSettings
from workbench.engine.runner import LocalRunner
from workbench.engine.spin_up import TRUST_IDLE_S, WARM_CLOCK_FRACTION, SpinUp, SpinUpReason

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
IDLE_GAPS_S = (0.0, 0.0, 0.0, 0.15, 0.4, TRUST_IDLE_S + 0.2, 0.0)


def test_every_timing_says_what_preceded_it_and_none_starts_cold() -> None:
    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")
    configs = list(folder.space("decode", "bf16", None))[:len(IDLE_GAPS_S)]
    spins: list[SpinUp] = []
    with LocalRunner(folder, settings=BenchSettings()) as runner:
        candidates = [Candidate(c, "decode", "bf16") for c in configs]
        list(runner.measure(candidates))  # compiled (and timed) once: cache hits from here
        for gap, config in zip(IDLE_GAPS_S, configs, strict=True):
            time.sleep(gap)  # the GPU idles this long before the next timing
            # measured again under the search's condition: identical cubins timed again
            [result] = list(runner.measure([Candidate(config, "decode", "bf16")],
                                           condition=runner.search_condition))
            assert result.status is Status.OK, result.reason
            spin = SpinUp.from_message(result.extra["spin_up"])
            spins.append(spin)
            clock = result.method.sm_clock if result.method is not None else None
            if not spin.ran and clock is not None and spin.reference_mhz:
                # started at once: the gate saw every batch warm (else it was retimed)
                assert clock.min_mhz >= WARM_CLOCK_FRACTION * spin.reference_mhz, (spin, clock)
    assert spins[-2].reason is SpinUpReason.LONG_IDLE and spins[-2].ran
    assert any(s.reason is SpinUpReason.RECENT for s in spins)  # back to back: no spin-up
    print({i: (s.reason.value, s.sm_clock_mhz, round(s.idle_s, 3)) for i, s in enumerate(spins)})
