"""The store's records and its protocol: what every backend keeps and answers.

A trial is keyed by its full provenance (template source hash, config, shape, dtype,
compiler and flags, arch, device, driver): the same key is never measured twice, and a
search resumed from the store skips every key already present.
"""

from __future__ import annotations

import os
import re
import socket
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from workbench.core.picks import ConfirmationMeasurement, PickRecord
from workbench.core.records import TrialResult
from workbench.core.secrets import SCRUBBED, scrub

Origin = Literal["curated", "llm", "offline"]
Decision = Literal["proposed", "approved", "rejected"]
ORIGINS: tuple[str, ...] = ("curated", "llm", "offline")
DECISIONS: tuple[str, ...] = ("proposed", "approved", "rejected")


@dataclass(frozen=True)
class Provenance:
    """Everything besides (config, shape, dtype) that decides a measurement's identity."""

    template_sha256: str
    compiler: str = ""  # e.g. "nvcc 13.0"
    flags: str = ""  # compiler flags, space-joined, in order
    arch: str = ""  # e.g. "sm_90a"
    device: str = ""  # device name, e.g. "NVIDIA H100 80GB HBM3"
    driver: str = ""  # e.g. "580.159.04"



@runtime_checkable
class ProvidesProvenance(Protocol):
    """A runner that names its own provenance (e.g. a test runner)."""

    def provenance(self, template: Any) -> Provenance: ...


def provenance_for(runner: Any, template: Any) -> Provenance:
    """The provenance of ``template``'s trials measured by ``runner``.

    A :class:`ProvidesProvenance` runner names it; otherwise it is read from the runner's
    compiler (version, flags), device (arch), description and facts (driver; a replay gives
    its recording's): :class:`~workbench.engine.capabilities.Facts`.
    """
    from workbench.engine.capabilities import Facts

    if isinstance(runner, ProvidesProvenance):
        return runner.provenance(template)
    compiler = runner.compiler if isinstance(runner, Facts) else None
    facts: Mapping[str, Any] = runner.facts if isinstance(runner, Facts) else {}
    device = runner.device
    return Provenance(template_sha256=template.source_sha256,
                      compiler=str(compiler.version or "") if compiler is not None else "",
                      flags=" ".join(compiler.flags) if compiler is not None else "",
                      arch=str(device.arch), device=str(runner.description),
                      driver=str(facts.get("driver") or ""))

@dataclass(frozen=True)
class Session:
    """One user/agent session against one kernel."""

    id: str
    created: str  # ISO-8601 UTC
    kernel: str
    notes: str = ""


@dataclass(frozen=True)
class TemplateVersion:
    """One version of a template; ``parent_id`` links the edit history."""

    id: str
    kernel: str
    source_text: str
    source_sha256: str
    params: Mapping[str, Any]  # name -> Parameter.to_dict()
    constraints: tuple[str, ...]
    launch: Mapping[str, Any]  # {"grid": [...], "block": [...], "smem_bytes": "..."}
    origin: str  # one of ORIGINS
    parent_id: str | None = None
    diff_vs_parent: str = ""
    session_id: str | None = None
    created: str = ""


@dataclass(frozen=True)
class Review:
    """A human decision on a template version."""

    template_version_id: str
    decision: str  # one of DECISIONS
    reviewer: str
    time: str  # ISO-8601 UTC
    note: str = ""
    approved_text_sha256: str = ""


@dataclass(frozen=True)
class StoredTrial:
    """A trial as stored: the result, its provenance and when/where it was written."""

    result: TrialResult
    provenance: Provenance
    session_id: str | None
    created: str  # ISO-8601 UTC


@dataclass(frozen=True)
class StoredRemeasurement:
    """A stored config (or the baseline) measured again after its search (a confirmation
    round): unlike trials, the same key may be measured any number of times, each kept in
    write order. Those of a confirmation that decided a pick carry its ``pick_id``."""

    result: TrialResult
    provenance: Provenance
    round_index: int  # 1: the round that chose among the finalists, 2: the reported one
    session_id: str | None
    created: str  # ISO-8601 UTC
    pick_id: str = ""  # the stored pick this confirmation decided ("" : none, or a v2 row)
    condition: str = ""  # the cache condition ("" : the search's own)
    is_baseline: bool = False  # the baseline kernel measured beside the finalists

    @property
    def measurement(self) -> ConfirmationMeasurement:
        """The typed confirmation record (round, condition, baseline or not, result)."""
        return ConfirmationMeasurement(self.round_index, self.condition, self.is_baseline,
                                       self.result)


@dataclass(frozen=True)
class TokenUsage:
    """Token counts reported by the LLM endpoint."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class LLMCall:
    """One request/reply pair; the request is stored scrubbed of any credential."""

    session_id: str
    request: Mapping[str, Any]
    reply_text: str
    usage: TokenUsage
    created: str = ""
    id: int | None = None


@dataclass(frozen=True)
class AgentIteration:
    """One agent iteration: the state it reached and the best it had."""

    session_id: str
    iteration: int
    state: str
    best_us: float | None = None
    speedup: float | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    created: str = ""


@dataclass(frozen=True)
class ProblemTally:
    """One session's trials of one problem (shape, dtype), kept beside the trials and
    updated in the same transaction as each one: what the sidebar reads instead of every
    trial (``ok`` counts ok trials with a time; ``best_us`` is the fastest of them, measured
    on ``best_device``)."""

    session_id: str
    shape: str
    dtype: str
    trials: int
    ok: int
    best_us: float | None
    best_device: str
    first_created: str  # ISO-8601 UTC of the problem's first trial in the session


@runtime_checkable
class Store(Protocol):
    """What every store backend provides (see workbench.testing.store_contract)."""

    def create_session(self, kernel: str, notes: str = "") -> Session: ...
    def sessions(self, kernel: str | None = None) -> list[Session]: ...

    def add_template_version(self, version: TemplateVersion) -> None: ...
    def template_version(self, version_id: str) -> TemplateVersion: ...
    def template_versions(self, kernel: str) -> list[TemplateVersion]: ...

    def add_review(self, review: Review) -> None: ...
    def reviews(self, template_version_id: str) -> list[Review]: ...

    def record_trial(self, result: TrialResult, provenance: Provenance,
                     session_id: str | None = None) -> bool: ...
    def has_trial(self, provenance: Provenance, config_key: str, shape: str,
                  dtype: str) -> bool: ...
    def trials(self, provenance: Provenance | None = None, shape: str | None = None,
               dtype: str | None = None) -> list[StoredTrial]: ...
    def count_trials(self, provenance: Provenance | None = None) -> int: ...
    def problem_tallies(self, session_ids: Sequence[str]) -> list[ProblemTally]: ...

    def record_remeasurement(self, result: TrialResult, provenance: Provenance,
                             round_index: int, session_id: str | None = None) -> None: ...
    def remeasurements(self, provenance: Provenance | None = None,
                       shape: str | None = None) -> list[StoredRemeasurement]: ...

    def record_pick(self, pick: PickRecord, provenance: Provenance,
                    measurements: Sequence[ConfirmationMeasurement] = ()) -> PickRecord: ...
    def picks(self, *, provenance: Provenance | None = None, shape: str | None = None,
              dtype: str | None = None, kernel: str | None = None,
              session_ids: Sequence[str] | None = None,
              template_sha256: str | None = None) -> list[PickRecord]: ...
    def pick(self, provenance: Provenance, shape: str, dtype: str) -> PickRecord | None: ...
    def confirmations(self, pick_id: str) -> list[StoredRemeasurement]: ...

    def record_llm_call(self, session_id: str, request: Mapping[str, Any], reply_text: str,
                        usage: TokenUsage) -> int: ...
    def llm_calls(self, session_id: str) -> list[LLMCall]: ...

    def record_iteration(self, iteration: AgentIteration) -> None: ...
    def iterations(self, session_id: str) -> list[AgentIteration]: ...

    def claim_trials(self, provenance: Provenance, shape: str, dtype: str,
                     config_keys: Sequence[str], owner: str, lease_s: float,
                     now: float | None = None) -> list[str]: ...
    def release_claims(self, provenance: Provenance, shape: str, dtype: str,
                       config_keys: Sequence[str], owner: str) -> None: ...

    def close(self) -> None: ...


# -- claims: several processes tuning one template/shape/dtype in one store share the work --
#
# Before measuring, a search claims the configs it is about to measure. claim_trials, in one
# transaction, grants ``owner`` each key that is (a) not stored as a trial and (b) not held by
# a live claim of another owner, and returns the granted keys in the order asked. A claim is
# live until ``expires`` (``now + lease_s``, Unix seconds; ``now`` defaults to the clock) and
# while its owner process lives: an owner named by :func:`claim_owner` on this host whose pid
# is gone has crashed, and its claims are granted at once. record_trial removes the key's
# claim in the same transaction; release_claims drops an owner's claims (a stopped batch).
# Every backend passes workbench.testing.store_contract.StoreContract's claim tests.

DEFAULT_LEASE_S = 900.0


def claim_owner() -> str:
    """A claim owner for this process: ``host:pid:nonce``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_is_dead(owner: str) -> bool:
    """True when ``owner`` names a process of this host that no longer exists."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


# Field names whose values are credentials: never stored, whatever their nesting.
_SECRET_NAME = re.compile(r"(authori[sz]ation|api[-_]?key|x-api-key|bearer|secret|password|"
                          r"access[-_]?token|auth[-_]?token|^token$|cookie)", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """True for a header/field name that may carry a credential."""
    return bool(_SECRET_NAME.search(name))


def scrub_secrets(value: Any) -> Any:
    """A deep copy of ``value`` with every credential-like field replaced by ``[scrubbed]``.

    Also scrubs, in every string, each configured key whatever its form and anything that
    looks like a bearer token or an ``sk-`` key (:func:`workbench.core.secrets.scrub`), in
    case a key travelled inside a value (an endpoint's echo) rather than under a telling name.
    """
    if isinstance(value, Mapping):
        return {str(k): (SCRUBBED if is_secret_name(str(k)) else scrub_secrets(v))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # header lists given as (name, value) pairs
        if (len(value) == 2 and isinstance(value[0], str)
                and re.fullmatch(r"[A-Za-z0-9_\-]+", value[0]) and is_secret_name(value[0])):
            return [value[0], SCRUBBED]
        return [scrub_secrets(v) for v in value]
    if isinstance(value, str):
        return scrub(value)
    return value

