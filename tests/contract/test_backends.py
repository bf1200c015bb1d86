"""The hardware backend is read from the environment: what each variable sets, and what is left
unset (so that member's tests skip, naming the variable)."""

from __future__ import annotations

from tests.contract.backends import AUTOMATION_PASSWORD, NO_HARDWARE, REAL, hardware


def test_no_variables_no_hardware() -> None:
    assert hardware({}) is None
    assert hardware({"TWIN_REAL_GATEWAY": "", "TWIN_REAL_AUTOMATION": ""}) is None
    assert "TWIN_REAL_GATEWAY=" in NO_HARDWARE and "TWIN_REAL_AUTOMATION=" in NO_HARDWARE


def test_a_camera_alone() -> None:
    found = hardware({"TWIN_REAL_GATEWAY": "https://192.0.2.7/", "TWIN_REAL_GATEWAY_PASSWORD": "pw"})
    assert found is not None and found.name == REAL and found.hardware and found.server is None
    assert (found.camera.url, found.camera.username, found.camera.password) == (
        "https://192.0.2.7",
        "admin",
        "pw",
    )
    assert found.camera.ws("/api/v1/events/stream") == "wss://192.0.2.7/api/v1/events/stream"


def test_a_server_with_a_key_or_a_user() -> None:
    keyed = hardware(
        {"TWIN_REAL_AUTOMATION": "http://192.0.2.8:9375", "TWIN_REAL_AUTOMATION_API_KEY": "nmk_x"}
    )
    assert keyed is not None and keyed.camera is None
    assert (keyed.server.api_key, keyed.server.username, keyed.server.first_run) == ("nmk_x", None, False)
    user = hardware(
        {
            "TWIN_REAL_AUTOMATION": "http://192.0.2.8:9375",
            "TWIN_REAL_AUTOMATION_USERNAME": "ops",
            AUTOMATION_PASSWORD: "secret99",
        }
    )
    assert user is not None and (user.server.username, user.server.password) == ("ops", "secret99")
    assert user.server.ws("/api/events/ws") == "ws://192.0.2.8:9375/api/events/ws"
