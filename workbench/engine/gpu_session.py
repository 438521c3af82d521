"""The child's GPU session: one CUDA context, loaded modules, the current problem.

Lives in the worker process only (:mod:`workbench.engine.worker` runs it); pycuda, pynvml
and numpy are imported lazily inside methods, so this module imports fine without a GPU.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from workbench.core.errors import NoGPUError, WorkerError
from workbench.core.feasibility import needs_smem_optin
from workbench.core.inputs import complete_inputs, default_inputs
from workbench.core.records import ClockStats, Status, Timing, TimingMethod
from workbench.engine.bench import BenchSettings
from workbench.engine.conditions import ConditionTiming, timing_of
from workbench.engine.gpu_verify import _InputSet
from workbench.engine.nvml import Nvml, throttled
from workbench.engine.output_compare import VerifyHookError, _Mismatch, compare_outputs
from workbench.engine.spin_up import (
    SPIN_UP_S,
    SpinUp,
    SpinUpReason,
    spin_up_reason,
    started_cold,
)
from workbench.engine.timing_loop import PLACEMENTS, flush_bytes
from workbench.engine.worker_messages import (
    CopyReply,
    CopyRequest,
    EvaluateReply,
    EvaluateRequest,
    HelloReply,
    HelloRequest,
    LaunchGeometry,
    LoadReply,
    LoadRequest,
    ProblemSpec,
    QuitRequest,
    WorkerFailure,
    decode_request,
)
from workbench.engine.worker_protocol import classify_cuda_error

# --------------------------------------------------------------------------------------------
# The child's GPU session (pycuda is imported only here, inside the worker process)


class _Gate:
    """``wb_gate`` on the session's stream plus its flag in mapped pinned memory.

    ``state[0]`` is the flag the host sets; ``state[1]`` counts gates that opened by
    timeout (the host took longer than ``GATE_TIMEOUT_NS`` to enqueue a batch);
    ``state[2:6]`` holds the SM cycles and nanoseconds of the last hold (``clocks_mhz``
    collects one effective SM clock per settled batch).
    """

    def __init__(self, session: GpuSession, function: Any) -> None:
        import numpy as np

        cuda = session.cuda
        self.session = session
        self.function = function
        function.prepare("PQ")
        from workbench.engine.timing_loop import GATE_STATE_INT32

        self.state = cuda.pagelocked_zeros((GATE_STATE_INT32,), np.int32,
                                           mem_flags=cuda.host_alloc_flags.DEVICEMAP)
        self.device_ptr = int(self.state.base.get_device_pointer())
        self.clocks_mhz: list[float] = []

    @property
    def timeouts(self) -> int:
        return int(self.state[1])

    def hold(self) -> None:
        from workbench.engine.timing_loop import GATE_TIMEOUT_NS

        self.state[0] = 0
        self.function.prepared_async_call((1, 1, 1), (1, 1, 1), self.session.stream,
                                          self.device_ptr, GATE_TIMEOUT_NS)

    def release(self) -> None:
        self.state[0] = 1

    def settled(self) -> None:
        from workbench.engine.timing_loop import gate_clock_mhz

        mhz = gate_clock_mhz(self.state)
        if mhz is not None:
            self.clocks_mhz.append(mhz)


def _cuda_failure(exc: Exception, phase: str, verify_s: float) -> EvaluateReply | WorkerFailure:
    """The reply for a CUDA error while evaluating a candidate: a classified status (crashed,
    timeout, ...) naming the phase, or an unclassified worker error that restarts it."""
    text = f"{type(exc).__name__}: {exc}"
    rule = classify_cuda_error(text)
    if rule is None:
        return WorkerFailure(error=text, kind="cuda", restart_worker=True)
    return EvaluateReply(status=rule.status, reason=f"{rule.meaning} during {phase}: {text}",
                         restart_worker=rule.restart_worker, verify_s=verify_s)


@dataclass(frozen=True)
class _Timed:
    """What :meth:`GpuSession._timed` measured, before it goes into a reply."""

    timing: Timing
    samples_us: tuple[float, ...]
    event_samples_us: tuple[float, ...]
    method: TimingMethod
    bench_s: float
    nvml: Mapping[str, Any]
    spin_up_s: float = 0.0  # the GPU kept busy before timing (_warm_up)
    nvml_s: float = 0.0     # the NVML readings around the timing
    spin_up: SpinUp | None = None  # what preceded the timing, and why


class _Replica:
    """Kernel arguments for one placement of input set 1: its own buffers or a copy."""

    def __init__(self, source: _InputSet, buffers: dict[str, Any], owned: list[Any]) -> None:
        self.source = source
        self.buffers = buffers  # argument name -> device pointer (allocation or int)
        self.owned = owned      # allocations this replica frees
        values: list[Any] = []
        scalars = iter(v for a, v in zip(source.args, source.values, strict=True)
                       if a["role"] == "scalar")
        for arg in source.args:
            values.append(next(scalars) if arg["role"] == "scalar"
                          else int(buffers[arg["name"]]))
        self.values = values

    @classmethod
    def of(cls, source: _InputSet) -> _Replica:
        return cls(source, dict(source.buffers), owned=[])

    @classmethod
    def copy(cls, source: _InputSet) -> _Replica:
        """A copy in new allocations (page aligned, like the original)."""
        cuda = source.session.cuda
        buffers: dict[str, Any] = {}
        owned = []
        for name, buf in source.buffers.items():
            nbytes = source.nbytes[name]
            new = cuda.mem_alloc(nbytes)
            owned.append(new)
            ptr = int(new)
            cuda.memcpy_dtod(ptr, buf, nbytes)
            buffers[name] = ptr
        return cls(source, buffers, owned=owned)

    def restore(self, stream: Any) -> None:
        """Copy every inout argument back from input set 1's pristine copy."""
        for name, pristine in self.source.pristine.items():
            self.source.session.cuda.memcpy_dtod_async(self.buffers[name], pristine,
                                                       self.source.nbytes[name], stream)

    def free(self) -> None:
        for allocation in self.owned:
            allocation.free()
        self.owned = []
        self.buffers = {}


#: Device memory the timing copies of one problem's inputs may take (see _placements).
PLACEMENT_BYTES = 1 << 30


def evaluate_phases(module_s: float, verify_s: float, timed: _Timed, check_after_s: float,
                    evaluate_s: float) -> dict[str, float]:
    """Where one evaluation's seconds went in the worker (``EvaluateReply.phases_s``):
    ``module_s`` the cubin's module load (inside ``verify_s``), ``spin_up_s`` the GPU kept
    busy after an idle gap, ``nvml_s`` the NVML readings around the timing, ``bench_s`` the
    timing loop (warm-up included), ``check_after_s`` the check of the buffers it must not
    write, ``evaluate_s`` the whole request and ``other_s`` what none of them names (input
    placements, the timer's set-up)."""
    named = verify_s + timed.spin_up_s + timed.nvml_s + timed.bench_s + check_after_s
    phases = {"module_s": module_s, "verify_s": verify_s, "spin_up_s": timed.spin_up_s,
              "nvml_s": timed.nvml_s, "bench_s": timed.bench_s,
              "check_after_s": check_after_s, "evaluate_s": evaluate_s,
              "other_s": max(0.0, evaluate_s - named)}
    return {k: round(v, 6) for k, v in phases.items()}


class GpuSession:
    """The worker's state: one CUDA context, loaded modules, the current problem."""

    #: The host clock of the idle-gap rule and of the phase timings (tests inject one).
    clock: Callable[[], float] = staticmethod(time.perf_counter)

    def __init__(self) -> None:
        import pycuda.driver as cuda

        cuda.init()
        if cuda.Device.count() < 1:
            raise NoGPUError("no CUDA device", device_count=0)
        self.cuda = cuda
        self.device = cuda.Device(0)
        self.context = self.device.make_context()
        self.stream = cuda.Stream()
        try:
            bus = self.device.pci_bus_id()
        except Exception:
            bus = None
        self.nvml = Nvml(bus)
        self.modules: dict[str, Any] = {}
        self.functions: dict[tuple[str, str, str, bool], Any] = {}
        self.references: dict[str, Any] = {}
        self.checked: set[str] = set()
        self.sets: list[_InputSet] = []
        self.replicas: list[_Replica] = []
        self.problem_key: str | None = None
        self.flush_buf: Any = None
        self.compare: Any = None
        self.to_f32: Any = None
        self.to_i64: Any = None
        self.compare_int: Any = None
        self.checksum: Any = None
        self.counters: Any = None
        self.flush_bytes = 0
        self.evict: Any = None     # wb_evict (read flush)
        self.tick_us = 0.0         # the GPU timer's step, measured by wb_tick at first load
        self.gate: _Gate | None = None
        self.cupti: Any = None     # CuptiClock, made when a timer="cupti" request arrives
        self.last_busy_s = 0.0  # perf_counter() when the GPU last finished timed work
        self._nvml_static: dict[str, Any] | None = None  # read once (driver, clocks, power)
        attrs = self.device.get_attributes()
        self.attrs = {getattr(k, "name", str(k)): int(v) for k, v in attrs.items()}

    # -- commands -----------------------------------------------------------------------------

    def handle(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Decode one message, serve it, and encode the reply (the pipe's boundary: what
        lies between is typed)."""
        import traceback

        try:
            request = decode_request(message)
        except WorkerError as exc:
            return WorkerFailure(error=exc.message, kind="protocol").to_message()
        try:
            return self.serve(request)
        except self.cuda.Error as exc:
            text = f"{type(exc).__name__}: {exc}"
            rule = classify_cuda_error(text)
            return WorkerFailure(error=text, kind="cuda",
                                 restart_worker=True if rule is None else rule.restart_worker,
                                 status=rule.status if rule else None).to_message()
        except Exception as exc:
            return WorkerFailure(error=f"{type(exc).__name__}: {exc}", kind="internal",
                                 traceback=traceback.format_exc()[-4000:]).to_message()

    def serve(self, request: HelloRequest | LoadRequest | EvaluateRequest | CopyRequest
              | QuitRequest) -> dict[str, Any]:
        """One typed request's reply, as the message sent back."""
        if isinstance(request, LoadRequest):
            return self.load(request).to_message()
        if isinstance(request, EvaluateRequest):
            return self.evaluate(request).to_message()
        if isinstance(request, CopyRequest):
            return self.copy(request).to_message()
        if isinstance(request, HelloRequest):
            return self.hello().to_message()
        return {"ok": True}  # quit: the main loop closes the session

    def hello(self) -> HelloReply:
        """The device, its driver, NVML readings and whether libcupti loads (for
        ``timer="auto"``: its path and API version, or why not)."""
        from workbench.engine.cupti import CuptiError, load_library

        cuda = self.cuda
        version = cuda.get_driver_version()
        major, minor = self.device.compute_capability()
        reply = HelloReply(
            name=self.device.name(), attrs=self.attrs, compute_capability=(major, minor),
            total_memory_bytes=int(self.device.total_memory()),
            cuda_driver_version=f"{version // 1000}.{(version % 1000) // 10}",
            pycuda_cuda_version=".".join(str(v) for v in cuda.get_version()),
            pid=os.getpid(), nvml={**self.nvml.static(), **self.nvml.sample()})
        try:
            _, path, api_version = load_library()
        except CuptiError as exc:
            return replace(reply, cupti_error=exc.message)
        return replace(reply, cupti_path=path, cupti_api_version=int(api_version))

    def _reference(self, folder: str) -> Any:
        """The folder's reference.py as a module; None when the folder has none."""
        if folder not in self.references:
            import importlib.util

            path = Path(folder) / "reference.py"
            if not path.is_file():
                self.references[folder] = None
                return None
            spec = importlib.util.spec_from_file_location(
                f"_workbench_reference_{len(self.references)}", path)
            if spec is None or spec.loader is None:
                raise WorkerError(f"cannot import {path}", path=str(path))
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.references[folder] = module
        return self.references[folder]

    def _function(self, cubin: str, entry: str, fmt: str, smem_bytes: int,
                  pdl: bool = False) -> Any:
        """The kernel ``entry`` of ``cubin``, prepared for ``fmt``: a pycuda Function, or with
        ``pdl`` a :class:`~workbench.engine.pdl_launch.PdlFunction` (same call signature)."""
        key = (cubin, entry, fmt, pdl)
        func: Any = self.functions.get(key)
        if func is None:
            if cubin not in self.modules:
                if len(self.modules) >= 256:  # unload the oldest modules
                    for old in [k for k in self.modules if k != "<checks>"][:64]:
                        del self.modules[old]
                        for k in [k for k in self.functions if k[0] == old]:
                            closing = self.functions.pop(k)
                            if hasattr(closing, "close"):
                                closing.close()
                self.modules[cubin] = self.cuda.module_from_file(cubin)
            if pdl:
                from workbench.engine.pdl_launch import PdlFunction

                func = PdlFunction(cubin, entry, fmt)
            else:
                func = self.modules[cubin].get_function(entry)
                func.prepare(fmt)
            self.functions[key] = func
        if needs_smem_optin(smem_bytes):
            if pdl:
                func.set_max_dynamic_shared(int(smem_bytes))
            else:
                func.set_attribute(self.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   int(smem_bytes))
        return func

    def _run_once(self, func: Any, launch: LaunchGeometry, inputs: _InputSet,
                  cubin: str) -> None:
        """One verification run: the set's module globals into ``cubin``'s module, inouts
        restored, outputs poisoned, then the kernel."""
        if inputs.constants:
            inputs.upload_constants(self.modules[cubin])
        inputs.restore(self.stream)
        inputs.poison(self.stream)
        func.prepared_async_call(launch.grid, launch.block, self.stream,
                                 *inputs.values, shared_size=launch.smem_bytes)
        self.context.synchronize()

    def _free_problem(self) -> None:
        for s in self.sets:
            s.free()
        for r in self.replicas:
            r.free()
        self.sets = []
        self.replicas = []
        self.problem_key = None

    def _placements(self, wanted: int) -> list[_Replica]:
        """Input set 1 plus up to ``wanted - 1`` copies of it at other device addresses.

        Timed repetitions rotate over them, so a time is not the property of one physical
        placement of the buffers (on the H100 the same config's median moves by 2-5 %
        between fresh processes at a few microseconds; 8 placements took the median
        between-process spread of 30 such configs from 2.96 % to 2.53 %: it helps, it is not
        the whole story). Copies stay within PLACEMENT_BYTES in all.
        """
        first = self.sets[0]
        per_copy = sum(first.nbytes.values())
        fit = max(1, min(wanted, 1 + PLACEMENT_BYTES // max(1, per_copy)))
        if not self.replicas:
            self.replicas = [_Replica.of(first)]
        while len(self.replicas) < fit:
            self.replicas.append(_Replica.copy(first))
        return self.replicas[:fit]

    def load(self, request: LoadRequest) -> LoadReply | WorkerFailure:
        """Inputs for two random sets, golden outputs from the baseline, baseline check."""
        import numpy as np

        t0 = time.perf_counter()
        dtype, seed = request.dtype, request.seed
        ref = self._reference(request.folder)
        self._load_own_kernels(request.check_kernels)
        self._free_problem()

        hook = getattr(ref, "verify", None) if ref is not None else None

        def make_inputs(problem: ProblemSpec, rng: Any) -> Any:
            if ref is not None and hasattr(ref, "make_inputs"):
                host = ref.make_inputs(dict(problem.shape), dtype, rng)
            else:
                host = default_inputs(problem.args, problem.shape, rng)
            return complete_inputs(host, problem.constants, problem.shape, rng)

        def baseline_on(inputs: _InputSet, problem: ProblemSpec) -> None:
            func = self._function(request.baseline_cubin, request.baseline_entry,
                                  inputs.format, problem.launch.smem_bytes)
            self._run_once(func, problem.launch, inputs, request.baseline_cubin)

        if ref is not None and hasattr(ref, "reference"):  # else: the baseline is the golden
            check = request.check
            key = json.dumps([request.baseline_cubin, dict(check.shape), dtype], sort_keys=True)
            if key not in self.checked:
                host = make_inputs(check, np.random.default_rng([seed, 99]))
                cset = _InputSet(self, check, dtype, host)
                try:
                    quantized = {**host, **cset.quantized}
                    expected = ref.reference(quantized, dict(check.shape), dtype)
                    baseline_on(cset, check)
                    got = cset.download()
                    try:
                        compare_outputs(got, expected, cset.output_args(),
                                        f"baseline vs reference.py at shape "
                                        f"{check.shape_name}", hook, check.shape)
                    except _Mismatch as exc:
                        return WorkerFailure(error=exc.reason, kind="baseline_wrong")
                    except VerifyHookError as exc:
                        return WorkerFailure(error=str(exc), kind="reference")
                finally:
                    cset.free()
                self.checked.add(key)
        main = request.main
        for index in range(2):
            host = make_inputs(main, np.random.default_rng([seed, index]))
            iset = _InputSet(self, main, dtype, host, hook)
            self.sets.append(iset)
            baseline_on(iset, main)
            problem = iset.make_golden()
            if problem is None and hook is not None:  # verify() must accept the baseline
                try:
                    iset.verify(f"the baseline against its own outputs at shape "
                                f"{main.shape_name}")
                except _Mismatch as exc:
                    problem = f"reference.py verify() rejects it: {exc.reason}"
                except VerifyHookError as exc:
                    self._free_problem()
                    return WorkerFailure(error=str(exc), kind="reference")
            if problem is not None:
                self._free_problem()
                return WorkerFailure(error=f"the baseline is wrong at shape "
                                           f"{main.shape_name}: {problem}",
                                     kind="baseline_wrong")
        for iset in self.sets:  # sealed once both exist: the baseline wrote nothing else
            iset.seal()
        self.problem_key = request.key
        return LoadReply(load_s=time.perf_counter() - t0,
                         device_bytes=sum(sum(s.nbytes.values()) for s in self.sets))

    def _load_own_kernels(self, path: str) -> None:
        """The workbench's check and timing kernels (one module, compiled by the parent)."""
        if self.compare is not None:
            return
        module = self.cuda.module_from_file(path)
        self.modules["<checks>"] = module
        self.to_f32 = module.get_function("wb_to_f32")
        self.to_f32.prepare("PiiPqP")
        self.compare = module.get_function("wb_compare")
        self.compare.prepare("PiiPqffP")
        self.to_i64 = module.get_function("wb_to_i64")
        self.to_i64.prepare("PiiPqP")
        self.compare_int = module.get_function("wb_compare_int")
        self.compare_int.prepare("PiiPqqP")
        self.checksum = module.get_function("wb_checksum")
        self.checksum.prepare("PqP")
        self.counters = self.cuda.mem_alloc(5 * 8)
        self.evict = module.get_function("wb_evict")
        self.evict.prepare("PqP")
        self.gate = _Gate(self, module.get_function("wb_gate"))
        self.tick_us = self._timer_tick_us(module.get_function("wb_tick"))

    def _timer_tick_us(self, function: Any) -> float:
        """The GPU timer's step in microseconds (0.032 on the H100), which CUDA events and
        CUPTI timestamps advance by; 0.0 when the timer did not move (never seen)."""
        import numpy as np

        out = self.cuda.mem_alloc(16)
        try:
            function(out, block=(1, 1, 1), grid=(1, 1))
            host = np.zeros(2, dtype=np.uint64)
            self.cuda.memcpy_dtoh(host, out)
        finally:
            out.free()
        step, changes = int(host[0]), int(host[1])
        return step / 1e3 if changes > 0 else 0.0

    def _flush_buffer(self, nbytes: int) -> Any:
        """A zero-filled device buffer of at least ``nbytes`` (a multiple of 16)."""
        nbytes = -(-nbytes // 16) * 16
        if self.flush_buf is None or self.flush_bytes < nbytes:
            if self.flush_buf is not None:
                self.flush_buf.free()
            self.flush_buf = self.cuda.mem_alloc(nbytes)
            self.flush_bytes = nbytes
            self.cuda.memset_d32(self.flush_buf, 0, nbytes // 4)
        return self.flush_buf

    def _flusher(self, nbytes: int, method: str) -> Any:
        """A function that evicts the L2 with ``nbytes``: by reading (clean) or zeroing."""
        buf = self._flush_buffer(nbytes)
        n4 = self.flush_bytes // 16
        if method == "read" and self.evict is not None:
            blocks = 4 * self.attrs.get("MULTIPROCESSOR_COUNT", 132)
            ptr = int(buf)  # also the sink, never written (see wb_evict)

            def read() -> None:
                self.evict.prepared_async_call((blocks, 1, 1), (512, 1, 1), self.stream,
                                               ptr, n4, ptr)
            return read

        def write() -> None:
            self.cuda.memset_d32_async(buf, 0, n4 * 4, self.stream)
        return write

    def nvml_static(self) -> dict[str, Any]:
        """NVML's static facts (driver, maximum and application clocks, power limit), read
        once per session: six NVML calls that took part of every timing's 4.6 ms before."""
        if self._nvml_static is None:
            self._nvml_static = self.nvml.static() if self.nvml.nv is not None else {}
        return self._nvml_static

    def reference_clock_mhz(self) -> float | None:
        """The SM clock a warm GPU runs at: the application clock, else the maximum."""
        static = self.nvml_static()
        value = static.get("app_sm_clock_mhz") or static.get("max_sm_clock_mhz")
        return float(value) if value else None

    def _warm_up(self, reason: SpinUpReason | None = None,
                 ) -> tuple[SpinUp, dict[str, Any], float]:
        """Decide whether the GPU is kept busy for SPIN_UP_S before a timing (the rule and
        its evidence: :mod:`workbench.engine.spin_up`) and do it; returns the record, the
        NVML sample the timing starts from and the seconds NVML took. ``reason`` forces a
        spin-up (a retime after a cold start)."""
        began = self.clock()
        idle_s = began - self.last_busy_s
        before = self.nvml.sample()
        nvml_s = self.clock() - began
        reference = self.reference_clock_mhz()
        seen = before.get("sm_clock_mhz")
        seen_mhz = float(seen) if seen is not None else None
        why = reason or spin_up_reason(idle_s, seen_mhz, reference)
        if not why.spins:
            return (SpinUp(ran=False, reason=why, idle_s=idle_s, sm_clock_mhz=seen_mhz,
                           reference_mhz=reference), before, nvml_s)
        spun = self.clock()
        self._busy(SPIN_UP_S * 1e3)
        spin_s = self.clock() - spun
        again = self.clock()
        before = self.nvml.sample()
        nvml_s += self.clock() - again
        after = before.get("sm_clock_mhz")
        return (SpinUp(ran=True, reason=why, idle_s=idle_s, sm_clock_mhz=seen_mhz,
                       reference_mhz=reference, spin_up_s=spin_s,
                       sm_clock_after_mhz=float(after) if after is not None else None,
                       retimed=why is SpinUpReason.RETIMED), before, nvml_s)

    def _busy(self, ms: float) -> None:
        """Keep the GPU reading a 64 MiB buffer for ``ms`` milliseconds."""
        work = self._flusher(64 << 20, "read")
        began = time.perf_counter()
        while time.perf_counter() - began < ms / 1e3:
            for _ in range(8):
                work()
            self.stream.synchronize()

    def _kernel_clock(self, settings: BenchSettings, name: str) -> Any:
        """The CUPTI duration reader for kernel ``name`` when ``settings.timer`` asks for it
        (``"auto"`` reaching the worker directly: CUPTI when libcupti loads, else none)."""
        if settings.timer == "events":
            return None
        if self.cupti is None:
            from workbench.engine.cupti import CuptiClock, CuptiError

            try:
                self.cupti = CuptiClock()
            except CuptiError:
                if settings.timer == "auto":
                    return None
                raise
        clock = self.cupti

        def durations(expected: int) -> list[float]:
            return clock.take(name, expected)
        return durations

    def _timed_graph(self, launch_fn: Callable[[], None], settings: BenchSettings,
                     prepare: Callable[[], None], clock_name: str, count: int) -> _Timed:
        """The "graph" cache condition: ``count`` launches captured into one CUDA graph,
        each repetition one graph launch between an event pair (no L2 eviction, inputs
        restored before each graph), the sample its time per launch."""
        from workbench.engine.cuda_graph import CapturedGraph

        with CapturedGraph(self.stream, launch_fn, count) as graph:
            plain = replace(settings, flush_l2=False, timer="events")
            timed = self._timed(graph.launch, plain, prepare, clock_name, flush=None,
                                per_launch=count)
        return replace(timed, method=replace(timed.method, flush="none (graph)",
                                             graph_launches=count))

    def _timed(self, launch_fn: Callable[[], None], settings: BenchSettings,
               prepare: Callable[[], None] | None, clock_name: str, *, flush: str | None,
               per_launch: int = 1) -> _Timed:
        """Time ``launch_fn`` with the L2 evicted by ``flush`` ("read", "write"; None: hot)
        before each repetition; with ``per_launch`` > 1 it launches that many kernels and
        each sample is its time divided by ``per_launch``."""
        import numpy as np

        from workbench.engine.bench import summarize
        from workbench.engine.timing_loop import time_launches

        evict = None
        if flush is not None:
            evict = self._flusher(flush_bytes(self.attrs.get("L2_CACHE_SIZE", 64 << 20)), flush)
        gate = self.gate
        kernel_clock = self._kernel_clock(settings, clock_name)
        spin, before, nvml_s = self._warm_up()
        spin_up_s = spin.spin_up_s
        bench_s = 0.0
        while True:  # twice at most: a timing that skipped the spin-up and started cold
            timeouts_before = gate.timeouts if gate is not None else 0
            if gate is not None:
                gate.clocks_mhz = []
            times = time_launches(self.cuda, self.stream, launch_fn, settings,
                                  prepare=prepare, flush=evict, gate=gate,
                                  kernel_clock=kernel_clock, tick_us=self.tick_us)
            bench_s += times.wall_s
            self.last_busy_s = self.clock()
            if spin.ran or not started_cold(gate.clocks_mhz if gate is not None else (),
                                            spin.reference_mhz):
                break
            skipped = spin
            spin, before, more_nvml_s = self._warm_up(SpinUpReason.RETIMED)
            spin = replace(spin, idle_s=skipped.idle_s, sm_clock_mhz=skipped.sm_clock_mhz)
            spin_up_s += spin.spin_up_s
            nvml_s += more_nvml_s
        samples = times.samples_us
        if per_launch > 1:
            samples = [x / per_launch for x in samples]
        after = self.nvml.sample()
        nvml_s += self.clock() - self.last_busy_s
        ref_clock = spin.reference_mhz
        tick_us = self.tick_us if per_launch == 1 else 0.0
        timing = summarize(samples, l2_flushed=flush is not None,
                           sm_clock_mhz=after.get("sm_clock_mhz"),
                           mem_clock_mhz=after.get("mem_clock_mhz"),
                           temperature_c=after.get("temperature_c"),
                           throttled=throttled([before, after], ref_clock), tick_us=tick_us)
        sm_clock = None
        if gate is not None and gate.clocks_mhz:
            clocks = np.asarray(gate.clocks_mhz)
            sm_clock = ClockStats(median_mhz=round(float(np.median(clocks)), 1),
                                  min_mhz=round(float(clocks.min()), 1),
                                  max_mhz=round(float(clocks.max()), 1),
                                  batches=int(clocks.size))
        method = TimingMethod(timer="events" if kernel_clock is None else "cupti",
                              flush=flush or "none", gated=gate is not None,
                              clock_tick_us=tick_us,
                              gate_timeouts=(gate.timeouts - timeouts_before)
                              if gate is not None else 0,
                              sm_clock=sm_clock)
        events = times.event_samples_us if kernel_clock is not None else []
        return _Timed(timing=timing, samples_us=tuple(round(x, 4) for x in samples),
                      event_samples_us=tuple(round(x, 4) for x in events), method=method,
                      bench_s=bench_s,
                      nvml={"before": before, "after": after,
                            "reference_sm_clock_mhz": ref_clock},
                      spin_up_s=spin_up_s, nvml_s=nvml_s, spin_up=spin)

    def evaluate(self, request: EvaluateRequest) -> EvaluateReply | WorkerFailure:
        """Verify a cubin on both input sets against the baseline's outputs, then time it
        under the request's cache condition."""
        if not self.sets or request.key != self.problem_key:
            return WorkerFailure(error=f"problem {request.key!r} is not loaded "
                                       f"(loaded: {self.problem_key!r})", kind="protocol")
        condition: ConditionTiming = timing_of(request.condition)
        launch = request.launch
        t0 = time.perf_counter()
        phase = "load"
        if launch.pdl and self.sets[0].constants:
            # a PDL launch loads its own module (engine/pdl_launch.py): its globals are
            # not the ones uploaded here
            return WorkerFailure(error="a PDL launch of a kernel with module-global inputs "
                                       f"({', '.join(u.name for u in self.sets[0].constants)}) "
                                       "is not supported", kind="protocol")
        try:
            func = self._function(request.cubin, request.entry, self.sets[0].format,
                                  launch.smem_bytes, launch.pdl)
            module_s = time.perf_counter() - t0  # the module load (once per cubin) and prepare
            worst = 0.0
            for index, iset in enumerate(self.sets):
                phase = f"verification on input set {index + 1}"
                self._run_once(func, launch, iset, request.cubin)
                label = "input set 1" if index == 0 else "second (fresh) input set"
                worst = max(worst, iset.verify(label))
            phase = "the check of the buffers it must not write"
            self._check_untouched("verification")
            if self.sets[0].constants:  # timing reads input set 1 (and its copies)
                phase = "the upload of input set 1's module globals"
                self.sets[0].upload_constants(self.modules[request.cubin])
        except VerifyHookError as exc:
            return WorkerFailure(error=str(exc), kind="reference")
        except _Mismatch as exc:
            return EvaluateReply(status=Status.WRONG_RESULT, reason=exc.reason,
                                 max_abs_err=exc.max_abs_err,
                                 verify_s=time.perf_counter() - t0)
        except self.cuda.Error as exc:
            return _cuda_failure(exc, phase, time.perf_counter() - t0)
        verify_s = time.perf_counter() - t0
        verified = EvaluateReply(status=Status.OK, max_abs_err=worst, verify_s=verify_s,
                                 phases_s={"module_s": module_s})
        if not request.time:
            return verified
        places = self._placements(PLACEMENTS)
        current = [places[0]]
        turn = [0]

        def advance() -> None:  # before each repetition: next copy of the inputs, restored
            turn[0] += 1
            current[0] = places[turn[0] % len(places)]
            current[0].restore(self.stream)

        def run() -> None:
            func.prepared_async_call(launch.grid, launch.block, self.stream,
                                     *current[0].values, shared_size=launch.smem_bytes)

        try:
            if condition.graph_launches > 0:  # fixed addresses: the graph holds them
                first = places[0]
                timed = self._timed_graph(run, request.settings,
                                          lambda: first.restore(self.stream), request.entry,
                                          condition.graph_launches)
            else:
                timed = self._timed(run, request.settings, advance, request.entry,
                                    flush=condition.flush)
        except self.cuda.Error as exc:
            return _cuda_failure(exc, "timing", verify_s)
        timed_end = time.perf_counter()
        try:
            self._check_untouched("timing")
        except _Mismatch as exc:
            return EvaluateReply(status=Status.WRONG_RESULT, reason=exc.reason,
                                 verify_s=verify_s)
        ended = time.perf_counter()
        return replace(verified, timing=timed.timing, samples_us=timed.samples_us,
                       event_samples_us=timed.event_samples_us, method=timed.method,
                       bench_s=timed.bench_s, nvml=timed.nvml, spin_up=timed.spin_up,
                       phases_s=evaluate_phases(module_s, verify_s, timed, ended - timed_end,
                                                ended - t0))

    def _check_untouched(self, during: str) -> None:
        """Raise _Mismatch, after repairing them, when a kernel changed buffers outside its
        outputs (a write past an output's end lands in a neighbouring allocation; the
        outputs' own check passes and every later verification would compare against
        damaged inputs or golden copies)."""
        hit = [f"{label} of input set {i + 1}" for i, s in enumerate(self.sets)
               for label in s.damaged()]
        if not hit:
            return
        for s in self.sets:
            s.repair()
        raise _Mismatch(f"wrote outside its output arguments during {during}: "
                        f"{', '.join(hit)} changed (an out-of-bounds write; restored from "
                        f"the host copies)", None)

    def copy(self, request: CopyRequest) -> CopyReply:
        """Time a device-to-device copy of ``nbytes`` (read + written = 2 x nbytes)."""
        import numpy as np

        from workbench.engine.cupti import DTOD_COPY

        if request.check_kernels:
            self._load_own_kernels(request.check_kernels)
        nbytes = request.nbytes // 4 * 4
        src = self.cuda.mem_alloc(nbytes)
        dst = self.cuda.mem_alloc(nbytes)
        try:
            rng = np.random.default_rng(request.seed)
            self.cuda.memcpy_htod(src, rng.integers(1, 2**31, size=nbytes // 4,
                                                    dtype=np.uint32))

            def run() -> None:
                self.cuda.memcpy_dtod_async(dst, src, nbytes, self.stream)

            timed = self._timed(run, request.settings, None, DTOD_COPY,
                                flush="read" if request.settings.flush_l2 else None)
        finally:
            src.free()
            dst.free()
        return CopyReply(nbytes=nbytes, timing=timed.timing, samples_us=timed.samples_us,
                         method=timed.method)

    def close(self) -> None:
        if self.cupti is not None:
            self.cupti.close()
        self._free_problem()
        if self.flush_buf is not None:
            self.flush_buf.free()
        self.modules.clear()
        self.functions.clear()
        self.context.pop()

