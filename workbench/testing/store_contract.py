"""StoreContract: the behaviour every store backend must show.

Subclass in a test module as ``class TestMine(StoreContract)`` and override
:meth:`make_store` (pytest's ``tmp_path`` is passed in).

Claims (how two processes tuning one template/shape/dtype share the work): see the comment
block at ``DEFAULT_LEASE_S`` in :mod:`workbench.store.base`; the ``test_claim_*`` tests below
are that contract. A backend shared across hosts relies on lease expiry alone; on one host a
claim whose owner process is gone is granted at once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.core.errors import StoreError
from workbench.core.records import (
    Config,
    Occupancy,
    ResourceUsage,
    Status,
    Timing,
    TrialResult,
)
from workbench.store.base import (
    AgentIteration,
    Provenance,
    Review,
    Store,
    TemplateVersion,
    TokenUsage,
    claim_owner,
)

PROVENANCE = Provenance(template_sha256="t" * 64, compiler="nvcc 13.0", flags="-O3",
                        arch="sm_90a", device="Test GPU", driver="1.0")


def sample_result(block: int = 128, shape: str = "decode", status: Status = Status.OK,
                  median_us: float = 12.5) -> TrialResult:
    """A fully populated result (values are arbitrary test data, not measurements)."""
    timing = (Timing(median_us=median_us, min_us=median_us - 0.5, q1_us=median_us - 0.2,
                     q3_us=median_us + 0.3, mean_us=median_us + 0.1, reps=50,
                     rse_median_pct=0.4, l2_flushed=True, sm_clock_mhz=1980)
              if status is Status.OK else None)
    return TrialResult(
        config=Config(BLOCK=block, VEC=8, MODE="fast", UNROLL=True), shape=shape,
        dtype="bf16", status=status, reason="" if status is Status.OK else "boom",
        timing=timing, usage=ResourceUsage(regs_per_thread=32, static_smem_bytes=1024),
        occupancy=Occupancy(8, 32, 64, "warps"), instance_hash="0123456789abcdef",
        bytes_moved=1 << 20, compile_s=0.8, verify_s=0.01, bench_s=0.2, device="Test GPU",
        extra={"note": "x"})


class StoreContract:
    """Inherited tests; override :meth:`make_store`."""

    def make_store(self, tmp_path: Path) -> Store:
        raise NotImplementedError

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        store = self.make_store(tmp_path)
        yield store
        store.close()

    def test_is_a_store(self, store: Store) -> None:
        assert isinstance(store, Store)

    def test_sessions(self, store: Store) -> None:
        a = store.create_session("silu", notes="first")
        b = store.create_session("rmsnorm")
        assert a.id != b.id
        assert [s.id for s in store.sessions("silu")] == [a.id]
        assert {s.id for s in store.sessions()} == {a.id, b.id}
        assert store.sessions("silu")[0].notes == "first"

    def test_trial_round_trip_and_uniqueness(self, store: Store) -> None:
        result = sample_result()
        assert store.record_trial(result, PROVENANCE) is True
        assert store.record_trial(result, PROVENANCE) is False  # never stored twice
        other = Provenance(**{**PROVENANCE.__dict__, "driver": "2.0"})
        assert store.record_trial(result, other) is True
        stored = store.trials(PROVENANCE)
        assert len(stored) == 1
        assert stored[0].result.to_dict() == result.to_dict()
        assert stored[0].provenance == PROVENANCE
        assert store.count_trials() == 2 and store.count_trials(PROVENANCE) == 1
        assert store.has_trial(PROVENANCE, result.config.key(), "decode", "bf16")
        assert not store.has_trial(PROVENANCE, result.config.key(), "prefill", "bf16")

    def test_remeasurements_keep_every_round(self, store: Store) -> None:
        result = sample_result()
        assert store.record_trial(result, PROVENANCE) is True
        faster = dataclasses.replace(result, timing=dataclasses.replace(
            result.timing, median_us=result.timing.median_us * 0.9)) if result.timing else result
        store.record_remeasurement(result, PROVENANCE, 1, session_id=None)
        store.record_remeasurement(faster, PROVENANCE, 2)
        store.record_remeasurement(result, PROVENANCE, 2)  # the same key again: kept too
        got = store.remeasurements(PROVENANCE)
        assert [g.round_index for g in got] == [1, 2, 2]
        assert got[1].result.to_dict() == faster.to_dict()
        assert store.remeasurements(PROVENANCE, shape="prefill") == []
        other = Provenance(**{**PROVENANCE.__dict__, "driver": "2.0"})
        assert store.remeasurements(other) == []
        assert store.count_trials() == 1  # re-measurements are not trials

    def test_trial_filters_and_failures(self, store: Store) -> None:
        store.record_trial(sample_result(64), PROVENANCE)
        store.record_trial(sample_result(64, shape="prefill"), PROVENANCE)
        store.record_trial(sample_result(256, status=Status.COMPILE_ERROR), PROVENANCE)
        decode = store.trials(PROVENANCE, shape="decode", dtype="bf16")
        assert [t.result.config["BLOCK"] for t in decode] == [64, 256]
        assert decode[1].result.status is Status.COMPILE_ERROR
        assert decode[1].result.timing is None
        assert store.trials(PROVENANCE, dtype="fp16") == []

    def test_template_versions_and_reviews(self, store: Store) -> None:
        session = store.create_session("silu")
        base = TemplateVersion(id="v1", kernel="silu", source_text="// v1",
                               source_sha256="a" * 64, params={"BLOCK": {"kind": "pow2"}},
                               constraints=("BLOCK <= 1024",),
                               launch={"grid": ["tokens"], "block": ["BLOCK"]},
                               origin="curated", session_id=session.id)
        child = TemplateVersion(id="v2", kernel="silu", source_text="// v2",
                                source_sha256="b" * 64, params={}, constraints=(), launch={},
                                origin="llm", parent_id="v1", diff_vs_parent="-v1\n+v2")
        store.add_template_version(base)
        store.add_template_version(child)
        assert [v.id for v in store.template_versions("silu")] == ["v1", "v2"]
        got = store.template_version("v2")
        assert got.parent_id == "v1" and got.diff_vs_parent == "-v1\n+v2"
        assert store.template_version("v1").constraints == ("BLOCK <= 1024",)
        with pytest.raises(StoreError):
            store.template_version("nope")
        with pytest.raises(StoreError):
            store.add_template_version(TemplateVersion(
                id="v3", kernel="silu", source_text="", source_sha256="", params={},
                constraints=(), launch={}, origin="made-up"))
        store.add_review(Review("v2", "proposed", "agent", "2026-01-01T00:00:00Z"))
        store.add_review(Review("v2", "approved", "alice", "2026-01-01T00:01:00Z", "ok",
                                "b" * 64))
        reviews = store.reviews("v2")
        assert [r.decision for r in reviews] == ["proposed", "approved"]
        assert reviews[1].approved_text_sha256 == "b" * 64
        with pytest.raises(StoreError):
            store.add_review(Review("v2", "maybe", "bob", "t"))

    def test_llm_calls_never_store_credentials(self, store: Store) -> None:
        secret = "sk-live-THIS-IS-A-SECRET-0123456789"
        request = {"model": "m", "headers": {"Authorization": f"Bearer {secret}",
                                             "X-Api-Key": secret, "Accept": "json"},
                   "api_key": secret, "extra": [["authorization", secret]],
                   "messages": [{"role": "user", "content": "hi"}]}
        call_id = store.record_llm_call("s1", request, "reply", TokenUsage(10, 5, 15))
        calls = store.llm_calls("s1")
        assert len(calls) == 1 and calls[0].id == call_id
        assert secret not in json.dumps(calls[0].request)
        assert calls[0].request["headers"]["Accept"] == "json"
        assert calls[0].request["messages"][0]["content"] == "hi"
        assert calls[0].usage == TokenUsage(10, 5, 15)

    def test_agent_iterations(self, store: Store) -> None:
        store.record_iteration(AgentIteration("s1", 1, "tune", best_us=10.0, speedup=1.5,
                                              detail={"k": 1}))
        store.record_iteration(AgentIteration("s1", 2, "test"))
        its = store.iterations("s1")
        assert [(i.iteration, i.state) for i in its] == [(1, "tune"), (2, "test")]
        assert its[0].detail == {"k": 1} and its[0].speedup == 1.5

    # -- claims ------------------------------------------------------------------------------

    def test_claim_grants_each_key_to_one_owner(self, store: Store) -> None:
        keys = ["a", "b", "c"]
        first = store.claim_trials(PROVENANCE, "decode", "bf16", keys, "host:1:x", 60.0,
                                   now=1000.0)
        assert first == keys
        assert store.claim_trials(PROVENANCE, "decode", "bf16", [*keys, "d"], "host:2:y",
                                  60.0, now=1001.0) == ["d"]
        # the owner itself may claim again (renewal); other shapes/dtypes are separate keys
        assert store.claim_trials(PROVENANCE, "decode", "bf16", ["a"], "host:1:x", 60.0,
                                  now=1002.0) == ["a"]
        assert store.claim_trials(PROVENANCE, "prefill", "bf16", ["a"], "host:2:y", 60.0,
                                  now=1002.0) == ["a"]

    def test_claim_lease_expires(self, store: Store) -> None:
        assert store.claim_trials(PROVENANCE, "decode", "bf16", ["a"], "host:1:x", 60.0,
                                  now=1000.0) == ["a"]
        assert store.claim_trials(PROVENANCE, "decode", "bf16", ["a"], "host:2:y", 60.0,
                                  now=1059.0) == []
        assert store.claim_trials(PROVENANCE, "decode", "bf16", ["a"], "host:2:y", 60.0,
                                  now=1061.0) == ["a"]

    def test_claim_of_a_dead_local_owner_is_granted(self, store: Store) -> None:
        import socket
        import subprocess
        import sys

        done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
        dead = f"{socket.gethostname()}:{done.stdout.strip()}:gone"
        assert store.claim_trials(PROVENANCE, "decode", "bf16", ["a"], dead, 3600.0) == ["a"]
        assert store.claim_trials(PROVENANCE, "decode", "bf16", ["a"], claim_owner(),
                                  3600.0) == ["a"]

    def test_stored_trials_are_never_claimed_and_recording_frees_the_claim(
            self, store: Store) -> None:
        result = sample_result()
        key = result.config.key()
        assert store.claim_trials(PROVENANCE, "decode", "bf16", [key], "host:1:x", 60.0,
                                  now=0.0) == [key]
        store.record_trial(result, PROVENANCE)
        assert store.claim_trials(PROVENANCE, "decode", "bf16", [key], "host:1:x", 60.0,
                                  now=1.0) == []
        assert store.claim_trials(PROVENANCE, "decode", "bf16", [key], "host:2:y", 60.0,
                                  now=1.0) == []

    def test_release_drops_only_the_owners_claims(self, store: Store) -> None:
        store.claim_trials(PROVENANCE, "decode", "bf16", ["a", "b"], "host:1:x", 60.0,
                           now=0.0)
        store.release_claims(PROVENANCE, "decode", "bf16", ["a", "b"], "host:2:y")
        assert store.claim_trials(PROVENANCE, "decode", "bf16", ["a"], "host:2:y", 60.0,
                                  now=1.0) == []
        store.release_claims(PROVENANCE, "decode", "bf16", ["a"], "host:1:x")
        assert store.claim_trials(PROVENANCE, "decode", "bf16", ["a", "b"], "host:2:y", 60.0,
                                  now=1.0) == ["a"]
