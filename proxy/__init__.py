"""repair-proxy: a transparent OpenAI-compatible proxy that unsticks agents.

The package is in layers, each a folder, imports going one way (a test enforces it):

    settings  ->  engine  ->  dialects, store  ->  http, integrations  ->  cli

`settings` parses the config and policy files; `engine` is pure and synchronous (transcript,
fold, detectors, plan); `dialects` translate chat, Responses, Ollama and Anthropic Messages
requests to the engine's terms and back; `store` keeps verdicts; `http` is the aiohttp server;
`integrations` the engine inside other gateways (a LiteLLM callback); `cli` the commands.
Importing this package imports nothing else.
"""
