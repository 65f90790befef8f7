"""The state and its fold: the current-failure model, partial progress, the conversation's
state (with every pattern's own), the fold of new turns into it, and where states are kept.

The fold drives patterns through the interface in `patterns.py`; the detectors above
implement it.
"""
