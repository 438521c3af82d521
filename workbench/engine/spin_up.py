"""Whether the GPU is kept busy before a timing, and the evidence for it (pure).

An idle GPU lowers its SM clock and takes a while to raise it again; a short per-candidate
warm-up does not cover that (seen on the H100: a fresh worker timed 4-8 us kernels 2-5 %
slower than a sweep that ran back to back). So a timing that follows an idle gap used to
start with :data:`SPIN_UP_S` of busy work, every time: in a Dask sweep whose GPU waits for
the host past :data:`IDLE_GAP_S` between candidates that was 108 spin-ups in 1,184 configs,
18 ms a config on average, about a third of the device's time (issue 29 item 5).

The rule now asks for evidence that the clocks are low before paying for it:

- the GPU finished timed work less than :data:`IDLE_GAP_S` ago: no spin-up (it is warm);
- else NVML's SM clock, read just before timing (the reading the trial keeps anyway), is
  compared with the reference clock (the application clock, else the maximum): at or above
  :data:`WARM_CLOCK_FRACTION` of it the timing starts at once; below it, or with no
  reading, or after an idle of :data:`TRUST_IDLE_S` or more (the reading is not trusted to
  be current after long idles), the spin-up runs;
- the timing checks itself: its gate measures the SM clock of every batch on the device
  (:class:`~workbench.core.records.ClockStats`); a timing that skipped the spin-up and
  saw a batch under the fraction is thrown away, and the GPU spun up and timed again
  (:func:`started_cold`). No reported time comes from a cold start the gate could see.

Every evaluation's :class:`SpinUp` record goes into the trial (``extra["spin_up"]``): what
was decided, why, the idle seconds and the clock seen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

#: A pause before timing longer than this may have let the clocks drop.
IDLE_GAP_S = 0.05
#: Busy time before timing when the clocks may be low.
SPIN_UP_S = 0.2
#: An SM clock at or above this share of the reference clock counts as warm (H100: the
#: application clock is 1,980 MHz, a warm memory-bound kernel runs at it; idle is ~345).
WARM_CLOCK_FRACTION = 0.9
#: After an idle this long the spin-up runs whatever NVML reads (a guard: NVML's reading
#: is sampled, not instantaneous).
TRUST_IDLE_S = 1.0


class SpinUpReason(StrEnum):
    """Why a timing started at once or after a spin-up."""

    RECENT = "busy moments ago"      # idle < IDLE_GAP_S: no reading needed
    WARM = "clock warm"              # idle, but NVML's SM clock at the reference
    LOW = "clock low"                # NVML's SM clock under the fraction: spin-up
    UNKNOWN = "clock unknown"        # no NVML reading or reference: spin-up
    LONG_IDLE = "long idle"          # idle >= TRUST_IDLE_S: spin-up
    RETIMED = "cold timing retimed"  # skipped, the gate saw a cold batch: spin-up, again

    @property
    def spins(self) -> bool:
        """Whether this reason runs the spin-up."""
        return self not in (SpinUpReason.RECENT, SpinUpReason.WARM)


def spin_up_reason(idle_s: float, sm_clock_mhz: float | None,
                   reference_mhz: float | None) -> SpinUpReason:
    """The decision for a timing ``idle_s`` seconds after the GPU's last timed work, with
    NVML's SM clock read just now and the reference clock (both MHz, None: unknown)."""
    if idle_s < IDLE_GAP_S:
        return SpinUpReason.RECENT
    if idle_s >= TRUST_IDLE_S:
        return SpinUpReason.LONG_IDLE
    if sm_clock_mhz is None or not reference_mhz:
        return SpinUpReason.UNKNOWN
    if sm_clock_mhz < WARM_CLOCK_FRACTION * reference_mhz:
        return SpinUpReason.LOW
    return SpinUpReason.WARM


def started_cold(batch_clocks_mhz: Sequence[float], reference_mhz: float | None) -> bool:
    """Whether a timing's gate measured any batch under the warm fraction of the reference
    (False with no reference or no batch clock: nothing to judge by)."""
    if not reference_mhz or not batch_clocks_mhz:
        return False
    return min(batch_clocks_mhz) < WARM_CLOCK_FRACTION * reference_mhz


@dataclass(frozen=True)
class SpinUp:
    """What preceded one timing: ``ran`` whether the GPU was kept busy first (for
    ``spin_up_s``), ``reason`` why, ``idle_s`` since its last timed work, the SM clock NVML
    read before deciding (``sm_clock_mhz``) and after a spin-up (``sm_clock_after_mhz``),
    and the ``reference_mhz`` they were compared with. ``retimed``: a first timing started
    cold (its gate saw it) and was thrown away."""

    ran: bool
    reason: SpinUpReason
    idle_s: float
    sm_clock_mhz: float | None = None
    reference_mhz: float | None = None
    spin_up_s: float = 0.0
    sm_clock_after_mhz: float | None = None
    retimed: bool = False

    def to_message(self) -> dict[str, Any]:
        out = asdict(self)
        out["reason"] = self.reason.value
        out["idle_s"] = round(self.idle_s, 6)
        out["spin_up_s"] = round(self.spin_up_s, 6)
        return out

    @classmethod
    def from_message(cls, data: Mapping[str, Any]) -> SpinUp:
        def mhz(key: str) -> float | None:
            value = data.get(key)
            return None if value is None else float(value)

        return cls(ran=bool(data["ran"]), reason=SpinUpReason(data["reason"]),
                   idle_s=float(data["idle_s"]), sm_clock_mhz=mhz("sm_clock_mhz"),
                   reference_mhz=mhz("reference_mhz"),
                   spin_up_s=float(data.get("spin_up_s", 0.0)),
                   sm_clock_after_mhz=mhz("sm_clock_after_mhz"),
                   retimed=bool(data.get("retimed", False)))
