"""What every route reads: the server's one model, its queue and its settings."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from starlette.requests import Request

from ..runtime.reasoning import ReasoningFormat
from ..runtime.types import GenerationModel
from ..tools import DEFAULT_DIALECT, Dialect
from .errors import InvalidRequest, ModelNotFound
from .scheduler import Scheduler
from .settings import Settings


@dataclass
class ServerState:
    settings: Settings
    model: GenerationModel
    scheduler: Scheduler
    started: float = field(default_factory=time.time)
    compiles: Any = None            # compiling.CompilePool (constraints off the event loop)
    # the tool-call dialect of the model's family, bound to its special tokens
    dialect: Dialect = DEFAULT_DIALECT
    # the model's reasoning markers (None: it does not think, or --reasoning-format none)
    reasoning: Optional[ReasoningFormat] = None

    @property
    def model_name(self) -> str:
        return self.settings.model_alias or self.model.name

    def check_model(self, requested: Optional[Any]) -> str:
        """The name to report; a request naming another model gets 404. An absent model field
        means this server's one model."""
        if requested is None or requested == "":
            return self.model_name
        if not isinstance(requested, str):
            raise InvalidRequest("'model' must be a string", param="model")
        known = {self.model_name, self.model.name, self.model.name + ".gguf"}
        base = requested[:-len(":latest")] if requested.endswith(":latest") else requested
        if requested in known or base in known:
            return requested
        raise ModelNotFound(requested, self.model_name)


def state_of(request: Request) -> ServerState:
    return request.app.state.llamay
