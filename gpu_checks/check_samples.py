"""Check the three sample kernels on a real GPU: every baseline and a spread of template configs,
at every shape and dtype of each kernel.toml, against reference.py with the folder's tolerances.

Run on the GPU machine from the repository root (needs nvcc, numpy and CuPy; no pycuda):

    PYTHONPATH=$PWD python3 gpu_checks/check_samples.py --out $OUT

Outputs are poisoned with NaN before each launch and in/out buffers are re-uploaded, so a
kernel that skips an element fails. Only configs that satisfy the template's constraints at a
(shape, dtype) are launched there (evaluated by workbench.core). Prints a PASS/FAIL table and
writes it, with one JSON line per check, under --out. Exit status 1 if anything failed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.core.dtypes import from_device_bits, to_device_bits  # noqa: E402
from workbench.core.hardware import DeviceSpec, get_device  # noqa: E402
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder  # noqa: E402
from workbench.core.records import Config  # noqa: E402
from workbench.core.template import KernelTemplate  # noqa: E402

KERNELS = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")
DEFAULT_SMEM_LIMIT_BYTES = 48 * 1024  # above this a kernel must opt in to more dynamic smem

# Corners of each space (shared with tests/test_sample_kernels.py).
EXTREMES: dict[str, list[dict[str, int]]] = {
    k: v for k, v in json.loads((REPO / "sample_kernels" / "corner_configs.json").read_text()).items()
    if k != "about"}


@dataclass(frozen=True)
class Check:
    """One launch of one kernel variant at one (shape, dtype), compared with the reference."""

    kernel: str
    variant: str  # "baseline" or "template"
    label: str  # "B" for the baseline, "T<i>" for the i-th candidate config (T0 = defaults)
    config: str  # Config.key() ("{}" for the baseline)
    shape: str
    dtype: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem_bytes: int
    passed: bool
    reason: str  # empty when passed
    max_abs_err: float
    regs_per_thread: int
    spill_bytes: int


def device_spec(name: str) -> DeviceSpec:
    """The workbench's description of the GPU in hand (its limits feed the constraints)."""
    return get_device("h200" if "H200" in name else "h100")


def compile_cubin(source: str, workdir: Path, tag: str) -> tuple[Path | None, str]:
    """nvcc -cubin for sm_90a; (cubin path or None, nvcc + ptxas log)."""
    src = workdir / f"{tag}.cu"
    out = workdir / f"{tag}.cubin"
    src.write_text(source)
    proc = subprocess.run(["nvcc", "-cubin", "-arch=sm_90a", "-O3", "-Xptxas", "-v",
                           "-o", str(out), str(src)], capture_output=True, text=True, check=False)
    log = proc.stdout + proc.stderr
    return (out if proc.returncode == 0 else None), log


def ptxas_usage(log: str) -> tuple[int, int]:
    """(registers per thread, spill store + load bytes) from a ptxas -v log."""
    import re

    regs = re.search(r"Used (\d+) registers", log)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    return (int(regs.group(1)) if regs else -1,
            sum(int(a) + int(b) for a, b in spills))


def candidate_configs(kf: KernelFolder, samples: int) -> list[Config]:
    """Defaults, the corners above, and a seeded sample from the largest and smallest shapes."""
    configs: list[Config] = [kf.template.default_config()]
    configs += [Config(c) for c in EXTREMES.get(kf.name, [])]
    shapes = list(kf.shapes)
    for seed, shape in enumerate((shapes[-1], shapes[0])):
        configs += kf.space(shape, kf.dtypes[0]).sample(samples, seed=seed)
    unique: list[Config] = []
    for c in configs:
        if c not in unique:
            unique.append(c)
    return unique


class Problem:
    """Inputs, reference and device buffers of one (kernel, shape, dtype), reused by every config."""

    def __init__(self, cp: Any, kf: KernelFolder, shape: str, dtype: str, seed: int) -> None:
        self.cp, self.kf, self.shape, self.dtype = cp, kf, shape, dtype
        self.env = kf.env(shape, dtype)
        sizes = kf.shape_values(shape)
        ref = kf.load_reference()
        raw = ref.make_inputs(sizes, dtype, np.random.default_rng(seed))
        # The kernel and the reference see the same values: element-dtype args are rounded to
        # dtype once (device bits), and the reference gets those bits back as float32.
        self.pristine: dict[str, Any] = {}
        self.buffers: dict[str, Any] = {}
        inputs: dict[str, np.ndarray] = {}
        for a in kf.args:
            if a.role not in ("in", "inout"):
                continue
            host = to_device_bits(raw[a.name], dtype) if a.dtype == "T" else \
                np.ascontiguousarray(raw[a.name], dtype=np.float32)
            inputs[a.name] = from_device_bits(host, dtype) if a.dtype == "T" else host
            self.pristine[a.name] = cp.asarray(host)
            self.buffers[a.name] = self.pristine[a.name].copy()
        del raw
        expected = ref.reference(inputs, sizes, dtype)
        del inputs
        self.expected = {name: cp.asarray(np.asarray(v, dtype=np.float32)) for name, v in expected.items()}
        for a in kf.args:
            if a.role == "out":
                adt = a.resolved_dtype(dtype)
                self.buffers[a.name] = cp.empty(a.shape_for(self.env), dtype=self._storage(adt))

    def _storage(self, adt: str) -> Any:
        cp = self.cp
        return {"bf16": cp.uint16, "fp16": cp.uint16, "f32": cp.float32, "fp32": cp.float32,
                "i32": cp.int32, "i64": cp.int64}[adt]

    def reset(self) -> None:
        """Fresh inputs for in/out buffers; NaN in every output buffer."""
        for a in self.kf.args:
            if a.role in ("in", "inout"):
                self.buffers[a.name][...] = self.pristine[a.name]
            elif a.role == "out":
                adt = a.resolved_dtype(self.dtype)
                nan_bits = {"bf16": 0x7FC0, "fp16": 0x7E00}.get(adt)
                if nan_bits is None:
                    self.buffers[a.name].fill(np.nan)
                else:
                    self.buffers[a.name].fill(nan_bits)

    def kernel_args(self) -> tuple[Any, ...]:
        out: list[Any] = []
        for a in self.kf.args:
            if a.is_buffer:
                out.append(self.buffers[a.name])
            else:
                assert a.value is not None
                value = a.value.evaluate(self.env)
                scalar_type = {"i32": np.int32, "i64": np.int64, "f32": np.float32}[a.dtype]
                out.append(np.asarray(value, dtype=scalar_type)[()])  # a numpy scalar of that type
        return tuple(out)

    def compare(self) -> tuple[bool, str, float]:
        """All outputs within tolerance and finite; (passed, reason, max abs error)."""
        cp = self.cp
        worst = float("nan")
        reasons: list[str] = []
        for a in self.kf.args:
            if a.role not in ("out", "inout"):
                continue
            adt = a.resolved_dtype(self.dtype)
            raw = self.buffers[a.name]
            if adt == "bf16":
                got = (raw.astype(cp.uint32) << 16).view(cp.float32)
            elif adt == "fp16":
                got = raw.view(cp.float16).astype(cp.float32)
            else:
                got = raw
            want = self.expected[a.name]
            tol = self.kf.tolerance_for(a, self.dtype)
            err = cp.abs(got - want)
            bad = ~(err <= tol.atol + tol.rtol * cp.abs(want))  # NaN compares false: bad
            n_bad = int(bad.sum())
            finite = cp.isfinite(err)
            if bool(finite.any()):
                worst = float(np.nanmax([worst, float(err[finite].max())]))
            if n_bad:
                first = int(cp.flatnonzero(bad)[0])
                reasons.append(f"{a.name}: {n_bad}/{bad.size} outside rtol={tol.rtol} atol={tol.atol} "
                               f"(first at flat {first}: got {float(got.ravel()[first])}, "
                               f"want {float(want.ravel()[first])})")
        return (not reasons, "; ".join(reasons), worst)


def run_kernel(cp: Any, kf: KernelFolder, spec: DeviceSpec, samples: int, shapes: Iterable[str] | None,
               workdir: Path, log: Any, jsonl: Any) -> list[Check]:
    configs = candidate_configs(kf, samples)
    shape_names = [s for s in kf.shapes if shapes is None or s in shapes]
    # Which (config, dtype) pairs are feasible somewhere; compile each once, in parallel.
    spaces = {(s, d): kf.template.space(kf.env(s, d, spec)) for s in shape_names for d in kf.dtypes}
    jobs: dict[tuple[str, str], tuple[KernelTemplate, Config]] = {}
    for dtype in kf.dtypes:
        jobs[("{}", dtype)] = (kf.baseline, Config())
        for c in configs:
            if any(c in spaces[(s, dtype)] for s in shape_names):
                jobs[(c.key(), dtype)] = (kf.template, c)
    t0 = time.perf_counter()

    def build(item: tuple[tuple[str, str], tuple[KernelTemplate, Config]]) -> tuple[tuple[str, str], Path | None, str]:
        (key, dtype), (tmpl, cfg) = item
        inst = tmpl.render(cfg, dtype)
        cubin, text = compile_cubin(inst.source, workdir, f"{kf.name}-{inst.hash}")
        return (key, dtype), cubin, text

    with ThreadPoolExecutor(max_workers=16) as pool:
        built = {k: (cubin, text) for k, cubin, text in pool.map(build, jobs.items())}
    for i, c in enumerate(configs):
        print(f"[{kf.name}] T{i} = {c.key()}", file=log)
    print(f"[{kf.name}] compiled {len(built)} variants in {time.perf_counter() - t0:.1f} s",
          file=log, flush=True)

    results: list[Check] = []
    for dtype in kf.dtypes:
        for shape in shape_names:
            t1 = time.perf_counter()
            problem = Problem(cp, kf, shape, dtype, seed=0)
            env = kf.env(shape, dtype, spec)
            space = spaces[(shape, dtype)]
            variants: list[tuple[str, str, KernelTemplate, Config]] = [("baseline", "B", kf.baseline, Config())]
            variants += [("template", f"T{i}", kf.template, c) for i, c in enumerate(configs) if c in space]
            for variant, label, tmpl, cfg in variants:
                key = cfg.key() if variant == "template" else "{}"
                cubin, text = built[(key, dtype)]
                launch = tmpl.launch_for(cfg, env)
                regs, spill = ptxas_usage(text)
                if cubin is None:
                    passed, reason, err = False, "compile error: " + text.strip()[-300:], float("nan")
                else:
                    try:
                        fn = cp.RawModule(path=str(cubin)).get_function(tmpl.entry)
                        if launch.smem_bytes > DEFAULT_SMEM_LIMIT_BYTES:
                            fn.max_dynamic_shared_size_bytes = launch.smem_bytes
                        problem.reset()
                        fn(launch.grid, launch.block, problem.kernel_args(), shared_mem=launch.smem_bytes)
                        cp.cuda.Device().synchronize()
                        passed, reason, err = problem.compare()
                    except Exception as exc:  # a launch failure is a result to report, not a crash
                        passed, reason, err = False, f"launch error: {exc}", float("nan")
                results.append(Check(kf.name, variant, label, key, shape, dtype, launch.grid, launch.block,
                                     launch.smem_bytes, passed, reason, err, regs, spill))
                jsonl.write(json.dumps(asdict(results[-1])) + "\n")
                jsonl.flush()
                if not passed:
                    print(f"FAIL {kf.name} {variant} {key} {shape} {dtype}: {reason}", file=log, flush=True)
            n_failed = sum(not r.passed for r in results[-len(variants):])
            print(f"[{kf.name}] {shape} {dtype}: {len(variants)} variants, {n_failed} failed, "
                  f"{time.perf_counter() - t1:.1f} s", file=log, flush=True)
            del problem
            cp.get_default_memory_pool().free_all_blocks()
    return results


def table(results: list[Check]) -> str:
    """One line per (kernel, shape, dtype): baseline verdict and template configs passed."""
    lines = [f"{'kernel':<24}{'shape':<9}{'dtype':<6}{'baseline':<10}{'template':<14}"
             f"{'max_abs_err':>12}  failures"]
    groups: dict[tuple[str, str, str], list[Check]] = {}
    for r in results:
        groups.setdefault((r.kernel, r.shape, r.dtype), []).append(r)
    for (kernel, shape, dtype), rs in groups.items():
        base = [r for r in rs if r.variant == "baseline"]
        tmpl = [r for r in rs if r.variant == "template"]
        ok = sum(r.passed for r in tmpl)
        errs = [r.max_abs_err for r in rs if np.isfinite(r.max_abs_err)]
        fails = [r.label for r in rs if not r.passed]
        verdict = "PASS" if base and all(r.passed for r in base) else "FAIL"
        lines.append(f"{kernel:<24}{shape:<9}{dtype:<6}{verdict:<10}"
                     f"{f'{ok}/{len(tmpl)} PASS':<14}{max(errs, default=float('nan')):>12.3g}  "
                     f"{' '.join(fails) if fails else '-'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out"), help="folder for logs and results")
    # largest inputs last, so a time limit cuts the least
    parser.add_argument("--kernels", nargs="*", default=["merge_attn_states_lse", "fused_add_rmsnorm", "silu_and_mul"])
    parser.add_argument("--shapes", nargs="*", default=None, help="shape names (default: all)")
    parser.add_argument("--samples", type=int, default=5,
                        help="random feasible configs drawn at each of two shapes")
    args = parser.parse_args(argv)

    import cupy as cp  # only on the GPU machine

    args.out.mkdir(parents=True, exist_ok=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    spec = device_spec(name)
    results: list[Check] = []
    with open(args.out / "check_samples.log", "w") as log, \
            open(args.out / "check_samples.jsonl", "w") as jsonl, tempfile.TemporaryDirectory() as tmp:
        print(f"device: {name} (limits of {spec.key})", file=log, flush=True)
        for kernel in args.kernels:
            kf = load_kernel_folder(REPO / "sample_kernels" / kernel)
            results += run_kernel(cp, kf, spec, args.samples, args.shapes, Path(tmp), log, jsonl)
    legend = sorted({f"{r.kernel} {r.label} = {r.config}" for r in results if r.variant == "template"})
    text = table(results) + "\n\nconfigs:\n" + "\n".join(legend)
    n_fail = sum(not r.passed for r in results)
    summary = f"{len(results)} checks, {n_fail} failed on {name}"
    (args.out / "check_samples.txt").write_text(text + "\n" + summary + "\n")
    print(text)
    print(summary)
    return 1 if n_fail else 0


if __name__ == "__main__":
    raise SystemExit(main())
