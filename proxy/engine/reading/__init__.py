"""The reading of calls: what a call does (a check, an edit, a read, noise), whether it can
change the workspace or leaves it as it is, what an edit proposes, and one call observed with
its output's reading (`outputs`).

Everything the proxy says rests on this reading. It sees one call at a time and imports
only `text` and `outputs` below it.
"""
