"""Structured replies the LLM must give: a plan (the template proposal's record lives in
:mod:`workbench.core.proposal`, shared with the offline templater).

The pydantic models define the JSON schema sent to the endpoint (structured output) and
validate what comes back; nothing here ever evaluates model-written text as Python.
"""

from __future__ import annotations

import copy
import enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from workbench.core.proposal import ParamValue


class NextAction(enum.StrEnum):
    """What the agent should do next."""

    REFINE_TEMPLATE = "refine_template"
    NEW_TEMPLATE = "new_template"
    TUNE_MORE = "tune_more"
    STOP = "stop"


class Plan(BaseModel):
    """The LLM's reading of the measurements and its next step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    diagnosis: str
    hypotheses: list[str] = Field(default_factory=list)
    next_action: NextAction
    configs_to_enqueue: list[dict[str, ParamValue]] = Field(
        default_factory=list, description="full configs (parameter name -> value) to measure next")


def response_format_for(model: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` argument for JSON-schema structured output.

    ``strict`` is off: plan configs are free-form mappings, which strict mode cannot express;
    every reply is validated by pydantic anyway.
    """
    schema = copy.deepcopy(model.model_json_schema())
    return {"type": "json_schema",
            "json_schema": {"name": model.__name__, "schema": schema, "strict": False}}
