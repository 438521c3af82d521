"""Outputs whose layout changes with the config (issue 28, item 2), pure tier: compare =
"sum" and reference.py verify(), as the worker's host-side comparison applies them (the
GPU path: tests/gpu/test_constants_gpu.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_stage1_folders import toml_arg, toml_head, write_folder

from workbench.core.errors import KernelFolderError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.engine.output_compare import (
    VerifyHookError,
    _Mismatch,
    compare_outputs,
    compare_sum,
    run_verify_hook,
)

CORPUS = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute"
ARG = {"name": "partials", "dtype": "f32", "role": "out", "rtol": 0.0, "atol": 0.5,
       "compare": "sum"}


def _slots(values: list[float], size: int) -> tuple[np.ndarray, np.ndarray]:
    """A buffer of ``size`` slots, the first ones written with ``values``."""
    out = np.full(size, np.nan)
    out[:len(values)] = values
    unwritten = np.zeros(size, bool)
    unwritten[len(values):] = True
    return out, unwritten


def test_sum_passes_when_the_layout_changes_but_the_total_does_not() -> None:
    want, want_unwritten = _slots([1.0, 2.0, 3.0, 4.0], 8)
    got, unwritten = _slots([3.0, 7.0], 8)  # half the blocks, the same total
    assert compare_sum(got, unwritten, want, want_unwritten, ARG, "set 1") == 0.0


def test_sum_fails_naming_both_totals() -> None:
    want, want_unwritten = _slots([1.0, 2.0, 3.0, 4.0], 8)
    got, unwritten = _slots([3.0, 3.0], 8)  # 4 off; the bound is 0.5 * 4 slots
    with pytest.raises(_Mismatch, match=r"add up to 6; expected 10"):
        compare_sum(got, unwritten, want, want_unwritten, ARG, "set 1")


def test_sum_tolerance_is_the_elementwise_one_summed_over_the_count() -> None:
    want, want_unwritten = _slots([1.0] * 4, 4)
    got, unwritten = _slots([1.0, 1.0, 1.0, 2.9], 4)  # off by 1.9 <= 0.5 * 4
    assert compare_sum(got, unwritten, want, want_unwritten, ARG, "x") == pytest.approx(1.9)
    got, unwritten = _slots([1.0, 1.0, 1.0, 3.1], 4)  # off by 2.1 > 2.0
    with pytest.raises(_Mismatch, match="atol"):
        compare_sum(got, unwritten, want, want_unwritten, ARG, "x")


def test_sum_refuses_nothing_written_and_written_nan() -> None:
    want, want_unwritten = _slots([1.0], 4)
    with pytest.raises(_Mismatch, match="no element written"):
        compare_sum(*_slots([], 4), want, want_unwritten, ARG, "x")
    with pytest.raises(_Mismatch, match="NaN or infinite"):
        compare_sum(np.array([1.0, np.nan]), np.array([False, False]), want,
                    want_unwritten, ARG, "x")


def test_integer_sum_counts_every_slot() -> None:
    arg = {**ARG, "dtype": "i32", "atol": 0.0}
    want = np.array([5, 5], dtype=np.int64)
    assert compare_sum(np.array([10, 0]), np.array([False, True]), want,
                       np.zeros(2, bool), arg, "x") == 0.0
    with pytest.raises(_Mismatch):
        compare_sum(np.array([10, 1]), np.array([False, True]), want, np.zeros(2, bool),
                    arg, "x")


def test_verify_hook_assertion_is_a_wrong_result_other_errors_are_bugs() -> None:
    def wrong(outputs: dict[str, Any], golden: dict[str, Any], shape: dict[str, int]) -> None:
        raise AssertionError(f"off by one at n={shape['n']}")

    def broken(outputs: dict[str, Any], golden: dict[str, Any], shape: dict[str, int]) -> None:
        raise KeyError("partial")

    with pytest.raises(_Mismatch, match=r"set 1: reference.py verify\(\): off by one at n=3"):
        run_verify_hook(wrong, {}, {}, {"n": 3}, "set 1")
    with pytest.raises(VerifyHookError, match="raised KeyError"):
        run_verify_hook(broken, {}, {}, {"n": 3}, "set 1")


def test_compare_outputs_uses_the_hook_first_then_sums() -> None:
    got = {"partials": _slots([3.0, 7.0], 8)}
    seen: list[Any] = []

    def hook(outputs: dict[str, Any], golden: dict[str, Any], shape: dict[str, int]) -> None:
        seen.append((outputs["partials"].copy(), shape))

    compare_outputs(got, {"partials": np.array([10.0])}, [ARG], "x", hook, {"n": 2})
    assert np.isnan(seen[0][0][2:]).all() and seen[0][1] == {"n": 2}  # unwritten as NaN
    compare_outputs(got, {"partials": np.array([1.0, 2.0, 3.0, 4.0])}, [ARG], "x")
    with pytest.raises(_Mismatch):
        compare_outputs(got, {"partials": np.array([1.0, 2.0])}, [ARG], "x")
    elementwise = {**ARG, "compare": "elementwise"}
    with pytest.raises(_Mismatch, match="not written"):
        compare_outputs(got, {"partials": np.arange(8.0)}, [elementwise], "x")


def test_partial_sum_corpus_verify_accepts_any_block_count() -> None:
    folder = load_kernel_folder(CORPUS / "partial_sum")
    assert "verify" in folder.reference_functions
    assert next(a for a in folder.args if a.name == "partials").compare == "sum"
    ref = folder.load_reference()
    golden = {"partials": np.array([4.0, -2.0, 1.0, 0.0])}
    ref.verify({"partials": np.array([3.0, np.nan, np.nan, np.nan])}, golden, {"n": 9})
    with pytest.raises(AssertionError, match="add up to"):
        ref.verify({"partials": np.array([2.0, np.nan, np.nan, np.nan])}, golden, {"n": 9})


def _toml(out_extra: str = "", in_extra: str = "") -> str:
    return (toml_head("k", "n = 100", "rtol = 1e-5, atol = 1e-6")
            + toml_arg("out", "f32", "out", shape=("n",)) + out_extra + "\n"
            + toml_arg("in", "f32", "in", shape=("n",)) + in_extra + "\n"
            + '[baseline]\nentry = "k"\ngrid = ["ceil_div(n, 128)"]\nblock = ["128"]\n')


SOURCE = 'extern "C" __global__ void k(float* out, const float* in) { out[0] = in[0]; }\n'


def _folder(tmp_path: Path, out_extra: str = "", in_extra: str = "",
            reference: str | None = None) -> Path:
    return write_folder(tmp_path, {"baseline.cu": SOURCE,
                                   "kernel.toml": _toml(out_extra, in_extra),
                                   "reference.py": reference})


@pytest.mark.parametrize(("out_extra", "in_extra", "says"), [
    ("", 'compare = "sum"', "no compare for a in argument"),
    ('compare = "mean"', "", "one of ['elementwise', 'sum']"),
])
def test_bad_compare_is_a_folder_problem(tmp_path: Path, out_extra: str, in_extra: str,
                                         says: str) -> None:
    with pytest.raises(KernelFolderError, match=r"compare") as info:
        load_kernel_folder(_folder(tmp_path, out_extra, in_extra))
    assert says in str(info.value)


def test_verify_with_the_wrong_parameters_is_a_folder_problem(tmp_path: Path) -> None:
    with pytest.raises(KernelFolderError, match=r"verify\(outputs, golden\)"):
        load_kernel_folder(_folder(tmp_path, reference="def verify(outputs, golden):\n    pass\n"))
    load_kernel_folder(_folder(tmp_path, reference="def verify(o, g, s):\n    pass\n"))
