"""The API layer: the HTTP server over one model (`create_app(settings)` in `app`), one module
per API shape (`openai`, `anthropic`, `ollama`), the turn runner shared by all three, request
fields (`httpio`, `structured`), errors mapped by class, the scheduler and the settings.
Imports the runtime, the tools and cengine's public names; see docs/architecture.md."""
