"""The three sample kernel folders: they load, their CUDA compiles, their references are right.

Compile tests call nvcc directly (skipped where it is missing); reference tests compare each
reference.py with an independent float64 formula written element by element here.
"""

from __future__ import annotations

import functools
import json
import math
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Config
from workbench.core.space import SearchSpace

ROOT = Path(__file__).resolve().parent.parent / "sample_kernels"
KERNELS = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")

# Corners of each space: largest/smallest blocks, vectors, unrolls and each mode switch.
EXTREMES: dict[str, list[dict[str, int]]] = {
    k: v for k, v in json.loads((ROOT / "corner_configs.json").read_text()).items()
    if k != "about"}

_USAGE = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@functools.cache
def _folder(name: str) -> KernelFolder:
    """The sample folder, loaded once a session (0.13-0.27 s a load; the tests only read it)."""
    return load_kernel_folder(ROOT / name)


@functools.cache
def _spaces(name: str, dtype: str) -> dict[str, SearchSpace]:
    """The folder's space at each of its shapes for ``dtype``, built once a session."""
    kf = _folder(name)
    return {shape: kf.space(shape, dtype) for shape in kf.shapes}


def _reference(name: str) -> ModuleType:
    return _folder(name).load_reference()


def _nvcc(source: str) -> tuple[int, str]:
    """Compile one rendered source to a cubin for sm_90a; (return code, nvcc + ptxas log)."""
    assert NVCC is not None
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.cu"
        src.write_text(source)
        proc = subprocess.run(
            [NVCC, "-cubin", "-arch=sm_90a", "-O3", "-Xptxas", "-v", "-o", str(Path(tmp) / "k.cubin"), str(src)],
            capture_output=True, text=True, timeout=100, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def _nvcc_all(sources: dict[str, str]) -> dict[str, tuple[int, str]]:
    """Compile several sources two at a time (the CI machine has two cores)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(_nvcc, sources.values())
        return dict(zip(sources, results, strict=True))


def _feasible_somewhere(kf: KernelFolder, config: Mapping[str, int], dtype: str) -> bool:
    return any(Config(config) in space for space in _spaces(kf.name, dtype).values())


# --- folders and spaces -------------------------------------------------------------------


@pytest.mark.parametrize("name", KERNELS)
def test_folder_loads_with_every_default_feasible(name: str) -> None:
    # load_kernel_folder itself checks the defaults against every shape and dtype.
    kf = _folder(name)
    assert kf.name == name
    assert kf.check_shape == "small"
    assert {"small", "decode", "prefill", "large"} <= set(kf.shapes)
    assert len(kf.template.params) >= 4


@pytest.mark.parametrize("name", KERNELS)
def test_space_sizes_stay_sweepable(name: str) -> None:
    kf = _folder(name)
    for dtype in kf.dtypes:
        for shape, space in _spaces(name, dtype).items():
            # exhaustive sweeps on the GPU machine cost the feasible size; the product only
            # costs enumeration (10^6 points in ~0.1 s, benchmarks/search/bench_space.py); at the
            # sweeps' ~32 ms per config (7,560 in 244 s) 3,200 configs are 100 s per shape
            assert 100 <= space.raw_size <= 50_000
            assert 100 <= space.size <= min(3200, space.raw_size), (shape, dtype, space.size)


@pytest.mark.parametrize("name", KERNELS)
def test_template_defaults_launch_like_the_baseline(name: str) -> None:
    kf = _folder(name)
    default = kf.template.default_config()
    for dtype in kf.dtypes:
        for shape in kf.shapes:
            env = kf.env(shape, dtype)
            ours = kf.template.launch_for(default, env)
            base = kf.baseline.launch_for({}, env)
            assert (ours.blocks, ours.threads_per_block, ours.smem_bytes) == \
                (base.blocks, base.threads_per_block, base.smem_bytes), (shape, dtype)


@pytest.mark.parametrize("name", KERNELS)
def test_extreme_configs_are_in_the_space(name: str) -> None:
    kf = _folder(name)
    for config in EXTREMES[name]:
        assert any(_feasible_somewhere(kf, config, d) for d in kf.dtypes), config


# --- compilation --------------------------------------------------------------------------


@needs_nvcc
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", KERNELS)
def test_baseline_and_template_defaults_compile_without_spills(name: str) -> None:
    kf = _folder(name)
    sources = {}
    for dtype in kf.dtypes:
        sources[f"baseline {dtype}"] = kf.baseline.render({}, dtype).source
        sources[f"template {dtype}"] = kf.template.render(kf.template.default_config(), dtype).source
    for label, (rc, log) in _nvcc_all(sources).items():
        assert rc == 0, f"{label}:\n{log}"
        assert _USAGE.search(log), log
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{label} spills:\n{log}"


@needs_nvcc
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", KERNELS)
def test_extreme_template_configs_compile(name: str) -> None:
    kf = _folder(name)
    sources = {}
    for i, config in enumerate(EXTREMES[name]):
        # one dtype per config, rotating, so every dtype meets some extreme at CI cost
        rotated = kf.dtypes[i % len(kf.dtypes):] + kf.dtypes[:i % len(kf.dtypes)]
        dtype = next(d for d in rotated if _feasible_somewhere(kf, config, d))
        sources[f"{config} {dtype}"] = kf.template.render(config, dtype).source
    for label, (rc, log) in _nvcc_all(sources).items():
        assert rc == 0, f"{label}:\n{log}"


@needs_nvcc
def test_a_broken_template_config_fails_to_compile() -> None:
    # The template's static_asserts refuse a row group that is not a power of two (the
    # shuffle width), so a bad config is a compile error rather than a wrong result.
    kf = _folder("merge_attn_states_lse")
    source = kf.template.render(kf.template.default_config(), "bf16").source
    rc, log = _nvcc(source.replace("#define THREADS_PER_ROW 0", "#define THREADS_PER_ROW 3"))
    assert rc != 0 and "THREADS_PER_ROW" in log


# --- inputs and references ----------------------------------------------------------------


@pytest.mark.parametrize("name", KERNELS)
def test_inputs_are_float32_nonzero_and_seeded(name: str) -> None:
    kf = _folder(name)
    ref = kf.load_reference()
    shape = kf.shape_values("odd")
    inputs = ref.make_inputs(shape, kf.dtypes[0], np.random.default_rng(7))
    again = ref.make_inputs(shape, kf.dtypes[0], np.random.default_rng(7))
    wanted = {a.name for a in kf.args if a.role in ("in", "inout")}
    assert set(inputs) == wanted
    env = kf.env("odd", kf.dtypes[0])
    for arg in kf.args:
        if arg.name in wanted:
            x = inputs[arg.name]
            assert x.dtype == np.float32 and x.shape == arg.shape_for(env)
            assert np.count_nonzero(x) > 0.9 * x.size
            np.testing.assert_array_equal(x, again[arg.name])


def test_merge_inputs_mark_about_a_tenth_empty_and_never_both() -> None:
    ref = _reference("merge_attn_states_lse")
    inputs = ref.make_inputs({"tokens": 613, "heads": 8, "head_dim": 48}, "bf16", np.random.default_rng(0))
    inf_a, inf_b = np.isposinf(inputs["s_a"]), np.isposinf(inputs["s_b"])
    assert not np.any(inf_a & inf_b)
    assert 0.07 < np.mean(inf_a | inf_b) < 0.13
    assert inf_a.any() and inf_b.any()
    finite = inputs["s_a"][~inf_a]
    assert 1.5 < float(np.std(finite)) < 2.5  # LSE ~ N(0, 2^2)


def _round_bf16(x: float) -> float:
    """Round-to-nearest-even to bfloat16, by hand (independent of workbench.core.dtypes)."""
    bits = int(np.array(x, dtype=np.float32).view(np.uint32))
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return float(np.array(bits, dtype=np.uint32).view(np.float32))


def _round(x: float, dtype: str) -> float:
    return _round_bf16(x) if dtype == "bf16" else float(np.float16(x))


def _quantized(inputs: dict[str, np.ndarray], dtype: str, keep: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Inputs as the workbench passes them: element-dtype arguments rounded to dtype."""
    return {k: v if k in keep else np.vectorize(lambda e: _round(float(e), dtype))(v).astype(np.float32)
            for k, v in inputs.items()}


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_silu_reference_rounds_the_activation_before_the_multiply(dtype: str) -> None:
    ref = _reference("silu_and_mul")
    shape = {"tokens": 3, "d": 16}
    inputs = _quantized(ref.make_inputs(shape, dtype, np.random.default_rng(1)), dtype)
    got = ref.reference(inputs, shape, dtype)["out"]
    x = inputs["input"]
    for t in range(3):
        for j in range(16):
            g, u = float(x[t, j]), float(x[t, 16 + j])
            act = _round(g / (1.0 + math.exp(-g)), dtype)
            assert got[t, j] == pytest.approx(act * u, rel=1e-6, abs=1e-7)
    unrounded = x[:, :16] / (1 + np.exp(-x[:, :16].astype(np.float64))) * x[:, 16:]
    assert not np.allclose(got, unrounded, rtol=1e-6, atol=0)  # the rounding is really there


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_rmsnorm_reference_matches_the_definition(dtype: str) -> None:
    ref = _reference("fused_add_rmsnorm")
    shape = {"tokens": 4, "hidden": 24}
    inputs = _quantized(ref.make_inputs(shape, dtype, np.random.default_rng(2)), dtype)
    got = ref.reference(inputs, shape, dtype)
    assert set(got) == {"input", "residual"}
    for t in range(4):
        x = [float(inputs["input"][t, j]) + float(inputs["residual"][t, j]) for j in range(24)]
        rms = math.sqrt(sum(v * v for v in x) / 24 + 1e-6)
        for j in range(24):
            assert got["residual"][t, j] == _round(x[j], dtype)
            want = x[j] / rms * float(inputs["weight"][j])
            assert got["input"][t, j] == pytest.approx(want, rel=1e-6, abs=1e-7)


def test_merge_reference_matches_the_definition() -> None:
    ref = _reference("merge_attn_states_lse")
    shape = {"tokens": 5, "heads": 4, "head_dim": 8}
    inputs: dict[str, Any] = ref.make_inputs(shape, "fp32", np.random.default_rng(3))
    inputs["s_a"][0, 0] = np.inf  # make sure both kinds of empty segment are exercised
    inputs["s_b"][0, 1] = np.inf
    got = ref.reference(inputs, shape, "fp32")
    for t in range(5):
        for h in range(4):
            sa, sb = float(inputs["s_a"][t, h]), float(inputs["s_b"][t, h])
            wa = 0.0 if math.isinf(sa) else math.exp(sa)  # +inf marks an empty segment
            wb = 0.0 if math.isinf(sb) else math.exp(sb)
            assert got["out_lse"][t, h] == pytest.approx(math.log(wa + wb), rel=1e-12)
            for e in range(8):
                want = (wa * float(inputs["v_a"][t, h, e]) + wb * float(inputs["v_b"][t, h, e])) / (wa + wb)
                assert got["out"][t, h, e] == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert np.all(np.isfinite(got["out"])) and np.all(np.isfinite(got["out_lse"]))
    np.testing.assert_allclose(got["out"][0, 0], inputs["v_b"][0, 0], rtol=1e-12)
    np.testing.assert_allclose(got["out"][0, 1], inputs["v_a"][0, 1], rtol=1e-12)
