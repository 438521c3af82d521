"""``workbench lab``: JupyterLab on the notebooks folder, live on a GPU or replaying.

Before starting it says which: ``live on <GPU>`` or ``replay because <reason>``. On a
machine with a GPU and no pycuda it first builds pycuda (once; ``--no-gpu-setup`` skips),
so the README's one command gives live tuning there. As root (common in GPU containers) it
passes ``--allow-root``; anything after ``--`` goes to Jupyter unchanged.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from workbench.core.errors import WorkbenchError


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def lab_command(root: str | Path = "notebooks", *, port: int | None = None,
                open_browser: bool = True, extra: Sequence[str] = (),
                as_root: bool | None = None) -> list[str]:
    """The command line that starts JupyterLab with ``root`` as its file browser root."""
    folder = Path(root)
    if not folder.is_dir():
        raise WorkbenchError(f"notebook folder {folder} does not exist", key="root",
                             value=str(folder), expected="an existing folder")
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder.resolve()}"]
    if port is not None:
        cmd += [f"--port={port}"]
    if not open_browser:
        cmd += ["--no-browser"]
    if (_is_root() if as_root is None else as_root) and "--allow-root" not in extra:
        cmd += ["--allow-root"]  # Jupyter refuses root without it (GPU containers run as root)
    return [*cmd, *extra]


def lab_environment(root: str | Path, environ: Mapping[str, str] | None = None
                    ) -> dict[str, str]:
    """The server's environment: ``WORKBENCH_KERNELS`` defaults to the sample kernels next
    to the notebooks folder, so the sidebar lists them (the notebooks use the same path)."""
    env = dict(os.environ if environ is None else environ)
    samples = Path(root).resolve().parent / "sample_kernels"
    if not env.get("WORKBENCH_KERNELS") and samples.is_dir():
        env["WORKBENCH_KERNELS"] = str(samples)
    return env


def prepare_gpu(gpu_setup: bool = True, say: Callable[[str], None] = print) -> str:
    """Probe the machine, build pycuda when a GPU is there without it, and return the mode:
    ``"live on <GPU>"`` or ``"replay because <reason>"``."""
    from workbench.engine.doctor import install_pycuda, run_checks, tuning_mode

    checks = run_checks(llm=False)
    by_name = {c.name: c for c in checks}
    if by_name["GPU"].ok and not by_name["pycuda"].ok:
        if not gpu_setup:
            return f"replay because pycuda is not installed ({by_name['GPU'].found} is here; " \
                   "`workbench lab` without --no-gpu-setup builds it)"
        say(f"{by_name['GPU'].found}: building pycuda for live tuning (once, a few minutes)")
        installed, what = install_pycuda(sys.executable)
        say(what)
        if not installed:
            return "replay because pycuda could not be built (see above; `workbench doctor`)"
        checks = run_checks(llm=False)
    return tuning_mode(checks)


def launch(root: str | Path = "notebooks", *, port: int | None = None,
           open_browser: bool = True, extra: Sequence[str] = (),
           gpu_setup: bool = True) -> int:
    """Run JupyterLab in the foreground until it exits; returns its exit status."""
    try:
        import jupyterlab  # noqa: F401
    except ImportError as exc:
        raise WorkbenchError("JupyterLab is not installed: pip install 'kernel-workbench[ui]'",
                             key="jupyterlab", value=None,
                             expected="the ui extra installed") from exc
    command = lab_command(root, port=port, open_browser=open_browser, extra=extra)
    print(f"workbench lab: {prepare_gpu(gpu_setup)}", flush=True)
    with subprocess.Popen(command, env=lab_environment(root)) as server:
        # A SIGTERM to `workbench lab` (a container stopping) stops Jupyter too, instead of
        # leaving it running without its parent.
        previous = signal.signal(signal.SIGTERM, lambda signum, _: server.send_signal(signum))
        try:
            return server.wait()
        except BaseException:
            server.kill()
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)
