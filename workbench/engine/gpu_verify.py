"""Output verification inside the GPU worker: poison, golden copies, device-side checks.

Runs only in the child (:class:`workbench.engine.gpu_session.GpuSession` owns the buffers);
numpy and the CUDA driver are reached through the session, imported lazily. The check
kernels' source is compiled by the parent, so it lives here as plain text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workbench.engine.check_kernels import (
    CHECK_KERNELS_ENTRY,
    CHECK_KERNELS_SOURCE,
    KIND,
    POISON_BITS,
    is_integer_kind,
    poison_for,
)

if TYPE_CHECKING:
    from workbench.engine.gpu_session import GpuSession
    from workbench.engine.worker_messages import ProblemSpec

__all__ = ["CHECK_KERNELS_ENTRY", "CHECK_KERNELS_SOURCE", "POISON_BITS", "ConstantUpload",
           "VerifyHookError", "compare_outputs", "compare_sum", "constant_uploads",
           "run_verify_hook", "upload_constants"]

#: reference.py's ``verify(outputs, golden, shape)``: raises AssertionError when wrong.
VerifyHook = Callable[[dict[str, Any], dict[str, Any], dict[str, int]], object]


_SCALAR_FORMAT = {"i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I",
                  "i64": "q", "f32": "f", "fp32": "f"}


def _storage(dtype: str) -> Any:
    from workbench.core.dtypes import arg_storage

    return arg_storage(dtype)


def _words(nbytes: int) -> int:
    """32-bit words covering ``nbytes`` (allocations are rounded up to them)."""
    return max(1, -(-nbytes // 4))


class _Mismatch(Exception):
    """Verification failed (message says where)."""

    def __init__(self, reason: str, max_abs_err: float | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.max_abs_err = max_abs_err


class VerifyHookError(Exception):
    """reference.py's verify() raised something other than AssertionError: a bug in the
    hook, not a wrong result (the worker answers a failure naming it; the runner raises)."""


class ConstantUpload:
    """One module global's bytes, ready for the device (what :func:`upload_constants`
    copies into the module's symbol)."""

    def __init__(self, name: str, dtype: str, bits: Any) -> None:
        self.name = name
        self.dtype = dtype
        self.bits = bits

    @property
    def nbytes(self) -> int:
        return int(self.bits.nbytes)


def constant_uploads(constants: Sequence[Mapping[str, Any]],
                     host_inputs: Mapping[str, Any]) -> tuple[list[ConstantUpload],
                                                              dict[str, Any]]:
    """The bytes of every constant of a problem (``ProblemSpec.constants``) from the host
    inputs (make_inputs' or generated values: :func:`workbench.core.inputs.complete_inputs`),
    and the values the kernel sees (float32, or int64 for integers), which reference() gets.
    KeyError / ValueError name a constant with no values or the wrong element count."""
    import numpy as np

    from workbench.core import dtypes as wdt

    uploads: list[ConstantUpload] = []
    seen: dict[str, Any] = {}
    for const in constants:
        name, adt = str(const["name"]), str(const["dtype"])
        if name not in host_inputs:
            raise KeyError(f"no values for the module global {name!r}")
        shape = tuple(int(n) for n in const["shape"])
        raw = np.asarray(host_inputs[name])
        if raw.size != (int(np.prod(shape)) if shape else 1):
            raise ValueError(f"values for the module global {name!r} hold {raw.size} "
                             f"elements; it holds {list(shape)}")
        bits = np.ascontiguousarray(wdt.encode_arg(raw.reshape(shape), adt))
        values = wdt.decode_arg(bits, adt)
        seen[name] = values if wdt.is_integer_dtype(adt) else values.astype(np.float32)
        uploads.append(ConstantUpload(name, adt, bits))
    return uploads, seen


def upload_constants(cuda: Any, module: Any, uploads: Sequence[ConstantUpload]) -> None:
    """Copy each constant into ``module``'s global of that name (``module.get_global``, then
    a synchronous host-to-device copy). A module without the symbol, or whose symbol holds
    another number of bytes, is a _Mismatch naming it: the kernel would read values no
    input set gave it."""
    for up in uploads:
        try:
            address, size = module.get_global(up.name)
        except cuda.Error as exc:
            raise _Mismatch(f"the module has no global named {up.name} ({exc}); the template "
                            f"must keep the baseline's {up.name} (an input uploaded before "
                            "every run)", None) from None
        if int(size) != up.nbytes:
            raise _Mismatch(f"the module global {up.name} holds {int(size)} bytes; its "
                            f"{up.dtype} values hold {up.nbytes} (kernel.toml [[constants]] or "
                            "the source declaration disagree with this module)", None)
        cuda.memcpy_htod(address, up.bits)


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
            run_verify_hook(self.verify_hook, _with_nan(self.download()),
                            _with_nan(self.golden_values),
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


def _with_nan(outputs: Mapping[str, tuple[Any, Any]]) -> dict[str, Any]:
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
        run_verify_hook(verify_hook, _with_nan(got),
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
