"""The child's GPU session: one CUDA context, loaded modules, the current problem, and
the requests it serves (hello, load, evaluate, copy).

Lives in the worker process only (:mod:`workbench.engine.worker` runs it); pycuda, pynvml
and numpy are imported lazily inside methods, so this module imports fine without a GPU.
Beside it, by concept: how it times (:mod:`workbench.engine.gpu_timing`, with the spin-up
rule in :mod:`workbench.engine.spin_up`), where a timing's inputs live
(:mod:`workbench.engine.gpu_placements`) and how outputs are checked
(:mod:`workbench.engine.gpu_verify`, :mod:`workbench.engine.output_compare`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from workbench.core.errors import NoGPUError, WorkerError
from workbench.core.feasibility import needs_smem_optin
from workbench.core.inputs import complete_inputs, default_inputs
from workbench.core.records import Status
from workbench.engine.conditions import ConditionTiming, timing_of
from workbench.engine.gpu_placements import Replica, placements
from workbench.engine.gpu_timing import DeviceTimer, Timed
from workbench.engine.gpu_verify import _InputSet
from workbench.engine.nvml import Nvml
from workbench.engine.output_compare import VerifyHookError, _Mismatch, compare_outputs
from workbench.engine.timing_loop import PLACEMENTS
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


def _cuda_failure(exc: Exception, phase: str, verify_s: float) -> EvaluateReply | WorkerFailure:
    """The reply for a CUDA error while evaluating a candidate: a classified status (crashed,
    timeout, ...) naming the phase, or an unclassified worker error that restarts it."""
    text = f"{type(exc).__name__}: {exc}"
    rule = classify_cuda_error(text)
    if rule is None:
        return WorkerFailure(error=text, kind="cuda", restart_worker=True)
    return EvaluateReply(status=rule.status, reason=f"{rule.meaning} during {phase}: {text}",
                         restart_worker=rule.restart_worker, verify_s=verify_s)


def evaluate_phases(module_s: float, verify_s: float, timed: Timed, check_after_s: float,
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
    """The worker's state: one CUDA context, loaded modules, the current problem; its
    timing state is :attr:`timer` (:class:`~workbench.engine.gpu_timing.DeviceTimer`)."""

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
        self.modules: dict[str, Any] = {}
        self.functions: dict[tuple[str, str, str, bool], Any] = {}
        self.references: dict[str, Any] = {}
        self.checked: set[str] = set()
        self.sets: list[_InputSet] = []
        self.replicas: list[Replica] = []
        self.problem_key: str | None = None
        self.compare: Any = None
        self.to_f32: Any = None
        self.to_i64: Any = None
        self.compare_int: Any = None
        self.checksum: Any = None
        self.counters: Any = None
        attrs = self.device.get_attributes()
        self.attrs = {getattr(k, "name", str(k)): int(v) for k, v in attrs.items()}
        self.timer = DeviceTimer(cuda, self.stream, self.attrs, Nvml(bus))

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
            pid=os.getpid(), nvml={**self.timer.nvml.static(), **self.timer.nvml.sample()})
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
        self.timer.use_kernels(module)

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
        places = placements(self.sets[0], self.replicas, PLACEMENTS)
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
                timed = self.timer.timed_graph(run, request.settings,
                                          lambda: first.restore(self.stream), request.entry,
                                          condition.graph_launches)
            else:
                timed = self.timer.timed(run, request.settings, advance, request.entry,
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

            timed = self.timer.timed(run, request.settings, None, DTOD_COPY,
                                flush="read" if request.settings.flush_l2 else None)
        finally:
            src.free()
            dst.free()
        return CopyReply(nbytes=nbytes, timing=timed.timing, samples_us=timed.samples_us,
                         method=timed.method)

    def close(self) -> None:
        self.timer.close()
        self._free_problem()
        self.modules.clear()
        self.functions.clear()
        self.context.pop()

