"""Wire shapes of the setup wizard's last steps, onboarding and suggestions."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from hardware.ports.guidance import LlmSetup


class LlmConfigBody(BaseModel):
    model_config = ConfigDict(extra="ignore")

    provider: str
    model: str
    endpoint: str | None = None
    api_key: str | None = None

    def to_port(self) -> LlmSetup:
        return LlmSetup(self.provider, self.model, self.endpoint, self.api_key)


SETUP_COMPLETED = {"message": "Setup completed successfully", "redirect": "/dashboard"}
