"""Persistent store of sessions, template versions, reviews, trials, LLM calls, iterations."""

from workbench.store.base import (
    AgentIteration,
    LLMCall,
    Provenance,
    Review,
    Session,
    Store,
    StoredRemeasurement,
    StoredTrial,
    TemplateVersion,
    TokenUsage,
    scrub_secrets,
)
from workbench.store.sqlite import SQLiteStore

__all__ = ["AgentIteration", "LLMCall", "Provenance", "Review", "SQLiteStore", "Session",
           "Store", "StoredRemeasurement", "StoredTrial", "TemplateVersion", "TokenUsage",
           "scrub_secrets"]
