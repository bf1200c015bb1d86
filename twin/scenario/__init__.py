"""Scenario files: YAML parsed strictly into typed models, then into a :class:`WorldConfig`."""

from twin.scenario.model import Scenario, ScenarioError, load_scenario

__all__ = ["Scenario", "ScenarioError", "load_scenario"]
