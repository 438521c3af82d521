"""Output verification inside the GPU worker: poison, golden copies, device-side checks.

Runs only in the child (:class:`workbench.engine.gpu_session.GpuSession` owns the buffers);
numpy and the CUDA driver are reached through the session, imported lazily. One
:class:`_InputSet` holds the device buffers of one random input set, the golden outputs and
the integrity checksums of the buffers no kernel may write. The check kernels' source is
compiled by the parent (:mod:`workbench.engine.check_kernels`); comparisons on the host are
:mod:`workbench.engine.output_compare`, module-global uploads
:mod:`workbench.engine.constant_upload`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.engine.check_kernels import KIND, is_integer_kind, poison_for
from workbench.engine.constant_upload import constant_uploads, upload_constants
from workbench.engine.output_compare import (
    VerifyHook,
    _Mismatch,
    compare_sum,
    run_verify_hook,
    with_nan,
)

if TYPE_CHECKING:
    from workbench.engine.gpu_session import GpuSession
    from workbench.engine.worker_messages import ProblemSpec


_SCALAR_FORMAT = {"i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I",
                  "i64": "q", "f32": "f", "fp32": "f"}


def _storage(dtype: str) -> Any:
    from workbench.core.dtypes import arg_storage

    return arg_storage(dtype)


def _words(nbytes: int) -> int:
    """32-bit words covering ``nbytes`` (allocations are rounded up to them)."""
    return max(1, -(-nbytes // 4))


def _host_compared(arg: Mapping[str, Any], hook: VerifyHook | None) -> bool:
    """Compared on the host (sum or verify()), not element by element on the GPU."""
    return hook is not None or arg.get("compare") == "sum"


class _InputSet:
    """Device buffers for one random input set, pristine copies of inouts, golden outputs,
    and the bytes of its module globals (uploaded into each module before it runs)."""

    def __init__(self, session: GpuSession, spec: ProblemSpec, dtype: str,
                 host_inputs: Mapping[str, Any], verify_hook: VerifyHook | None = None) -> None:
        import numpy as np

        from workbench.core import dtypes as wdt

        cuda = session.cuda
        self.session = session
        self.spec = spec
        self.dtype = dtype
        self.args: list[dict[str, Any]] = [dict(a) for a in spec.args]
        self.buffers: dict[str, Any] = {}
        self.pristine: dict[str, Any] = {}
        self.nbytes: dict[str, int] = {}
        self.golden: dict[str, Any] = {}
        self.quantized: dict[str, Any] = {}
        self.host_bits: dict[str, Any] = {}   # what was uploaded, to repair a damaged input
        self.sums: dict[str, int] = {}        # guarded buffer -> checksum (see seal)
        self.golden_host: dict[str, Any] = {}
        self.verify_hook = verify_hook
        self.golden_values: dict[str, tuple[Any, Any]] = {}  # host-compared outputs
        self.constants, seen = constant_uploads(spec.constants, host_inputs)
        self.quantized.update(seen)
        self.values: list[Any] = []
        fmt = ""
        for arg in self.args:
            name, role, adt = arg["name"], arg["role"], arg["dtype"]
            if role == "scalar":
                fmt += _SCALAR_FORMAT[adt]
                value = arg["value"]
                self.values.append(float(value) if adt in ("f32", "fp32") else int(value))
                continue
            fmt += "P"
            shape = tuple(int(n) for n in arg["shape"])
            storage = _storage(adt)
            count = int(np.prod(shape)) if shape else 1
            nbytes = max(1, count * storage.itemsize)
            self.nbytes[name] = nbytes
            buf = cuda.mem_alloc(_words(nbytes) * 4)  # whole words for the checksum
            self.buffers[name] = buf
            self.values.append(int(buf))
            if role in ("in", "inout"):
                if name not in host_inputs:
                    raise KeyError(f"reference.make_inputs returned no array for {name!r}")
                raw = np.asarray(host_inputs[name])
                if tuple(raw.shape) != shape:
                    raise ValueError(f"make_inputs()[{name!r}] has shape {raw.shape}; "
                                     f"kernel.toml says {shape}")
                bits = wdt.encode_arg(raw, adt)
                # what the kernel sees, as reference() gets it: float32 values for the float
                # dtypes, int64 for the integer ones
                values = wdt.decode_arg(bits, adt)
                self.quantized[name] = (values if wdt.is_integer_dtype(adt)
                                        else values.astype(np.float32))
                cuda.memcpy_htod(buf, bits)
                self.host_bits[name] = bits
                if role == "inout":
                    copy = cuda.mem_alloc(_words(nbytes) * 4)
                    cuda.memcpy_dtod(copy, buf, nbytes)
                    self.pristine[name] = copy
        self.format = fmt

    def output_args(self) -> list[dict[str, Any]]:
        return [a for a in self.args if a["role"] in ("out", "inout")]

    def upload_constants(self, module: Any) -> None:
        """This set's module globals into ``module`` (before every run of its kernel)."""
        upload_constants(self.session.cuda, module, self.constants)

    def restore(self, stream: Any) -> None:
        """Copy every inout argument back from its pristine copy."""
        for name, copy in self.pristine.items():
            self.session.cuda.memcpy_dtod_async(self.buffers[name], copy, self.nbytes[name],
                                                stream)

    def poison(self, stream: Any) -> None:
        """Fill every out argument with the poison pattern."""

        cuda = self.session.cuda
        for arg in self.args:
            if arg["role"] != "out":
                continue
            itemsize = _storage(arg["dtype"]).itemsize
            buf, nbytes = self.buffers[arg["name"]], self.nbytes[arg["name"]]
            pattern = poison_for(arg["dtype"])
            if itemsize == 1:
                cuda.memset_d8_async(buf, pattern, nbytes, stream)
            elif itemsize == 2:
                cuda.memset_d16_async(buf, pattern, nbytes // 2, stream)
            else:
                cuda.memset_d32_async(buf, pattern, nbytes // 4, stream)

    def download(self) -> dict[str, tuple[Any, Any]]:
        """name -> (values: float64, or int64 for integer outputs; mask of elements still
        holding poison)."""
        import numpy as np

        from workbench.core import dtypes as wdt

        out = {}
        for arg in self.output_args():
            shape = tuple(int(n) for n in arg["shape"])
            storage = _storage(arg["dtype"])
            host = np.empty(shape, dtype=storage)
            self.session.cuda.memcpy_dtoh(host, self.buffers[arg["name"]])
            raw = host.view({1: np.uint8, 2: np.uint16, 4: np.uint32,
                             8: np.uint64}[storage.itemsize])
            pattern = poison_for(arg["dtype"])
            poison = pattern * (1 << 32) + pattern if storage.itemsize == 8 else pattern
            unwritten = (raw == poison) if arg["role"] == "out" else np.zeros(shape, bool)
            out[arg["name"]] = (wdt.decode_arg(host, arg["dtype"]), unwritten)
        return out

    def _count(self, arg: Mapping[str, Any]) -> int:
        import numpy as np

        return int(np.prod([int(n) for n in arg["shape"]])) if arg["shape"] else 1

    def _launch_check(self, func: Any, n: int, *args: Any) -> Any:
        import numpy as np

        cuda, stream = self.session.cuda, self.session.stream
        counters = self.session.counters
        init = np.array([0, 0, 0, 2**64 - 1, 0], dtype=np.uint64)
        cuda.memcpy_htod_async(counters, init, stream)
        blocks = max(1, min((n + 255) // 256, 4096))
        func.prepared_async_call((blocks, 1, 1), (256, 1, 1), stream, *args, int(counters))
        host = np.empty(5, dtype=np.uint64)
        cuda.memcpy_dtoh_async(host, counters, stream)
        stream.synchronize()
        return host

    def make_golden(self) -> str | None:
        """Keep device copies of the outputs (float32, or int64 for integer outputs); the
        reason if some were unwritten. 1- and 2-byte integer outputs are not checked for
        poison here: every bit pattern is a value the baseline may write."""
        cuda = self.session.cuda
        hosted = [a for a in self.output_args() if _host_compared(a, self.verify_hook)]
        if hosted:  # compared on the host: keep the baseline's values, unwritten slots marked
            got = self.download()
            self.golden_values = {a["name"]: got[a["name"]] for a in hosted}
        for arg in self.output_args():
            n = self._count(arg)
            integer = is_integer_kind(arg["dtype"])
            gold = cuda.mem_alloc(self._golden_bytes(arg))
            self.golden[arg["name"]] = gold
            check = arg["role"] == "out" and (not integer or _storage(arg["dtype"]).itemsize >= 4) \
                and not _host_compared(arg, self.verify_hook)
            counts = self._launch_check(self.session.to_i64 if integer else self.session.to_f32,
                                        n, int(self.buffers[arg["name"]]), KIND[arg["dtype"]],
                                        int(check), int(gold), n)
            if counts[0]:
                return (f"{arg['name']}: {int(counts[0])} of {n} elements not written "
                        f"(first at {self._index(arg, int(counts[3]))})")
        return None

    def _index(self, arg: Mapping[str, Any], flat: int) -> tuple[int, ...]:
        import numpy as np

        shape = tuple(int(n) for n in arg["shape"]) or (1,)
        return tuple(int(i) for i in np.unravel_index(flat, shape))

    def _element(self, arg: Mapping[str, Any], flat: int) -> tuple[float | int, float | int]:
        import numpy as np

        from workbench.core import dtypes as wdt

        cuda = self.session.cuda
        storage = _storage(arg["dtype"])
        got = np.empty(1, dtype=storage)
        cuda.memcpy_dtoh(got, int(self.buffers[arg["name"]]) + flat * storage.itemsize)
        integer = is_integer_kind(arg["dtype"])
        want = np.empty(1, dtype=np.int64 if integer else np.float32)
        cuda.memcpy_dtoh(want, int(self.golden[arg["name"]]) + flat * want.itemsize)
        return wdt.decode_arg(got, arg["dtype"])[0].item(), want[0].item()

    def verify(self, label: str) -> float:
        """Compare outputs with the golden copies on the GPU; raise _Mismatch on failure."""
        import numpy as np

        worst = 0.0
        if self.verify_hook is not None:
            run_verify_hook(self.verify_hook, with_nan(self.download()),
                            with_nan(self.golden_values),
                            self.spec.shape, label)
            return worst
        hosted = None
        for arg in self.output_args():
            if arg.get("compare") == "sum":
                hosted = hosted or self.download()
                values, unwritten = hosted[arg["name"]]
                want, want_unwritten = self.golden_values[arg["name"]]
                worst = max(worst, compare_sum(values, unwritten, want, want_unwritten, arg,
                                               label))
                continue
            n = self._count(arg)
            integer = is_integer_kind(arg["dtype"])
            common = (int(self.buffers[arg["name"]]), KIND[arg["dtype"]],
                      int(arg["role"] == "out"), int(self.golden[arg["name"]]), n)
            if integer:
                c = self._launch_check(self.session.compare_int, n, *common, int(arg["atol"]))
                err = float(int(c[4]))
            else:
                c = self._launch_check(self.session.compare, n, *common, float(arg["rtol"]),
                                       float(arg["atol"]))
                err = float(np.array([int(c[4])], dtype=np.uint32).view(np.float32)[0])
            worst = max(worst, err)
            name, first = arg["name"], int(c[3])
            if c[0]:
                raise _Mismatch(f"{label}: {name}: {int(c[0])} of {n} elements not written "
                                f"(still poison; first at {self._index(arg, first)})", None)
            if c[1]:
                raise _Mismatch(f"{label}: {name}: {int(c[1])} of {n} elements are NaN where "
                                f"the baseline has numbers (first at "
                                f"{self._index(arg, first)})", float("nan"))
            if c[2]:
                got, want = self._element(arg, first)
                bound = (f"|got - want| <= {int(arg['atol'])} (integers)" if integer
                         else f"rtol={arg['rtol']} atol={arg['atol']}")
                raise _Mismatch(f"{label}: {name}: {int(c[2])} of {n} elements outside "
                                f"{bound}; max abs err {err:.4g}; "
                                f"first at {self._index(arg, first)}: got {got:.6g}, "
                                f"expected {want:.6g}", err)
        return worst

    # -- integrity: buffers no kernel may write ----------------------------------------------

    def _guarded(self) -> dict[str, tuple[Any, int]]:
        """Label -> (device buffer, bytes) of every buffer a kernel must leave alone: the
        inputs (an inout's pristine copy: the argument itself is written by design) and the
        golden outputs."""
        out: dict[str, tuple[Any, int]] = {}
        for arg in self.args:
            name = arg["name"]
            if arg["role"] == "in":
                out[name] = (self.buffers[name], self.nbytes[name])
            elif arg["role"] == "inout":
                out[f"{name} (pristine copy)"] = (self.pristine[name], self.nbytes[name])
        for arg in self.output_args():
            if arg["name"] in self.golden:
                out[f"{arg['name']} (golden copy)"] = (self.golden[arg["name"]],
                                                       self._golden_bytes(arg))
        return out

    def _golden_bytes(self, arg: Mapping[str, Any]) -> int:
        """Bytes of ``arg``'s golden copy: float32, or int64 for integer outputs."""
        return max(8, (8 if is_integer_kind(arg["dtype"]) else 4) * self._count(arg))

    def _checksum(self, buf: Any, nbytes: int) -> int:
        n = _words(nbytes)
        return int(self._launch_check(self.session.checksum, n, int(buf), n)[0])

    def seal(self) -> None:
        """Checksum the guarded buffers and keep host copies of the golden outputs (after
        make_golden): :meth:`damaged` compares against these."""
        import numpy as np

        for arg in self.output_args():
            name, gold = arg["name"], self.golden[arg["name"]]
            host = np.empty(self._golden_bytes(arg), dtype=np.uint8)
            self.session.cuda.memcpy_dtoh(host, gold)
            self.golden_host[name] = host
        self.sums = {label: self._checksum(buf, n) for label, (buf, n) in self._guarded().items()}

    def damaged(self) -> list[str]:
        """The guarded buffers whose contents changed since :meth:`seal`."""
        return [label for label, (buf, n) in self._guarded().items()
                if label in self.sums and self._checksum(buf, n) != self.sums[label]]

    def repair(self) -> None:
        """Upload every guarded buffer again from its host copy."""
        cuda = self.session.cuda
        cuda.Context.synchronize()
        for name, bits in self.host_bits.items():
            target = self.pristine.get(name, self.buffers[name])
            cuda.memcpy_htod(target, bits)
            if name in self.pristine:
                cuda.memcpy_dtod(self.buffers[name], target, self.nbytes[name])
        for name, host in self.golden_host.items():
            cuda.memcpy_htod(self.golden[name], host)

    def free(self) -> None:
        for buf in [*self.buffers.values(), *self.pristine.values(),
                    *self.golden.values()]:
            buf.free()
        self.buffers.clear()
        self.pristine.clear()
        self.golden.clear()


