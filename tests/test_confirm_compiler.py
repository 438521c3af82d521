"""The confirmation measures nvcc's code: under ``WORKBENCH_NVRTC=all`` the search compiles
with NVRTC (faster; shared-memory kernels' code differs from nvcc's), and the rounds that
re-measure the finalists under cache conditions compile with the compiler's nvcc-only twin
(:meth:`Compiler.faithful`), in the direct runner and in the Dask runner's confirmation.
Each measured result says which compiler built it (``extra["built_by"]``), and a stored
confirmation reads it back.

Real parts: nvcc and NVRTC (skipped, saying why, where either is missing), the real
:class:`LocalRunner` whose GPU worker is a stand-in process answering hello / load /
evaluate (it times nothing: it reports a fixed time and logs which cubin it was handed), a
real SQLite store, and the Dask tasks called in this process through a client stand-in.
"""

from __future__ import annotations

import json
import shutil
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.picks import ConfirmationMeasurement, PickRecord
from workbench.core.records import Candidate, Config, Status
from workbench.core.template import KernelInstance
from workbench.engine.compiler import Compiler, find_nvcc, nvcc_version
from workbench.engine.nvrtc import find_nvrtc
from workbench.engine.tuning import Confirmation, confirm_finalists

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "sample_kernels" / "fused_add_rmsnorm"  # shared memory: NVRTC's code differs
SHAPE, DTYPE = "decode", "bf16"

pytestmark = pytest.mark.timeout(300)


def _nvcc_and_nvrtc() -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    nvcc = find_nvcc()
    if find_nvrtc(nvcc, nvcc_version(nvcc), "all") is None:
        pytest.skip("no libnvrtc of nvcc's release (pip install nvidia-cuda-nvrtc)")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _nvcc_and_nvrtc()
    return tmp_path_factory.mktemp("cubins")


def _folder() -> KernelFolder:
    return load_kernel_folder(FOLDER)


def _candidates(folder: KernelFolder) -> list[Candidate]:
    default = Config(**folder.template.default_config())
    return [Candidate(default, SHAPE, DTYPE)]


def _builder_of(cubin: str) -> str:
    """Which compiler built the cache entry holding ``cubin`` (its result.json)."""
    return str(json.loads((Path(cubin).parent / "result.json").read_text())["compiler"])


# -- the compiler's twin ---------------------------------------------------------------------


def test_faithful_is_an_nvcc_twin_only_where_the_code_may_differ(cache: Path) -> None:
    instance = _folder().template.render(_folder().template.default_config(), DTYPE)
    every = Compiler("sm_90a", cache_dir=cache, nvrtc="all")
    twin = every.faithful()
    assert every.may_differ and twin is not every and every.faithful() is twin
    assert twin.backend is None and not twin.may_differ and twin.faithful() is twin
    assert (twin.flags, twin.arch, twin.cache_dir, twin.nvcc) == (
        every.flags, every.arch, every.cache_dir, every.nvcc)
    assert "nvrtc" in every.version and "nvrtc" not in twin.version
    assert twin.cache_key(instance) != every.cache_key(instance)

    fast, slow = every.compile(instance), twin.compile(instance)
    assert (fast.ok, fast.compiler) == (True, "nvrtc")
    assert (slow.ok, slow.compiler) == (True, "nvcc")
    assert fast.cubin_path != slow.cubin_path  # both artifacts kept, one cache folder
    assert every.compile(instance).cached and twin.compile(instance).cached

    same_code = Compiler("sm_90a", cache_dir=cache, nvrtc="on")
    nvcc_only = Compiler("sm_90a", cache_dir=cache, nvrtc="off")
    assert same_code.backend is not None and not same_code.may_differ
    assert same_code.faithful() is same_code and nvcc_only.faithful() is nvcc_only


# -- the direct runner, through a stand-in GPU worker ------------------------------------------

WORKER = """
import json, sys
from workbench.core.records import Status, Timing
from workbench.engine.worker import read_message, write_message
from workbench.engine.worker_messages import EvaluateReply, HelloReply, LoadReply

ATTRS = {ATTRS}
LOG = {LOG!r}
while True:
    m = read_message(sys.stdin.buffer)
    if m is None or m.get("cmd") == "quit":
        write_message(sys.stdout.buffer, {{"ok": True}}); break
    if m["cmd"] == "hello":
        reply = HelloReply(name="NVIDIA H100 80GB HBM3", attrs=ATTRS, compute_capability=(9, 0),
                           total_memory_bytes=80 << 30, cuda_driver_version="13.0",
                           pycuda_cuda_version="13.0", pid=1,
                           cupti_error="a stand-in worker").to_message()
    elif m["cmd"] == "load":
        with open(LOG, "a") as f:
            f.write(json.dumps({{"baseline": m["baseline"]["cubin"]}}) + "\\n")
        reply = LoadReply(load_s=0.0, device_bytes=0).to_message()
    else:
        with open(LOG, "a") as f:
            f.write(json.dumps({{"cubin": m["cubin"], "condition": m.get("condition")}}) + "\\n")
        us = 5.0
        timing = Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=10,
                        rse_median_pct=0.1, l2_flushed=True)
        reply = EvaluateReply(status=Status.OK, timing=timing, verify_s=0.0,
                              bench_s=0.0).to_message()
    write_message(sys.stdout.buffer, reply)
"""

H100_ATTRS = {
    "MULTIPROCESSOR_COUNT": 132, "WARP_SIZE": 32, "MAX_THREADS_PER_BLOCK": 1024,
    "MAX_THREADS_PER_MULTIPROCESSOR": 2048, "MAX_BLOCKS_PER_MULTIPROCESSOR": 32,
    "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536, "MAX_REGISTERS_PER_BLOCK": 65536,
    "MAX_SHARED_MEMORY_PER_BLOCK": 49152, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472, "RESERVED_SHARED_MEMORY_PER_BLOCK": 1024,
    "L2_CACHE_SIZE": 50 << 20, "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0,
    "MEMORY_CLOCK_RATE": 2619000, "GLOBAL_MEMORY_BUS_WIDTH": 5120,
}


def _stand_in_worker(folder: Path) -> tuple[str, Path]:
    """An 'interpreter' that ignores ``-m workbench.engine.worker`` and runs the stand-in;
    and the log of what it was handed."""
    log = folder / "evaluated.jsonl"
    script = folder / "worker.py"
    script.write_text(WORKER.format(ATTRS=repr(H100_ATTRS), LOG=str(log)))
    shim = folder / "python"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return str(shim), log


def _evaluated(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture
def runner(cache: Path, tmp_path: Path) -> Iterator[Any]:
    from workbench.engine.runner import LocalRunner

    python, log = _stand_in_worker(tmp_path)
    compiler = Compiler("sm_90a", cache_dir=cache, nvrtc="all")
    with LocalRunner(_folder(), compiler=compiler, python=python, jobs=2) as live:
        live.log = log  # type: ignore[attr-defined]
        yield live


def test_the_search_times_nvrtcs_code_and_the_confirmation_nvccs(runner: Any) -> None:
    from workbench.core.conditions import PickRule
    from workbench.engine.conditions import confirm_under_conditions

    candidates = _candidates(runner.folder)
    [searched] = list(runner.measure(candidates))
    assert searched.status is Status.OK and searched.extra["built_by"] == "nvrtc"
    search_cubins = [e["cubin"] for e in _evaluated(runner.log) if "cubin" in e]
    assert [_builder_of(c) for c in search_cubins] == ["nvrtc"]

    confirmation = confirm_under_conditions(runner, [searched], ["read", "warm"], PickRule())
    assert not isinstance(confirmation, str), confirmation
    assert confirmation.config == searched.config
    built = {(r.extra["round"], r.extra["condition"], r.extra["is_baseline"]):
             r.extra["built_by"] for r in confirmation.results}
    assert len(built) == 8 and set(built.values()) == {"nvcc"}  # 2 rounds x 2 x (pick, base)
    timed = [e for e in _evaluated(runner.log) if "cubin" in e][len(search_cubins):]
    assert {e["condition"] for e in timed} == {"read", "warm"}
    assert {_builder_of(e["cubin"]) for e in timed} == {"nvcc"}
    assert not set(search_cubins) & {e["cubin"] for e in timed}

    [again] = list(runner.measure(candidates))  # after the rounds: the search's compiler
    assert again.extra["built_by"] == "nvrtc"
    assert runner.baseline(SHAPE, DTYPE).extra["built_by"] == "nvrtc"


def test_a_confirmation_under_the_search_condition_alone_times_nvccs_code(runner: Any) -> None:
    """``confirm_finalists`` with conditions ("read",) (stage 1's corpus runs, a tune that
    asks for no condition table) re-measures on nvcc's code too, and the runner's search
    compiles with NVRTC afterwards."""
    from workbench.engine.tuning import Confirmation, confirm_finalists

    candidates = _candidates(runner.folder)
    [searched] = list(runner.measure(candidates))
    assert searched.extra["built_by"] == "nvrtc"
    seen: list[tuple[int, str]] = []
    confirmation = confirm_finalists(runner, [searched], conditions=("read",),
                                     on_result=lambda i, r: seen.append(
                                         (i, r.extra["built_by"])))
    assert isinstance(confirmation, Confirmation), confirmation
    assert seen == [(1, "nvcc"), (2, "nvcc")]
    assert confirmation.chosen.extra["built_by"] == "nvcc"
    [again] = list(runner.measure(candidates))
    assert again.extra["built_by"] == "nvrtc"


def test_a_stored_confirmation_says_nvcc_built_what_it_timed(runner: Any,
                                                              tmp_path: Path) -> None:
    from workbench.store.base import provenance_for
    from workbench.store.sqlite import SQLiteStore

    candidates = _candidates(runner.folder)
    [searched] = list(runner.measure(candidates))
    [confirmed] = runner.measure(candidates, condition="read")
    baseline = runner.baseline(SHAPE, DTYPE, condition="read")
    assert (searched.extra["built_by"], confirmed.extra["built_by"],
            baseline.extra["built_by"]) == ("nvrtc", "nvcc", "nvcc")

    store = SQLiteStore(tmp_path / "store.sqlite")
    provenance = provenance_for(runner, runner.template)
    assert "nvrtc" in provenance.compiler  # the search's trials say NVRTC built them
    pick = PickRecord(id="p1", kernel=runner.folder.name, template_version="v1", shape=SHAPE,
                      dtype=DTYPE, config=confirmed.config, decided="confirmed",
                      rule="test", median_us=5.0, device=runner.device.name, condition="read")
    store.record_pick(pick, provenance, [
        ConfirmationMeasurement(2, "read", False, confirmed),
        ConfirmationMeasurement(2, "read", True, baseline)])
    stored = store.confirmations("p1")
    assert [(s.is_baseline, s.result.extra["built_by"]) for s in stored] == [
        (False, "nvcc"), (True, "nvcc")]


# -- the Dask runner's confirmation, its tasks run here -----------------------------------------


@dataclass(frozen=True)
class StandInEndpoint:
    """A LocalRunner on the stand-in worker, compiling as ``WORKBENCH_NVRTC=all`` does."""

    python: str
    cache: str

    @property
    def key(self) -> str:
        return f"stand-in-{self.python}"

    def build(self) -> Any:
        from workbench.engine.runner import LocalRunner

        return LocalRunner(_folder(), python=self.python, jobs=1,
                           compiler=Compiler("sm_90a", cache_dir=self.cache, nvrtc="all"))

    def instance(self, candidate: Candidate) -> KernelInstance | None:
        template = _folder().template
        return template.render(template.validate_config(candidate.config), candidate.dtype)


class _Done:
    """A finished future."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class InProcessClient:
    """The few client calls a confirmation makes, run at once in this process (Dask's
    futures passed as arguments arrive as their values, as on a worker)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.compile_keys: list[str] = []

    def scheduler_info(self, n_workers: int = -1) -> dict[str, Any]:
        return {"workers": {self.address: {"resources": {"GPU": 1}}}}

    def compute(self, tasks: list[Any], optimize_graph: bool = False) -> list[_Done]:
        self.compile_keys += [str(t.key) for t in tasks]
        return [_Done(t.compute(scheduler="sync")) for t in tasks]

    def submit(self, fn: Any, *args: Any, **_: Any) -> _Done:
        def value(a: Any) -> Any:
            if isinstance(a, list):
                return [value(x) for x in a]
            return a.result() if isinstance(a, _Done) else a
        return _Done(fn(*(value(a) for a in args)))

    def cancel(self, futures: Any) -> None:
        pass

    def run_on_scheduler(self, fn: Any) -> bool:
        return False


def test_the_dask_confirmation_compiles_with_nvcc(cache: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dask")
    pytest.importorskip("distributed")
    from workbench.engine import dask_tasks
    from workbench.engine.dask_runner import DaskRunner

    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(cache))
    monkeypatch.setenv("WORKBENCH_NVRTC", "all")  # the cluster's compile tasks read it
    python, log = _stand_in_worker(tmp_path)
    endpoint = StandInEndpoint(python, str(cache))
    packed = dask_tasks.PackedEndpoint.pack(endpoint)
    info = dask_tasks.hello(packed)
    assert "nvrtc" in info.compiler_version  # the search's identity: NVRTC for every kernel
    client = InProcessClient(info.address)
    cluster = DaskRunner(client, endpoint, [info])
    monkeypatch.setattr(cluster, "_await_on", lambda address, future: future.result())
    try:
        candidates = _candidates(_folder())
        [confirmed] = cluster.measure(candidates, condition="read")
        baseline = cluster.baseline(SHAPE, DTYPE, condition="read")
        assert (confirmed.status, confirmed.extra["built_by"]) == (Status.OK, "nvcc")
        assert baseline.extra["built_by"] == "nvcc"
        assert client.compile_keys and all(k.startswith("wb-compile-nvcc-")
                                           for k in client.compile_keys)
        timed = [e for e in _evaluated(log) if "cubin" in e]
        assert [e["condition"] for e in timed] == ["read", "read"]
        assert {_builder_of(e["cubin"]) for e in timed} == {"nvcc"}

        # a confirmation under the search's condition alone (no condition table) on the
        # cluster measures the same way: nvcc's code, the search's condition
        assert cluster.search_condition == "read"
        got = confirm_finalists(cluster, [confirmed])
        assert isinstance(got, Confirmation), got
        assert got.chosen.extra["built_by"] == "nvcc"
        assert all(k.startswith("wb-compile-nvcc-") for k in client.compile_keys)
        timed = [e for e in _evaluated(log) if "cubin" in e]
        assert len(timed) == 4 and {_builder_of(e["cubin"]) for e in timed} == {"nvcc"}

        instance = endpoint.instance(candidates[0])
        assert instance is not None
        search = dask_tasks.compile_instance("sm_90a", instance)
        assert search.result.compiler == "nvrtc"  # the search's compiles stay NVRTC's
    finally:
        dask_tasks.close_runners()


def test_the_clusters_faithful_compile_is_adopted_as_the_runners_own(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A confirmation's cubin compiled by the cluster lands under the key the runner's
    faithful compiler looks up (another host's cubin is adopted, not compiled again)."""
    from workbench.engine import dask_tasks

    other = tmp_path / "other-host-cache"
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(other))
    monkeypatch.setenv("WORKBENCH_NVRTC", "all")
    instance = StandInEndpoint("", "").instance(_candidates(_folder())[0])
    assert instance is not None
    artifact = dask_tasks.compile_instance("sm_90a", instance, faithful=True)
    assert artifact.result.ok and artifact.result.compiler == "nvcc"
    here = Compiler("sm_90a", cache_dir=tmp_path / "here", nvrtc="all")
    assert here.faithful().adopt(artifact.result, artifact.cubin)
    answered = here.faithful().compile(instance)
    assert answered.cached and answered.compiler == "nvcc"
    assert Path(answered.cubin_path or "").read_bytes() == artifact.cubin
