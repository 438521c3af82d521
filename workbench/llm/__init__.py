"""The LLM edge: openai client, prompts, structured replies, the validation gate and review
records (the offline templater is :mod:`workbench.templater`; the proposal record is
:mod:`workbench.core.proposal`).

    client = LLMClient(LLMSettings.from_env(), recorder=store.record_llm_exchange)
    outcome = propose_template(folder, client, context=ctx, compiler=compiler)
    plan = plan_next(folder, client, template, context=ctx)

``openai`` is imported only when an :class:`LLMClient` is made; ``pydantic`` is required.
"""

from workbench.llm.client import ChatClient, ChatReply, LLMClient, LLMSettings, Usage, UsageCounter
from workbench.llm.errors import (
    LLMBudgetError,
    LLMConfigError,
    LLMEndpointError,
    LLMInvalidJSONError,
    LLMRefusalError,
    LLMReplyError,
    LLMSchemaError,
    LLMTimeoutError,
    LLMTruncatedError,
)
from workbench.llm.parsing import parse_json_object
from workbench.llm.planning import PlanOutcome, RejectedConfig, plan_next, vet_configs
from workbench.llm.prompts import (
    PROMPT_VERSIONS,
    Iteration,
    KernelBrief,
    Measurement,
    PromptContext,
    plan_messages,
    render_messages,
    repair_messages,
    template_messages,
)
from workbench.llm.schemas import NextAction, Plan
from workbench.llm.validation import (
    UNVERIFIED_NOTE,
    ProposalAttempt,
    ProposalOutcome,
    ValidationProblem,
    ValidationReport,
    gpu_correctness,
    propose_template,
    validate_proposal,
)

__all__ = [
    "PROMPT_VERSIONS",
    "UNVERIFIED_NOTE",
    "ChatClient",
    "ChatReply",
    "Iteration",
    "KernelBrief",
    "LLMBudgetError",
    "LLMClient",
    "LLMConfigError",
    "LLMEndpointError",
    "LLMInvalidJSONError",
    "LLMRefusalError",
    "LLMReplyError",
    "LLMSchemaError",
    "LLMSettings",
    "LLMTimeoutError",
    "LLMTruncatedError",
    "Measurement",
    "NextAction",
    "Plan",
    "PlanOutcome",
    "PromptContext",
    "ProposalAttempt",
    "ProposalOutcome",
    "RejectedConfig",
    "Usage",
    "UsageCounter",
    "ValidationProblem",
    "ValidationReport",
    "gpu_correctness",
    "parse_json_object",
    "plan_messages",
    "plan_next",
    "propose_template",
    "render_messages",
    "repair_messages",
    "template_messages",
    "validate_proposal",
    "vet_configs",
]
