"""Reading the transcript and calls written as text: a request's messages as typed turns (tool
calls and their results, or calls an agent writes as text), the person's request and the
conversation it belongs to, a model's reply read back as the call it meant, and tokens.

The engine's lowest layer: it imports nothing else of the engine.
"""
