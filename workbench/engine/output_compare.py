"""Comparing a run's outputs with the expected ones on the host; a wrong result is data.

Element by element within the output's tolerance (integers as integers), by the sum over
the array (``compare = "sum"``), or by reference.py's ``verify()`` alone. A wrong result
raises :class:`_Mismatch` naming the output, the count and the first bad element; a
``verify()`` that fails otherwise than by AssertionError is a :class:`VerifyHookError` (a bug
in the hook). The GPU worker's device-side checks are :mod:`workbench.engine.gpu_verify`;
numpy is imported lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["VerifyHook", "VerifyHookError", "compare_outputs", "compare_sum",
           "run_verify_hook", "with_nan"]

#: reference.py's ``verify(outputs, golden, shape)``: raises AssertionError when wrong.
VerifyHook = Callable[[dict[str, Any], dict[str, Any], dict[str, int]], object]


class _Mismatch(Exception):
    """Verification failed (message says where)."""

    def __init__(self, reason: str, max_abs_err: float | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.max_abs_err = max_abs_err


class VerifyHookError(Exception):
    """reference.py's verify() raised something other than AssertionError: a bug in the
    hook, not a wrong result (the worker answers a failure naming it; the runner raises)."""


def run_verify_hook(hook: VerifyHook, outputs: dict[str, Any], golden: dict[str, Any],
                    shape: Mapping[str, int], label: str) -> None:
    """Call reference.py's verify(): AssertionError is a wrong result (_Mismatch with its
    message); any other exception, or a return value other than None (a ``return False``
    would otherwise read as a pass), is a bug in verify (VerifyHookError)."""
    try:
        returned: Any = hook(outputs, golden, dict(shape))
    except AssertionError as exc:
        raise _Mismatch(f"{label}: reference.py verify(): {exc or 'AssertionError'}",
                        None) from None
    except Exception as exc:
        raise VerifyHookError(f"reference.py verify() raised {type(exc).__name__}: {exc} "
                              "(verify reports a wrong result by raising AssertionError; "
                              "anything else is a bug in verify)") from exc
    if returned is not None:  # `return np.allclose(...)`: a False would read as a pass
        raise VerifyHookError(f"reference.py verify() returned {returned!r:.80}; it must "
                              "return None and raise AssertionError when the outputs are "
                              "wrong")


def compare_sum(values: Any, unwritten: Any, want: Any, want_unwritten: Any,
                arg: Mapping[str, Any], label: str) -> float:
    """An output compared by its sum (``compare = "sum"``): the layout may change with the
    config (one partial sum per block), the total may not.

    Float outputs: slots still holding the poison (never written by this run) are skipped,
    in the result and in the golden values alike, so a config with fewer blocks than the
    buffer has slots passes; any NaN or infinity written is wrong; at least one slot must be
    written. Integer outputs: every slot counts (every bit pattern is a value; a kernel must
    write its unused slots). Within ``atol * n + rtol * sum(|want|)`` over the golden's n
    written slots: the per-element tolerance summed over the elements. Returns |difference|.
    """
    import numpy as np

    name = arg["name"]
    got = np.asarray(values).reshape(-1)
    ref = np.asarray(want).reshape(-1)
    integer = got.dtype.kind in "iu"
    if integer:
        mask = np.ones(got.shape, bool)
        ref_mask = np.ones(ref.shape, bool)
    else:
        mask = ~np.asarray(unwritten, bool).reshape(-1)
        ref_mask = ~np.asarray(want_unwritten, bool).reshape(-1)
    if not mask.any():
        raise _Mismatch(f"{label}: {name}: no element written (compare = \"sum\")", None)
    written = got[mask].astype(np.int64 if integer else np.float64)
    if not integer and not np.isfinite(written).all():
        bad = int((~np.isfinite(written)).sum())
        raise _Mismatch(f"{label}: {name}: {bad} written elements are NaN or infinite "
                        f"(compare = \"sum\")", float("nan"))
    expected = ref[ref_mask].astype(np.int64 if integer else np.float64)
    if not integer and not np.isfinite(expected).all():
        raise _Mismatch(f"{label}: {name}: the expected values hold NaN or infinity; their "
                        "sum cannot be compared", None)
    total, goal = written.sum(), expected.sum()
    diff = float(abs(int(total) - int(goal)) if integer else abs(total - goal))
    bound = float(arg["atol"]) * max(1, expected.size) + \
        float(arg["rtol"]) * float(np.abs(expected).sum())
    if diff > bound:
        raise _Mismatch(f"{label}: {name}: the {int(mask.sum())} written elements add up to "
                        f"{float(total):.9g}; expected {float(goal):.9g} (sum of "
                        f"{expected.size}); |difference| {diff:.4g} > {bound:.4g} "
                        f"(atol*n + rtol*sum|want|, compare = \"sum\")", diff)
    return diff


def with_nan(outputs: Mapping[str, tuple[Any, Any]]) -> dict[str, Any]:
    """Output values as verify() gets them: never-written float slots as NaN (integers as
    they are: every bit pattern is a value)."""
    import numpy as np

    out = {}
    for name, (values, unwritten) in outputs.items():
        if values.dtype.kind == "f":
            values = np.where(unwritten, np.nan, values)
        out[name] = values
    return out


def compare_outputs(got: Mapping[str, tuple[Any, Any]], want: Mapping[str, Any],
                    args: list[dict[str, Any]], label: str,
                    verify_hook: VerifyHook | None = None,
                    shape: Mapping[str, int] | None = None) -> float:
    """Raise _Mismatch naming the first bad output; return the largest absolute error.
    With ``verify_hook`` (reference.py verify()) it alone decides; outputs with
    ``compare = "sum"`` are compared by their sums (:func:`compare_sum`)."""
    import numpy as np

    worst = 0.0
    if verify_hook is not None:
        run_verify_hook(verify_hook, with_nan(got),
                        {k: np.asarray(v) for k, v in want.items()}, shape or {}, label)
        return worst
    for arg in args:
        name = arg["name"]
        values, unwritten = got[name]
        if arg.get("compare") == "sum":
            expected_sum = np.asarray(want[name], dtype=np.float64)
            worst = max(worst, compare_sum(values, unwritten, want[name],
                                           np.isnan(expected_sum), arg, label))
            continue
        expected = np.asarray(want[name], dtype=np.float64).reshape(values.shape)
        if values.dtype.kind == "i":  # a kernel may write the poison value: see check_kernels
            unwritten = unwritten & (np.abs(values - expected) > float(arg["atol"]))
        total = values.size
        n_unwritten = int(unwritten.sum())
        if n_unwritten:
            first = tuple(int(i) for i in np.argwhere(unwritten)[0])
            raise _Mismatch(f"{label}: {name}: {n_unwritten} of {total} elements not written "
                            f"(still poison; first at {first})", None)
        bad_nan = np.isnan(values) & ~np.isnan(expected)
        if bad_nan.any():
            first = tuple(int(i) for i in np.argwhere(bad_nan)[0])
            raise _Mismatch(f"{label}: {name}: {int(bad_nan.sum())} of {total} elements are "
                            f"NaN where the expected values are numbers (first at {first})",
                            float("nan"))
        if values.dtype.kind == "i":
            worst = max(worst, _compare_integers(values, want[name], arg, label))
            continue
        rtol, atol = float(arg["rtol"]), float(arg["atol"])
        diff = np.abs(values - expected)
        finite = np.isfinite(diff)
        err = float(diff[finite].max()) if finite.any() else 0.0
        worst = max(worst, err)
        close = np.isclose(values, expected, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            n_bad = int((~close).sum())
            idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(np.where(close, -1, diff))),
                                                         values.shape))
            raise _Mismatch(f"{label}: {name}: {n_bad} of {total} elements outside rtol={rtol} "
                            f"atol={atol}; max abs err {err:.4g} at {idx} "
                            f"(got {values[idx]:.6g}, expected {expected[idx]:.6g})", err)
    return worst


def _compare_integers(values: Any, want: Any, arg: Mapping[str, Any], label: str) -> float:
    """Integer outputs against a reference, as integers: |got - want| <= atol (0: exact)."""
    import numpy as np

    name = arg["name"]
    expected = np.asarray(want).reshape(values.shape)
    if expected.dtype.kind == "f" and (not np.all(np.isfinite(expected))
                                       or np.any(expected != np.round(expected))):
        raise _Mismatch(f"{label}: {name}: reference() returned non-integral values for a "
                            f"{arg['dtype']} output", None)
    expected = expected.astype(np.int64)
    diff = np.abs(values.astype(np.int64) - expected)
    atol = int(arg["atol"])
    bad = diff > atol
    err = float(diff.max()) if diff.size else 0.0
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise _Mismatch(f"{label}: {name}: {int(bad.sum())} of {values.size} elements outside "
                        f"|got - want| <= {atol} (integers); max abs err {err:.0f}; first at "
                        f"{idx} (got {int(values[idx])}, expected {int(expected[idx])})", err)
    return err
