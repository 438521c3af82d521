"""``workbench doctor``: what this machine has for each part of the workbench, and what to
install for each missing piece.

Every probe is read-only and quick: nvcc's version, the CUDA driver through ``libcuda``
(ctypes; no CUDA context is kept), pycuda's presence, libcupti's loadability, ``ncu`` on
PATH, and the LLM endpoint's ``/models`` (skipped when no endpoint is configured). The API
key's value is never read into a message.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.core.settings import SettingError, workbench_settings
from workbench.engine.discovery import (
    NoLive,
    NoLiveReason,
    first_reason,
    probe_driver,
    pycuda_reason,
    tuning_mode_line,
)

PYCUDA_HINT = (
    "pip install -e \".[gpu]\" builds pycuda from source and needs the CUDA headers: "
    "CUDA_ROOT=/usr/local/cuda (the folder holding include/cuda.h) and nvcc on PATH; or take "
    "conda-forge's binary: conda env create -f environment.yml")


@dataclass(frozen=True)
class Check:
    """One probe: what was found (or why not) and, when missing, how to get it."""

    name: str
    ok: bool
    found: str
    needed_for: str
    fix: str = ""
    blocks_live: NoLiveReason | None = None  # set where this missing piece rules out live
    fix_verb: str = "install"  # what the fix asks: "install" a piece, or "set" a setting


def release_line(version_text: str) -> str:
    """The one line of ``nvcc --version`` that names the release
    (``Cuda compilation tools, release 13.0, V13.0.48``); the last line if none does."""
    lines = [line.strip() for line in version_text.strip().splitlines() if line.strip()]
    return next((line for line in lines if "release" in line), lines[-1] if lines else "")


def check_nvcc() -> Check:
    from workbench.engine.compiler import INSTALL_HINT, find_nvcc, nvcc_version

    needed = "compiling, ptxas resource reports, live tuning"
    try:
        nvcc = find_nvcc()
        release = release_line(nvcc_version(nvcc))
    except (WorkbenchError, OSError) as exc:
        found = getattr(exc, "message", str(exc))
        return Check("nvcc", False, found, needed, INSTALL_HINT,
                     NoLiveReason(NoLive.NO_NVCC, found.split(";")[0]))
    return Check("nvcc", True, f"{release} ({nvcc})", needed)


def check_gpu(load: Callable[[str], Any] = ctypes.CDLL) -> Check:
    needed = "live tuning (without a GPU the committed H100 recordings are replayed)"
    fix = "a machine with an NVIDIA GPU and its driver (libcuda.so.1)"
    probe = probe_driver(load)
    if probe.problem is not None:
        return Check("GPU", False, probe.problem.text, needed, fix, probe.problem)
    return Check("GPU", True, f"{', '.join(probe.devices)} (CUDA driver API "
                              f"{probe.driver_version})", needed)


def check_pycuda() -> Check:
    needed = "live tuning (the GPU worker)"
    missing = pycuda_reason()
    if missing is not None:
        return Check("pycuda", False, "not installed", needed, PYCUDA_HINT, missing)
    return Check("pycuda", True, importlib.metadata.version("pycuda"), needed)


def check_cupti() -> Check:
    from workbench.engine.cupti import CuptiError, load_library

    needed = "the kernel's own duration (timer='cupti'; CUDA events are used without it)"
    try:
        _, path, version = load_library()
    except CuptiError as exc:
        return Check("CUPTI", False, exc.message.split("; tried:")[0], needed,
                     "it ships with the CUDA toolkit (extras/CUPTI/lib64) or "
                     "`pip install nvidia-cuda-cupti`; set WORKBENCH_CUPTI_LIB to its path")
    return Check("CUPTI", True, f"API {version} ({path})", needed)


def check_ncu() -> Check:
    needed = "profiling feedback to the agent's planner (optional)"
    found = shutil.which("ncu")
    if found is None:
        return Check("ncu", False, "not on PATH", needed,
                     "Nsight Compute: in the CUDA toolkit (bin/ncu) or NVIDIA's nsight-compute "
                     "package; put it on PATH")
    return Check("ncu", True, found, needed)


def check_llm(environ: Mapping[str, str] | None = None, timeout_s: float = 3.0) -> Check:
    """The endpoint the agent would call: configured, and answering ``GET /models``."""
    env = os.environ if environ is None else environ
    needed = "LLM templates and the agent's planner (the offline templater works without)"
    try:
        model = workbench_settings(env).model
    except SettingError as exc:
        return Check("LLM endpoint", False, exc.message, needed,
                     f"set {exc.variable} to {exc.expected}, or unset it", fix_verb="set")
    base = env.get("OPENAI_BASE_URL", "") or "https://api.openai.com/v1"
    client = importlib.util.find_spec("openai") is not None
    if not model:
        # only what is missing: the client is there when the [llm] extra is installed
        setting = ("WORKBENCH_MODEL to your endpoint's model name (with OPENAI_BASE_URL "
                   "and OPENAI_API_KEY for an endpoint other than api.openai.com)")
        return Check("LLM endpoint", False, "no model configured (WORKBENCH_MODEL is unset)",
                     needed, setting if client else
                     f"{setting}; and pip install -e \".[llm]\" (the openai client)",
                     fix_verb="set")
    if not client:
        return Check("LLM endpoint", False, f"model {model}, but the openai client is not "
                     "installed", needed, "pip install -e \".[llm]\"")
    request = urllib.request.Request(base.rstrip("/") + "/models")
    key = env.get("OPENAI_API_KEY")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            listed = len(json.load(reply).get("data", []))
    except urllib.error.HTTPError as exc:
        if exc.code in (404, 405):  # reachable; this server has no model listing
            return Check("LLM endpoint", True, f"{base} reachable (no /models listing: HTTP "
                         f"{exc.code}), model {model}", needed)
        return Check("LLM endpoint", False, f"{base} answered HTTP {exc.code} to GET /models",
                     needed, "check OPENAI_API_KEY and OPENAI_BASE_URL")
    except (OSError, ValueError) as exc:
        return Check("LLM endpoint", False, f"{base} unreachable: {exc}", needed,
                     "start the endpoint or fix OPENAI_BASE_URL")
    return Check("LLM endpoint", True, f"{base}, model {model} ({listed} models listed)",
                 needed)


def cuda_root_with_headers(environ: Mapping[str, str] | None = None,
                           fallback: Sequence[str] = ("/usr/local/cuda",)) -> str | None:
    """A CUDA toolkit folder holding ``include/cuda.h`` (what building pycuda needs)."""
    env = os.environ if environ is None else environ
    candidates = [env.get(v, "") for v in ("CUDA_ROOT", "CUDA_HOME", "CUDA_PATH")]
    nvcc = shutil.which("nvcc", path=env.get("PATH", ""))
    if nvcc:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    for root in [*candidates, *fallback]:
        if root and os.path.isfile(os.path.join(root, "include", "cuda.h")):
            return root
    return None


def install_pycuda(python: str, environ: Mapping[str, str] | None = None,
                   run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
                   fallback: Sequence[str] = ("/usr/local/cuda",)) -> tuple[bool, str]:
    """Build and install pycuda (and nvidia-ml-py) into ``python``'s environment.

    Returns (installed, what happened). Refuses with the reason when no CUDA headers are
    found, instead of letting pip fail after minutes on ``cuda.h: No such file``.
    """
    env = dict(os.environ if environ is None else environ)
    root = cuda_root_with_headers(env, fallback)
    if root is None:
        return False, ("no CUDA headers (include/cuda.h) found in CUDA_ROOT, CUDA_HOME, "
                       "CUDA_PATH, next to nvcc or in /usr/local/cuda; " + PYCUDA_HINT)
    env["CUDA_ROOT"] = root
    env["PATH"] = os.path.join(root, "bin") + os.pathsep + env.get("PATH", "")
    done = run([python, "-m", "pip", "install", "pycuda>=2024.1", "nvidia-ml-py>=12"],
               env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return False, (f"pip install pycuda failed (exit {done.returncode}) with "
                       f"CUDA_ROOT={root}: {(done.stderr or done.stdout).strip()[-600:]}")
    return True, f"installed pycuda (built against CUDA_ROOT={root})"


def run_checks(*, llm: bool = True) -> list[Check]:
    """Every probe, in the order ``workbench doctor`` prints them."""
    checks = [check_nvcc(), check_gpu(), check_pycuda(), check_cupti(), check_ncu()]
    return [*checks, check_llm()] if llm else checks


def tuning_mode(checks: Sequence[Check]) -> str:
    """``"live on <GPU>"`` or ``"replay because <reason>"``: the first of the checks' reasons
    in :func:`~workbench.engine.discovery.first_reason`'s order (driver, device, pycuda,
    nvcc), worded as :func:`~workbench.engine.discovery.no_live_reason` words it."""
    reason = first_reason(c.blocks_live for c in checks)
    gpu = next((c for c in checks if c.name == "GPU" and c.ok), None)
    return tuning_mode_line(reason, gpu.found.split(" (CUDA")[0] if gpu else "")


def format_report(checks: Sequence[Check]) -> str:
    """The text ``workbench doctor`` prints: one block per check, then the tuning mode."""
    lines = []
    for c in checks:
        lines.append(f"{'ok     ' if c.ok else 'missing'}  {c.name}: {c.found}")
        lines.append(f"         for {c.needed_for}")
        if not c.ok and c.fix:
            lines.append(f"         {c.fix_verb}: {c.fix}")
    mode = tuning_mode(checks)
    lines.append(f"tuning: {mode}")
    if mode.startswith("replay"):
        lines.append("         a kernel with a recording of its template replays it; one "
                     "without: check, space and propose work here, tune it on a GPU machine")
    return "\n".join(lines)
