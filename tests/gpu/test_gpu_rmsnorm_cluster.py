"""GPU tier: fused_add_rmsnorm's CLUSTER configs (one row split over the CTAs of an sm_90
thread-block cluster, partial sums through distributed shared memory) compile, launch
through the worker's ordinary launcher (the cluster size is compiled in), verify against
reference.py and time, at a few-long-rows shape and at ``small`` (odd, partial slices), in
both dtypes, plain and in a CUDA graph. Run on the GPU machine: ``pytest -m gpu``."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, Config, Status
from workbench.engine.bench import BenchSettings
from workbench.engine.runner import LocalRunner

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
FAST = BenchSettings(warmup_ms=1.0, min_reps=10, max_reps=200, max_time_s=0.05, timeout_s=10.0)
#: 4 rows of 16384: the shape where one CTA a row leaves 128 of 132 SMs idle
LONG = "long    = { tokens = 4,    hidden = 16384 }"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> KernelFolder:
    """The sample folder with a long-row shape added (a copy: the committed kernel.toml,
    which tunes the named shapes, stays as it is)."""
    copy = tmp_path_factory.mktemp("rmsnorm") / "fused_add_rmsnorm"
    shutil.copytree(ROOT / "sample_kernels" / "fused_add_rmsnorm", copy,
                    ignore=shutil.ignore_patterns("recordings"))
    toml = copy / "kernel.toml"
    text = toml.read_text()
    toml.write_text(text.replace("[shapes]\n", f"[shapes]\n{LONG}\n", 1))
    return load_kernel_folder(copy)


def _cluster_config(folder: KernelFolder, shape: str, dtype: str, cluster: int,
                    vec_bytes: int = 16, hidden_const: bool = False) -> Config:
    """The smallest block (and ITEMS) that holds one CTA's slice of the row."""
    env = folder.env(shape, dtype)
    vectors = env["hidden"] // (vec_bytes // env["elem_bytes"])
    slice_vectors = math.ceil(vectors / cluster)
    threads = min(1024, max(32, 1 << (slice_vectors - 1).bit_length()))
    items = 1
    while threads * items < slice_vectors:
        items *= 2
    cfg = folder.template.default_config().replace(
        CLUSTER=cluster, ROW_IN_REGS=1, VEC_BYTES=vec_bytes, BLOCK_THREADS=threads,
        ITEMS=items, HIDDEN_CONST=env["hidden"] if hidden_const else 0)
    assert folder.space(shape, dtype).rejection(cfg) is None, (shape, dtype, dict(cfg))
    return cfg


def _candidates(folder: KernelFolder, shape: str, dtype: str) -> list[Candidate]:
    configs = [_cluster_config(folder, shape, dtype, c) for c in (2, 4, 8)]
    configs += [_cluster_config(folder, shape, dtype, 8, hidden_const=True),
                _cluster_config(folder, shape, dtype, 2, vec_bytes=8)]  # ITEMS 2 at long
    return [Candidate(c, shape, dtype) for c in configs]


@pytest.mark.timeout(600)
def test_cluster_configs_verify_and_time_at_long_rows_and_small(folder: KernelFolder) -> None:
    with LocalRunner(folder, settings=FAST) as runner:
        for shape in ("long", "small"):
            for dtype in folder.dtypes:
                candidates = _candidates(folder, shape, dtype)
                results = list(runner.measure(candidates))
                assert len(results) == len(candidates)
                for r in results:
                    assert r.status is Status.OK, (shape, dtype, dict(r.config), r.reason)
                    assert r.timing is not None and r.timing.median_us > 0
                    launch = r.extra["launch"]
                    tokens = folder.shape_values(shape)["tokens"]
                    assert launch["grid"][0] == tokens * int(r.config["CLUSTER"]), launch
        graph = list(runner.measure(_candidates(folder, "long", "bf16")[:3], condition="graph"))
        for r in graph:
            assert r.status is Status.OK, (dict(r.config), r.reason)
            assert r.timing is not None and r.timing.median_us > 0
