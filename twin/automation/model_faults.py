"""The chat model's pace and the faults a scenario puts on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class ModelFaults:
    """The model's pace and the faults a scenario puts on it (every backend, built in or HTTP)."""

    tokens_per_second: float = 20.0
    slow_first_token_s: float = 0.0
    hang: bool = False
    error_status: int | None = None
    errors_left: int | None = None
    """Model calls still to fail with ``error_status``; ``None``: all until undone."""

    def slow(self, seconds: float) -> Callable[[], None]:
        self.slow_first_token_s = seconds
        return lambda: setattr(self, "slow_first_token_s", 0.0)

    def stall(self) -> Callable[[], None]:
        self.hang = True
        return lambda: setattr(self, "hang", False)

    def fail(self, status: int, count: int | None) -> Callable[[], None]:
        self.error_status, self.errors_left = status, count
        return lambda: setattr(self, "error_status", None)

    def pace(self, tokens_per_second: float) -> Callable[[], None]:
        before, self.tokens_per_second = self.tokens_per_second, tokens_per_second
        return lambda: setattr(self, "tokens_per_second", before)

    def take_error(self) -> int | None:
        if self.error_status is None:
            return None
        status = self.error_status
        if self.errors_left is not None:
            self.errors_left -= 1
            if self.errors_left <= 0:
                self.error_status = self.errors_left = None
        return status
