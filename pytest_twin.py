"""The pytest plugin (installed with the package: entry point ``pytest11``, name ``twin``; disable it
with ``-p no:twin``). It is a top-level module that imports nothing of the project until a test
uses the fixture: pytest loads plugins before any conftest, and importing the ``twin`` package then
would bind it to wherever the installed package points (a checkout other than the one under test).
It is built on :mod:`twin.testing`.

- The ``twin`` fixture: a whole twin served on free loopback ports for one test (started on first
  use, stopped after the test), the clock in step mode unless told otherwise; its addresses, the
  world clock, scenario actions and the request journal (:class:`twin.testing.LiveTwin`).
- ``@pytest.mark.twin(scenario=..., seed=..., step=..., speed=..., cameras=..., sensors=..., ...)``
  picks its world (any :class:`~twin.settings.Settings` field; the closest marker wins), and so does
  indirect parametrisation (``@pytest.mark.parametrize("twin", [{"seed": 1}], indirect=True)``).
- ``twin.run_scenario(file, client=fn)`` runs a scenario file with the test's own code as the
  client under test and returns the runner's result; ``twin.assert_passed(result)`` (or
  :func:`assert_scenario_passed`) fails the test with the run's verdicts when it did not pass.

A relative scenario path is looked up beside the test file first, then in the working directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MARKER = (
    "twin(scenario=None, seed=None, step=None, speed=None, cameras=None, sensors=None, **settings): "
    "the world of the test's `twin` fixture (any twin.settings.Settings field)"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


def _resolve(path: str | Path, base: Path) -> Path:
    path = Path(path)
    if not path.is_absolute() and (base / path).exists():
        return base / path
    return path


def assert_scenario_passed(result: Any) -> Any:
    """Fail the test with the run's verdicts (and the client's last output) unless it passed;
    returns ``result``."""
    from twin.testing import scenario_failure

    text = scenario_failure(result)
    if text is not None:
        pytest.fail(text, pytrace=False)
    return result


def _options(request: pytest.FixtureRequest) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for mark in reversed(list(request.node.iter_markers("twin"))):  # the closest one last, so it wins
        if mark.args:
            pytest.fail("@pytest.mark.twin takes keyword arguments only (scenario=..., seed=...)")
        options.update(mark.kwargs)
    param = getattr(request, "param", None)
    if param is not None:
        if not isinstance(param, dict):
            pytest.fail(f"the twin fixture is parametrised with dicts of settings, not {param!r}")
        options.update(param)
    return options


@pytest.fixture
def twin(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A twin on free loopback ports for this test: ``twin.automation_url``, ``gateway_url(s)``,
    ``control_url``, ``mqtt_url``, ``env``; ``advance``/``sleep``/``now`` on the world clock;
    ``action``/``undo``; ``journal``; ``call`` (run code on the world's loop);
    ``run_scenario``/``assert_passed``."""
    from twin.testing import LiveTwin, loopback_settings, run_scenario

    base = request.path.parent

    class Twin(LiveTwin):
        def run_scenario(self, path: str | Path, client: Any = None, **options: Any) -> Any:
            return run_scenario(_resolve(path, base), client, **options)

        assert_passed = staticmethod(assert_scenario_passed)

    options = _options(request)
    if options.get("scenario") is not None:
        options["scenario"] = _resolve(options["scenario"], base)
    try:
        settings = loopback_settings(**options)
    except TypeError as err:
        pytest.fail(f"@pytest.mark.twin: {err}", pytrace=False)
    live = Twin(settings)
    try:
        yield live
    finally:
        live.stop()
