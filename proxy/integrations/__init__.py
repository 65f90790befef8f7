"""The engine inside other gateways: `litellm` is a LiteLLM proxy callback. Each imports the engine,
dialects, settings and store, one way; nothing else in the package imports these."""
