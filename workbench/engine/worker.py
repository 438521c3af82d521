"""The GPU worker: the one process that owns a CUDA context.

The notebook / CLI process never imports pycuda. It starts this module as a child
(``python -m workbench.engine.worker``) and speaks a length-prefixed JSON protocol over the
child's stdin/stdout: each message is a 4-byte big-endian length followed by that many bytes
of UTF-8 JSON. An illegal address poisons a CUDA context for good, so after such an error
(or a hang, or the child dying) the parent kills the child and starts a fresh one; only that
candidate is lost. Every failure is classified by one table, :data:`FAILURE_TABLE`.

This module is the child's main loop. The rest lives by concept, and is re-exported here:
the pure parts (framing, the table) in :mod:`worker_protocol`, the parent's handle
(:class:`WorkerClient`) in :mod:`worker_client`, and the child's GPU side (which imports
pycuda lazily, so the modules import fine on a machine without a GPU) in :mod:`gpu_session`
(:class:`GpuSession`) and :mod:`gpu_verify` (output checks).
"""

from __future__ import annotations

import os
import sys

from workbench.engine.check_kernels import CHECK_KERNELS_ENTRY, CHECK_KERNELS_SOURCE, POISON_BITS
from workbench.engine.gpu_session import GpuSession
from workbench.engine.nvml import CLOCK_SHORTFALL, THROTTLE_MASK, throttled
from workbench.engine.output_compare import _Mismatch, compare_outputs
from workbench.engine.spin_up import IDLE_GAP_S, SPIN_UP_S
from workbench.engine.worker_client import WorkerClient, WorkerDied, WorkerTimeout
from workbench.engine.worker_protocol import (
    FAILURE_TABLE,
    MAX_MESSAGE_BYTES,
    FailureRule,
    classify_cuda_error,
    encode_message,
    read_message,
    rule_for_event,
    write_message,
)

__all__ = [
    "CHECK_KERNELS_ENTRY",
    "CHECK_KERNELS_SOURCE",
    "CLOCK_SHORTFALL",
    "FAILURE_TABLE",
    "IDLE_GAP_S",
    "MAX_MESSAGE_BYTES",
    "POISON_BITS",
    "SPIN_UP_S",
    "THROTTLE_MASK",
    "FailureRule",
    "GpuSession",
    "WorkerClient",
    "WorkerDied",
    "WorkerTimeout",
    "_Mismatch",
    "classify_cuda_error",
    "compare_outputs",
    "encode_message",
    "main",
    "read_message",
    "rule_for_event",
    "throttled",
    "write_message",
]


# --------------------------------------------------------------------------------------------
# The child


def main() -> int:
    """Serve commands on stdin/stdout until ``quit`` or end of input."""
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints (pycuda, reference.py) must not corrupt the protocol
    sys.stdout = sys.stderr
    proto_in = sys.stdin.buffer
    session = GpuSession()
    while True:
        message = read_message(proto_in)
        if message is None or message.get("cmd") == "quit":
            write_message(proto_out, {"ok": True})
            session.close()
            return 0
        reply = session.handle(message)
        write_message(proto_out, reply)
        if reply.get("restart_worker"):
            # the context is poisoned: leave, so nothing else runs on it
            proto_out.flush()
            os._exit(3)


if __name__ == "__main__":
    sys.exit(main())
