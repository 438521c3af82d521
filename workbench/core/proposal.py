"""A template proposal: what the LLM and the offline templater both hand to review.

The pydantic models define the JSON schema sent to an endpoint (structured output) and
validate what comes back; the offline templater builds the same record. Converting a
proposal to a core :class:`KernelTemplate` goes through the safe parsers
(``parameter_from_dict``, ``parse_constraint``, ``parse_expr``); nothing here ever evaluates
model-written text as Python.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workbench.core.params import Parameter, parameter_from_dict
from workbench.core.template import KernelTemplate

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

ParamValue = int | bool | str


class ParameterSpec(BaseModel):
    """One tunable parameter, in the dict form core parameters use."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="C identifier, UPPER_CASE; used as a macro in the source")
    kind: Literal["int", "pow2", "choice"]
    min: int | None = Field(default=None, description="int/pow2: smallest value")
    max: int | None = Field(default=None, description="int/pow2: largest value")
    step: int | None = Field(default=None, description="int: step between values")
    values: list[ParamValue] | None = Field(default=None, description="choice: the values")
    default: ParamValue = Field(description="value that reproduces the baseline's behaviour")
    rationale: str = Field(default="", description="why this parameter may matter")

    @field_validator("name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not _IDENTIFIER.match(value):
            raise ValueError(f"parameter name {value!r} is not a C identifier")
        return value

    @model_validator(mode="after")
    def _kind_fields(self) -> ParameterSpec:
        if self.kind in ("int", "pow2") and (self.min is None or self.max is None):
            raise ValueError(f"parameter {self.name}: kind {self.kind!r} needs min and max")
        if self.kind == "choice" and not self.values:
            raise ValueError(f"parameter {self.name}: kind 'choice' needs a non-empty values list")
        return self

    def to_core_dict(self) -> dict[str, Any]:
        """The ``parameter_from_dict`` form (``rationale`` becomes ``description``)."""
        out: dict[str, Any] = {"kind": self.kind, "default": self.default,
                               "description": self.rationale}
        if self.kind == "choice":
            out["values"] = list(self.values or [])
        else:
            out["min"] = self.min
            out["max"] = self.max
            if self.kind == "int" and self.step is not None:
                out["step"] = self.step
        return out

    @classmethod
    def from_parameter(cls, param: Parameter) -> ParameterSpec:
        data = dict(param.to_dict())
        kind = data["kind"]
        return cls(name=param.name, kind=kind, min=data.get("min"), max=data.get("max"),
                   step=data.get("step") if kind == "int" else None,
                   values=list(data["values"]) if kind == "choice" else None,
                   default=param.default, rationale=param.description)


class LaunchSpec(BaseModel):
    """Launch rules as expression strings (the safe expression language)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grid: list[str] = Field(min_length=1, max_length=3)
    block: list[str] = Field(min_length=1, max_length=3)
    smem_bytes: str = "0"


class TemplateProposal(BaseModel):
    """A parameterized kernel template proposed by the LLM (or the offline templater)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="full CUDA source of the template; parameters are macros")
    parameters: list[ParameterSpec]
    constraints: list[str] = Field(default_factory=list,
                                   description="boolean expressions over params and shape names")
    launch: LaunchSpec
    summary_of_changes: str = ""

    def to_template(self, *, name: str, entry: str, source_name: str = "template.cu",
                    known_names: Collection[str] | None = None) -> KernelTemplate:
        """Build a core template through the safe parsers.

        Raises ParameterError / ExpressionError / TemplateError naming what is wrong.
        """
        params = [parameter_from_dict(p.name, p.to_core_dict()) for p in self.parameters]
        return KernelTemplate.build(
            name=name, source=self.source, entry=entry, params=params,
            constraints=list(self.constraints), grid=list(self.launch.grid),
            block=list(self.launch.block), smem_bytes=self.launch.smem_bytes,
            source_name=source_name,
            known_names=None if known_names is None else list(known_names))

    @classmethod
    def from_template(cls, template: KernelTemplate, summary_of_changes: str = "") -> TemplateProposal:
        """The proposal form of an existing template (for prompts and diffs)."""
        rules = template.launch.to_dict()
        return cls(source=template.source,
                   parameters=[ParameterSpec.from_parameter(p) for p in template.params],
                   constraints=[c.text for c in template.constraints],
                   launch=LaunchSpec(grid=rules["grid"], block=rules["block"],
                                     smem_bytes=rules["smem_bytes"]),
                   summary_of_changes=summary_of_changes)
