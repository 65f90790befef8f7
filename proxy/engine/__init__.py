"""The engine: pure and synchronous, no network, no event loop.

    text      a request's messages as typed turns; calls written as text; the reply read back
    outputs   what a tool's output says: how it came out, what a failure is, excerpts of files
    reading   what each call does: a check, an edit, a read; what an edit proposes
    state     the current-failure model and the conversation's state, folded turn by turn
    writing   the agent's next call and the remedy's words: its vocabulary, the held edit
    detectors one file per pattern, plugged into the fold
    plan      the decision about this request: hand-back, instructions, a pinned call, gates
    core      the engine: one policy and the states it keeps

Each folder imports only the ones listed above it (tests/test_layers.py holds this). It reads
a request in chat terms (`text.exchange.Translation`), folds the turns it has not seen into
the conversation's state, and decides what to change (`plan.decide.Decision`). It never
imports aiohttp, a store client or the HTTP layer (a test enforces it).
"""
