"""numpy reference for probe_energy: each probe's energy in the field of the ions. The ion
table is the kernel's ``__constant__`` array ``ions`` (an input, per the kernel-folder
contract)."""

from __future__ import annotations

import numpy as np

NSRC = 96
RCUT = 2.5
SOFT2 = 0.01
KAPPA = 0.8
BOX = 6.0  # probes and ions lie in [0, BOX)^3: about a quarter of the pairs are in range


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Probes and ions uniform in the box (in any warp some probes have an ion in range and
    some do not, so the cutoff branch diverges); probe and ion charges in [-1, 1], ion
    epsilon in [0.1, 1] and sigma in [0.3, 0.6]."""
    n = shape["n"]
    ions = np.concatenate([rng.uniform(0.0, BOX, (NSRC, 3)),
                           rng.uniform(-1.0, 1.0, (NSRC, 1)),
                           rng.uniform(0.1, 1.0, (NSRC, 1)),
                           rng.uniform(0.3, 0.6, (NSRC, 1))], axis=1)
    return {"pos": rng.uniform(0.0, BOX, 3 * n).astype(np.float32),
            "q": rng.uniform(-1.0, 1.0, n).astype(np.float32),
            "ions": ions.reshape(-1).astype(np.float32)}


def _lj(r2: np.ndarray | float, sig: float, eps: float) -> np.ndarray | float:
    sr6 = (sig * sig / r2) ** 3
    return 4.0 * eps * (sr6 * sr6 - sr6)


def _yukawa(r: np.ndarray | float) -> np.ndarray | float:
    return np.exp(-KAPPA * r) / r


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """float64 (both terms are shifted to 0 at the cutoff, so a pair within rounding of it
    adds next to nothing on either side)."""
    table = inputs["ions"].astype(np.float64).reshape(NSRC, 6)
    pos = inputs["pos"].astype(np.float64).reshape(-1, 3)
    qi = inputs["q"].astype(np.float64)
    e = np.zeros(pos.shape[0])
    rc2 = RCUT * RCUT
    for ix, iy, iz, qs, eps, sig in table:
        r2 = (pos[:, 0] - ix) ** 2 + (pos[:, 1] - iy) ** 2 + (pos[:, 2] - iz) ** 2 + SOFT2
        term = (_lj(r2, sig, eps) - _lj(rc2, sig, eps)
                + qi * qs * (_yukawa(np.sqrt(r2)) - _yukawa(RCUT)))
        e += np.where(r2 < rc2, term, 0.0)
    return {"energy": e.astype(np.float32)}
