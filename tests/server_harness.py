"""A live llamay server for tests: uvicorn on a free loopback port, in a thread of the test
process, serving the fixture model (or any model object given in the settings)."""
from __future__ import annotations

import socket
import threading
import time
from typing import Optional

import uvicorn

import fixture_model
from server.api.app import create_app
from server.api.settings import Settings


CLIENT_TIMEOUT = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    def __init__(self, settings: Optional[Settings] = None, **overrides):
        if settings is None:
            settings = Settings(model_path=str(fixture_model.fixture_model_path()), n_ctx=2048,
                                **overrides)
        self.app = create_app(settings)
        self.state = self.app.state.llamay
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port,
                                                    log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("test server did not start")
            time.sleep(0.02)

    @property
    def model_name(self) -> str:
        return self.state.model_name

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)

    # the official clients, pointed at this server (no retries: a test sees the first answer)
    def openai(self):
        import openai
        return openai.OpenAI(base_url=self.base + "/v1", api_key="unused", max_retries=0,
                             timeout=CLIENT_TIMEOUT)

    def anthropic(self):
        import anthropic
        return anthropic.Anthropic(base_url=self.base, api_key="unused", max_retries=0,
                                   timeout=CLIENT_TIMEOUT)

    def ollama(self):
        import ollama
        return ollama.Client(host=self.base, timeout=CLIENT_TIMEOUT)
