"""Configuration of `llamay serve` (one model, one queue)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..runtime.default_model import default_model_path
from ..runtime.types import GenerationModel

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 11435


@dataclass
class Settings:
    model_path: Optional[str] = None        # None: the default model (runtime/default_model.py)
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    n_ctx: int = 4096
    n_threads: Optional[int] = None
    # requests waiting behind the running one; beyond this the server answers 429 / 503
    max_queue: int = 16
    retry_after_seconds: int = 1
    # used when a request names no budget (Ollama's num_predict default is unbounded; ours is not)
    default_max_tokens: int = 512
    # name the APIs report; None: the GGUF file stem
    model_alias: Optional[str] = None
    # an already loaded model (tests share one between apps)
    model: Optional[GenerationModel] = None
    # applied to every reported decision (llamay_choice_logprobs): `llamay serve --calibration`
    # passes calibrate.apply_calibration bound to the loaded CALIBRATION.json; the decision's
    # raw logprobs stay beside the corrected posterior
    decision_correction: Optional[Callable[[dict], dict]] = None

    def resolved_model_path(self) -> str:
        if self.model_path:
            return self.model_path
        return str(default_model_path())
