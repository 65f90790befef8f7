"""The engine: pure and synchronous, no network, no event loop.

    translation -> transcript -> observe/classify -> fold (failure model, detectors/) -> plan -> Decision

It reads a request in chat terms (`exchange.Translation`), folds the turns it has not seen
into the conversation's state, and decides what to change (`plan.Decision`). It never
imports aiohttp, a store client or the HTTP layer (a test enforces it).
"""
