"""The reading of commands and failures: what a call does (a check, an edit, a read, noise),
how it came out (pass, fail, an environment problem), what a failure is (its normalised
signature, the failing test and line), and the agent's own vocabulary for the next call.

Everything the proxy says rests on this reading. It sees one call at a time and imports
only `text` below it.
"""
