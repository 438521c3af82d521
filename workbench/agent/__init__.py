"""The agent: plan -> generate -> review -> tune -> test, as an explicit state machine.

    from workbench.agent import run_agent, speedup_per_iteration
    outcome = run_agent(folder, runner=runner, store=store, client=client, iterations=3,
                        auto_approve=False, approve=ask_the_human)
    speedup_per_iteration(store, outcome.session_id)
"""

from workbench.agent.machine import AgentMachine
from workbench.agent.queries import SpeedupPoint, speedup_per_iteration
from workbench.agent.records import (
    AgentConfig,
    AgentError,
    AgentOutcome,
    AgentState,
    ApproveCallback,
    ReviewRequest,
)
from workbench.agent.run import Proposed, parameter_table, propose_only, run_agent

__all__ = ["AgentConfig", "AgentError", "AgentMachine", "AgentOutcome", "AgentState",
           "ApproveCallback", "Proposed", "ReviewRequest", "SpeedupPoint", "parameter_table",
           "propose_only", "run_agent", "speedup_per_iteration"]
