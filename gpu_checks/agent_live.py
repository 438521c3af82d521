"""The agent on the GPU machine, for real: measurements by LocalRunner (isolated worker).

1. With the loopback transcript server standing in for the LLM (the recorded
   agent_two_iterations transcript): the proposed templates are compiled, validated,
   verified on the GPU, tuned and re-tested.
2. With no endpoint: the offline templater end to end.

The SQLite stores are written to --out so the results can be committed as data.

    python gpu_checks/agent_live.py --out $OUT
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.agent import run_agent, speedup_per_iteration  # noqa: E402
from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402
from workbench.store.sqlite import SQLiteStore  # noqa: E402


def summarize(label: str, store: SQLiteStore, outcome: object) -> dict:
    sid = outcome.session_id  # type: ignore[attr-defined]
    points = [p._asdict() for p in speedup_per_iteration(store, sid)]
    versions = store.template_versions("silu_and_mul")
    trials = [t for t in store.trials() if t.session_id == sid]
    doc = {"run": label, "state": outcome.state, "reason": outcome.reason,  # type: ignore[attr-defined]
           "llm_calls": outcome.llm_calls, "speedup_per_iteration": points,  # type: ignore[attr-defined]
           "template_versions": [{"id": v.id, "origin": v.origin, "parent": v.parent_id}
                                 for v in versions],
           "trials": len(trials),
           "statuses": {s: sum(t.result.status.value == s for t in trials)
                        for s in {t.result.status.value for t in trials}}}
    print(json.dumps(doc, indent=1), flush=True)
    return doc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")

    # A runner instance, not a factory: the agent derives one per template version and,
    # being live, checks each proposal's correctness on the GPU (auto-approve needs that).
    factory = LocalRunner(folder)

    docs = []
    from workbench.llm.client import LLMClient, LLMSettings
    from workbench.testing.openai_server import OpenAITranscriptServer, Transcript

    server = OpenAITranscriptServer(Transcript.load(
        ROOT / "tests" / "transcripts" / "agent_two_iterations.json")).start()
    client = LLMClient(LLMSettings(model="transcript", api_key="sk-transcript-not-a-key",
                                   base_url=server.base_url, timeout_s=30, max_attempts=2))
    store = SQLiteStore(args.out / "agent_llm_transcript.sqlite")
    try:
        outcome = run_agent(folder, runner=factory, store=store, client=client, iterations=2,
                            llm_calls=6, auto_approve=True, strategy="guided", budget=48,
                            shape="decode", dtype="bf16")
        docs.append(summarize("transcript LLM", store, outcome))
    finally:
        client.close()
        server.stop()

    store2 = SQLiteStore(args.out / "agent_offline.sqlite")
    outcome2 = run_agent(folder, runner=factory, store=store2, client=None, iterations=2,
                         auto_approve=True, strategy="guided", budget=48, shape="decode",
                         dtype="bf16")
    docs.append(summarize("offline templater", store2, outcome2))
    factory.close()
    (args.out / "agent_live.json").write_text(json.dumps(docs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
