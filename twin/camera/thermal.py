"""The camera's thermal model: SoC and MCU temperatures from ambient, load, fan and heater.

A first-order system: the SoC approaches an equilibrium (ambient + load heating - fan cooling +
heater) with time constant :data:`TAU_S`. The temperature is exact at any instant: it is carried
forward analytically from the last change, so no SimPy process ticks for it. Ambient follows a
daily cycle of the world clock (coolest before dawn, warmest mid-afternoon).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from twin.rng import hash_uniform

if TYPE_CHECKING:
    from twin.engine import Engine

TAU_S = 300.0
LOAD_C = 18.0
"""SoC heating above ambient at idle load."""
STREAM_C = 4.0
"""Extra heating while the encoders have viewers."""
FAN_C = 9.0
HEATER_C = 12.0


class Thermal:
    def __init__(self, world: Engine, camera_id: str) -> None:
        self.world = world
        self._base = 14.0 + 8.0 * float(hash_uniform(world.streams.key(f"{camera_id}/thermal"), 0))
        self.fan = False
        self.heater = False
        self.streaming = False
        self._t0 = world.env.now
        self._temp0 = self.equilibrium()

    def ambient(self) -> float:
        hour = (self.world.now() % 86400) / 3600
        return self._base + 6.0 * math.sin(2 * math.pi * (hour - 9.0) / 24)

    def equilibrium(self) -> float:
        heat = LOAD_C + (STREAM_C if self.streaming else 0.0)
        heat -= FAN_C if self.fan else 0.0
        heat += HEATER_C if self.heater else 0.0
        return self.ambient() + heat

    def soc_temp(self) -> float:
        dt = self.world.env.now - self._t0
        eq = self.equilibrium()
        return round(eq + (self._temp0 - eq) * math.exp(-dt / TAU_S), 2)

    def mcu_temp(self) -> float:
        return round(self.ambient() + 0.35 * (self.soc_temp() - self.ambient()), 2)

    def set(
        self, *, fan: bool | None = None, heater: bool | None = None, streaming: bool | None = None
    ) -> None:
        """Change an input; the temperature carries on from where it is now."""
        self._temp0 = self.soc_temp()
        self._t0 = self.world.env.now
        if fan is not None:
            self.fan = fan
        if heater is not None:
            self.heater = heater
        if streaming is not None:
            self.streaming = streaming
