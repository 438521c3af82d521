"""Lab endpoints' latency with a 60k-trial store while six hostile inits run beside them.

Fills a real SQLite store (``record_trial``, 60 sessions x 1000 trials of one kernel),
starts a real Jupyter server with the workbench extension on loopback, then times
``GET /workbench/kernels`` (the sidebar) and ``POST /workbench/notebook`` (open a panel):
first alone, then while six inits of a pathological .cu (200 KB of nested ``*(``, what
issue 27 found starving the server) are sent at once. Writes p50/p99/max per endpoint and
phase to ``benchmarks/results/lab_latency.json``.

    python benchmarks/lab_latency.py [--trials 60000] [--rounds 40]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from workbench.core.records import Status
from workbench.store.sqlite import SQLiteStore
from workbench.testing.store_contract import PROVENANCE, sample_result

HOSTILE_CU = "__global__ void k(float* p) { " + "*(" * 100_000 + "p" + ")" * 100_000 + "; }\n"
RESULTS = Path(__file__).resolve().parent / "results" / "lab_latency.json"


def fill_store(path: Path, trials: int, per_session: int = 1000) -> float:
    """``trials`` trials of kernel ``scale`` in sessions of ``per_session``; seconds taken."""
    start = time.perf_counter()
    with SQLiteStore(path) as store:
        session = ""
        for n in range(trials):
            if n % per_session == 0:
                session = store.create_session("scale").id
            status = Status.OK if n % 10 else Status.COMPILE_ERROR
            store.record_trial(sample_result(n, shape=f"s{n % 3}", status=status,
                                             median_us=5.0 + (n % 997) / 100), PROVENANCE,
                               session)
    return time.perf_counter() - start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(port: int, token: str, method: str, endpoint: str,
             body: bytes | None = None) -> tuple[int, float]:
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request(method, f"/workbench/{endpoint}", body=body,
                     headers={"Authorization": f"token {token}",
                              "Content-Type": "application/json"})
        reply = conn.getresponse()
        reply.read()
    finally:
        conn.close()
    return reply.status, time.perf_counter() - start


def _summary(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered) * 1e3, 1),
            "p99_ms": round(p99 * 1e3, 1), "max_ms": round(ordered[-1] * 1e3, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lab-latency-"))
    root, config = work / "root", work / "config"
    (root / "scale").mkdir(parents=True)
    (root / "scale" / "kernel.toml").write_text('name = "scale"\n')
    for i in range(6):
        (root / f"hostile{i}.cu").write_text(HOSTILE_CU)
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"workbench.ui.lab_server": True}}}))
    store = root / "workbench.sqlite"
    fill_s = fill_store(store, args.trials)
    token, port = secrets.token_hex(16), _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("WORKBENCH_STORE",
                                                            "WORKBENCH_KERNELS")}
    env["JUPYTER_CONFIG_DIR"] = str(config)
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
         "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
         f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}",
                                            timeout=2):
                    break
            except OSError:
                time.sleep(0.2)
        panel = json.dumps({"kernel": "scale"}).encode()
        probes = {"GET kernels": ("GET", "kernels", None),
                  "POST notebook": ("POST", "notebook", panel)}
        _request(port, token, "GET", "kernels")  # the first open migrates and checks the store
        result: dict[str, Any] = {"alone": {}, "six_hostile_inits": {}}
        for name, (method, endpoint, body) in probes.items():
            result["alone"][name] = _summary(
                [_request(port, token, method, endpoint, body)[1] for _ in range(args.rounds)])
        with ThreadPoolExecutor(6) as pool:
            inits = [pool.submit(_request, port, token, "POST", "init",
                                 json.dumps({"path": f"hostile{i}.cu"}).encode())
                     for i in range(6)]
            during: dict[str, list[float]] = {name: [] for name in probes}
            for _ in range(args.rounds):
                for name, (method, endpoint, body) in probes.items():
                    during[name].append(_request(port, token, method, endpoint, body)[1])
            overlapped = sum(not f.done() for f in inits)
            init_replies = [f.result() for f in inits]
        result["six_hostile_inits"] = {name: _summary(t) for name, t in during.items()}
        result["inits"] = {"statuses": sorted(s for s, _ in init_replies),
                           "slowest_s": round(max(t for _, t in init_replies), 1),
                           "still_running_when_probes_ended": overlapped}
    finally:
        server.terminate()
        server.wait(timeout=30)
    result["setup"] = {"trials": args.trials, "sessions": -(-args.trials // 1000),
                       "fill_s": round(fill_s, 1), "store_bytes": store.stat().st_size,
                       "rounds": args.rounds, "machine": platform.node(),
                       "cpus": os.cpu_count(), "python": platform.python_version(),
                       "command": "python benchmarks/lab_latency.py " + " ".join(sys.argv[1:])}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
