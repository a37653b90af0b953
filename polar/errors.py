"""Errors every part of Polar shares. Each carries a message a user can act on."""

from __future__ import annotations


class PolarError(Exception):
    """Base class: the CLI prints `ErrorType: message` for these, never a traceback."""

    exit_code = 1


class ConfigError(PolarError):
    """A config file or value is invalid. The message names the file and the field path."""

    exit_code = 2


class HarnessError(PolarError):
    """A harness could not be created, or its game process failed."""


class ProtocolError(PolarError):
    """A frame on the wire was malformed, oversized or of an unexpected type."""


class PlannerError(PolarError):
    """The planner could not produce a valid decision (unparseable reply, unknown task...)."""


class NoSkillsError(PlannerError):
    """The planner decides over skills and none that it needs is on offer for this harness
    (an empty or incompatible library): nothing to parse, nothing to plan with."""


class LLMError(PolarError):
    """A model could not be reached or would not answer (a 429 that persists, a refused
    connection, a timeout). Not a PlannerError: no reply was there to parse. Its exit code
    differs from a task that was not solved."""

    exit_code = 3


class BudgetExceeded(PolarError):
    """A per-episode or per-run budget (LLM calls, tokens, dollars, env steps) ran out."""
