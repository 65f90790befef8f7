"""The plan, gates and remedies: a folded conversation becomes one decision about this
request (hand back, instructions placed, a call pinned) and the rules its reply is held to.
"""
