"""The runtime layer: one model and its decode loop under cengine grammars.

`types` (parameters, events, the `GenerationModel` protocol; no llama.cpp), `model` (the
decode loop: mask, fast-forward, budgets, closer), `stops` (the stop-string scanner),
`llama_backend` (llama.cpp's C API), `sampling`, `chat_template`, `choice` (scoring the
alternatives of a choice) and `default_model`. Imports only cengine; see docs/architecture.md.
This file imports nothing, so `server.runtime.types` never loads llama.cpp.
"""
