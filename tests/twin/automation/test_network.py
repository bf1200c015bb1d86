"""The automation server's own address (``/system/network-info``, the MQTT status's ``server_ip``):
one this machine answers on, as the vendor's handler picks it."""

from __future__ import annotations

import socket

from twin.automation.network import LOOPBACK, lan_ip, network_info
from twin.settings import Settings


def test_the_lan_address_is_one_this_machine_answers_on() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("0.0.0.0", 0))  # as the servers bind by default
        server.listen(1)
        port = server.getsockname()[1]
        address = lan_ip()
        with socket.create_connection((address, port), timeout=30):
            accepted, _ = server.accept()
            accepted.close()


def test_which_address_is_reported() -> None:
    assert network_info(Settings(host="0.0.0.0")).ip == lan_ip()
    assert network_info(Settings(host="::")).ip == lan_ip()
    assert network_info(Settings(host=LOOPBACK)).ip == LOOPBACK  # bound to loopback: not the LAN address
    assert network_info(Settings(host="0.0.0.0", public_host="twin.example")).ip == "twin.example"
    info = network_info(Settings(host="0.0.0.0", mqtt_port=11883))
    assert info.broker_url == f"mqtt://{lan_ip()}:11883"
