"""The local host's figures behind a camera's monitor routes: read off a /proc of the test's own
(exact figures, the device's formulas), off the real /proc (plausible ones), and a /proc that lacks a
file (the device's error shape)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from hardware.adapters.host_stats import HostFigures
from hardware.ports.gateway_monitor import GatewayMonitor, MachineFigures
from tests.api.handler_shapes import MONITOR, mismatches
from tests.conftest import SCENARIOS, gateway_token
from twin.serve import Twin, build
from twin.settings import RealMemberError, Settings, parse

STAT = """cpu  {u} 0 {s} {i} {w} 0 0 0 0 0
cpu0 {u0} 0 0 {i0} 0 0 0 0 0 0
cpu1 {u1} 0 {s} {i1} {w} 0 0 0 0 0
intr 1 2 3
ctxt 99
"""
MEMINFO = """MemTotal:        8000000 kB
MemFree:         2000000 kB
MemAvailable:    5000000 kB
Buffers:          100000 kB
Cached:          1500000 kB
SwapCached:            0 kB
SReclaimable:     400000 kB
SwapTotal:       1000000 kB
SwapFree:         750000 kB
HugePages_Total:       0
"""
CPUINFO = """processor\t: 0
model name\t: Cortex-A76
cpu MHz\t\t: 2256.000

processor\t: 1
model name\t: Cortex-A76
cpu MHz\t\t: 1800.500
"""
NET_DEV = """Inter-|   Receive                          |  Transmit
 face |bytes packets errs drop fifo frame compr multicast|bytes packets errs drop fifo colls carrier compr
    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0
  eth0: 5000000 4000 2 0 0 0 0 0 700000 3000 0 0 0 1 0 0
"""


def stat(u0: int, u1: int, s: int, i0: int, i1: int, w: int = 0) -> str:
    """Two cores' ticks: core 0 user/idle, core 1 user/system/idle/iowait; the total line sums them."""
    return STAT.format(u=u0 + u1, s=s, i=i0 + i1, w=w, u0=u0, u1=u1, i0=i0, i1=i1)


@pytest.fixture
def proc(tmp_path: Path) -> Path:
    root = tmp_path / "proc"
    (root / "net").mkdir(parents=True)
    (root / "sys" / "kernel").mkdir(parents=True)
    (root / "stat").write_text(stat(u0=100, u1=300, s=100, i0=900, i1=500))
    (root / "meminfo").write_text(MEMINFO)
    (root / "cpuinfo").write_text(CPUINFO)
    (root / "uptime").write_text("12345.67 20000.00\n")
    (root / "net" / "dev").write_text(NET_DEV)
    (root / "sys" / "kernel" / "hostname").write_text("edge-box\n")
    (root / "sys" / "kernel" / "osrelease").write_text("6.1.84-aipc\n")
    (tmp_path / "os-release").write_text('PRETTY_NAME="Debian GNU/Linux 12"\nID=debian\nVERSION_ID="12"\n')
    (tmp_path / "data disk").mkdir()
    (tmp_path / "sdz1").touch()  # the block device of that mount, still there
    data = str(tmp_path / "data disk").replace(" ", "\\040")  # as the kernel writes a space
    (root / "mounts").write_text(
        f"proc /proc proc rw 0 0\noverlay / overlay rw 0 0\ntmpfs /run tmpfs rw 0 0\n"
        f"{tmp_path / 'sdz1'} {data} ext4 rw 0 0\n{tmp_path / 'gone1'} /mnt/card vfat rw 0 0\n"
    )
    return root


@pytest.fixture
def figures(proc: Path) -> HostFigures:
    return HostFigures(proc, os_release=proc.parent / "os-release")


def test_cpu_is_the_busy_share_between_two_reads(proc: Path, figures: HostFigures) -> None:
    # first read: since boot. all: busy 400 user + 100 system of 1900; core 0: 100 of 1000; core 1: 400 of 900
    assert figures.cpu_usage() == (26.32, [10.0, 44.44])
    # 400 ticks later (at least the window): core 0 all busy (+200 user), core 1 +50 user +50 idle +100 iowait
    (proc / "stat").write_text(stat(u0=300, u1=350, s=100, i0=900, i1=550, w=100))
    assert figures.cpu_usage() == (62.5, [100.0, 25.0])
    # a read sooner than the window measures from the baseline before: +60 ticks of core 0 idle
    (proc / "stat").write_text(stat(u0=300, u1=350, s=100, i0=960, i1=550, w=100))
    assert figures.cpu_usage() == (54.35, [76.92, 25.0])


def test_the_disk_is_a_real_partition_else_the_root(proc: Path, figures: HostFigures) -> None:
    assert figures.mountpoints() == [str(proc.parent / "data disk")]
    (proc / "mounts").write_text("overlay / overlay rw 0 0\nproc /proc proc rw 0 0\n")  # a container
    assert figures.mountpoints() == ["/"] and figures.disk().mountpoint == "/"


def test_a_read_with_no_time_passed_is_not_a_division_by_zero(figures: HostFigures) -> None:
    first = figures.cpu_usage()
    assert figures.cpu_usage() == first  # the same ticks: still measured since boot


async def test_monitor_routes_answer_the_hosts_figures(
    proc: Path, figures: HostFigures, twin: Twin, gateway: httpx.AsyncClient
) -> None:
    twin.gateways["cam-01"].host_figures = figures
    auth = {"Authorization": await gateway_token(gateway)}
    summary = await _get(gateway, auth, "summary")
    memory = await _get(gateway, auth, "memory")
    cpu = await _get(gateway, auth, "cpu")
    network = await _get(gateway, auth, "network")
    snapshot = await _get(gateway, auth, "snapshot")
    for route, value in (("summary", summary), ("memory", memory), ("cpu", cpu), ("network", network)):
        assert mismatches(value, MONITOR[f"GET /api/v1/monitor/{route}"]) == [], route
    kib = 1024
    cached = (1_500_000 + 400_000) * kib  # Cached + SReclaimable, as gopsutil counts it
    used = 8_000_000 * kib - 2_000_000 * kib - 100_000 * kib - cached
    assert memory["virtual"] == {
        "total": 8_000_000 * kib,
        "used": used,
        "available": 5_000_000 * kib,
        "free": 2_000_000 * kib,
        "usage_percent": round(100 * used / (8_000_000 * kib), 2),
        "buffers": 100_000 * kib,
        "cached": cached,
    }
    assert memory["swap"] == {"total": 1_000_000 * kib, "used": 250_000 * kib, "free": 750_000 * kib,
                              "usage_percent": 25.0}  # fmt: skip
    assert cpu["core_count"] == 2
    assert [c["model"] for c in cpu["cores"]] == ["Cortex-A76"] * 2 and cpu["cores"][1]["mhz"] == 1800.5
    assert summary["host"] == {
        "hostname": "edge-box",
        "os": "linux",
        "platform": "debian",
        "platform_version": "12",
        "kernel_version": "6.1.84-aipc",
        "kernel_arch": os.uname().machine,
        "uptime_seconds": 12345,
    }
    st = os.statvfs(proc.parent / "data disk")
    assert summary["disk"]["mountpoint"] == str(proc.parent / "data disk")  # the one real, present mount
    assert summary["disk"]["total"] == st.f_blocks * st.f_frsize
    assert summary["memory"]["swap_used"] == 250_000 * kib and summary["cpu"]["cores"] == 2
    assert summary["network"] == snapshot["network"] == {"bytes_sent": 701_000, "bytes_recv": 5_001_000}
    eth0 = {"name": "eth0", "bytes_sent": 700_000, "bytes_recv": 5_000_000, "packets_sent": 3000}
    assert network["interfaces"][1] == {**eth0, "packets_recv": 4000, "errin": 2, "errout": 0}
    assert snapshot["memory"] == memory["virtual"]["usage_percent"]
    assert set(snapshot["temperatures"]) == {"cpu", "npu", "board"}  # the simulated camera's sensors


async def test_processes_and_signals_stay_the_simulated_cameras(
    figures: HostFigures, twin: Twin, gateway: httpx.AsyncClient
) -> None:
    twin.gateways["cam-01"].host_figures = figures
    auth = {"Authorization": await gateway_token(gateway)}
    listed = (await gateway.get("/api/v1/processes", headers=auth)).json()["data"]
    assert "platform-api" in {p["name"] for p in listed["processes"]}
    own = await gateway.post(f"/api/v1/processes/{os.getpid()}/kill", headers=auth)
    assert own.status_code == 404 and own.json()["code"] == 10000  # never a process of this host


async def test_a_proc_without_its_files_answers_in_the_devices_error_shape(
    proc: Path, figures: HostFigures, twin: Twin, gateway: httpx.AsyncClient
) -> None:
    twin.gateways["cam-01"].host_figures = figures
    (proc / "stat").unlink()
    (proc / "meminfo").write_text("garbage without numbers\n")
    auth = {"Authorization": await gateway_token(gateway)}
    cpu = await gateway.get("/api/v1/monitor/cpu", headers=auth)
    memory = await gateway.get("/api/v1/monitor/memory", headers=auth)
    assert cpu.status_code == 503
    assert cpu.json() == {
        "code": 3000,
        "message": "Service unavailable",
        "error": {"detail": "host figures: cannot read stat: No such file or directory"},
    }
    assert memory.status_code == 200 and memory.json()["data"]["virtual"]["total"] == 0


def test_the_real_proc_gives_plausible_figures() -> None:
    host = HostFigures()
    total, cores = host.cpu_usage()
    assert len(cores) == os.cpu_count() and 0.0 <= total <= 100.0
    assert all(0.0 <= c <= 100.0 for c in cores)
    mem = host.meminfo()
    assert 64 * 1024**2 < mem["MemTotal"] < 2**50 and 0 < mem["MemAvailable"] <= mem["MemTotal"]
    assert host.uptime() > 0
    disk = host.disk()
    assert disk is not None and disk.mountpoint in host.mountpoints() and 0 < disk.used < disk.total
    assert any(row["name"] == "lo" for row in host.interfaces())
    assert (
        host.host()["hostname"] == os.uname().nodename and host.host()["kernel_version"] == os.uname().release
    )


async def test_host_stats_is_chosen_per_camera_on_the_command_line() -> None:
    _, settings = parse(["run", "--scenario", str(SCENARIOS / "test.yaml"), "--host-stats", "cam-01"])
    twin = build(settings)
    monitor = twin.gateways["cam-01"].monitor
    assert isinstance(monitor.figures, HostFigures) and isinstance(monitor.figures, MachineFigures)
    assert isinstance(monitor, GatewayMonitor)  # every port method
    async with _client(twin) as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        summary = await _get(gateway, auth, "summary")
    assert summary["cpu"]["cores"] == os.cpu_count() and summary["host"]["hostname"] == os.uname().nodename
    assert mismatches(summary, MONITOR["GET /api/v1/monitor/summary"]) == []


def test_host_stats_for_a_camera_the_fleet_lacks_is_refused() -> None:
    settings = Settings(scenario=SCENARIOS / "test.yaml", step=True, host_stats=("cam-09",))
    with pytest.raises(RealMemberError, match="--host-stats: the fleet has no camera 'cam-09'"):
        build(settings)


def _client(twin: Twin) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=twin.gateway_apps["cam-01"]), base_url="http://cam-01"
    )


async def _get(gateway: httpx.AsyncClient, auth: dict[str, str], route: str) -> dict:
    resp = await gateway.get(f"/api/v1/monitor/{route}", headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]
