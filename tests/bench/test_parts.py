"""``python -m bench``: its parts, --only and --help (no part is run here)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import bench.__main__ as bench_main


def test_every_part_is_a_module_with_a_main() -> None:
    for part in bench_main.PARTS:
        assert callable(importlib.import_module(f"bench.{part.module}").main), part.name


def test_only_takes_named_parts_in_the_order_of_a_full_run() -> None:
    args = bench_main.parse_args(["--only", "day, http"])
    assert [p.name for p in args.only] == ["http", "day"]


@pytest.mark.parametrize("only", ["nope", "http,nope", ",", ""])
def test_only_refuses_unknown_or_no_parts(only: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        bench_main.parse_args(["--only", only])
    assert exited.value.code == 2
    assert "choose from http, camera" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--trials", "0"], ["--duration", "0"], ["--connections", "0"]])
def test_bad_numbers_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        bench_main.parse_args(argv)
    assert exited.value.code == 2


def test_help_lists_every_part_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench_main.parse_args(["--help"])
    out = capsys.readouterr().out
    for part in bench_main.PARTS:
        assert sum(line.split()[:1] == [part.name] for line in out.splitlines()) == 1, part.name


def test_the_options_reach_the_parts_that_take_them() -> None:
    args = bench_main.parse_args(["--trials", "5", "--duration", "2", "--json", "out/b.json"])
    http, day, camera = bench_main.BY_NAME["http"], bench_main.BY_NAME["day"], bench_main.BY_NAME["camera"]
    assert http.argv(args, "http") == [
        "--trials", "5", "--duration", "2.0", "--warmup", "0.5", "--connections", "32",
        "--json", "out/b.json",
    ]  # fmt: skip
    assert day.argv(args, "day") == ["--hours", "24", "--trials", "5", "--json", "out/b.day.json"]
    assert camera.argv(args, "camera") == ["--json", str(Path("out/b.camera.json"))]
    assert bench_main.BY_NAME["chat"].argv(bench_main.parse_args([]), "chat") == []


def test_a_failing_part_does_not_stop_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    def fake(part: bench_main.Part, args: object) -> int:
        ran.append(part.name)
        return 1 if part.name == "http" else 0

    monkeypatch.setattr(bench_main, "run_part", fake)
    assert bench_main.main(["--only", "http,day"]) == 1
    assert ran == ["http", "day"]
