"""The writing of the agent's next call and of the remedy's words: the agent's own vocabulary
(how it reads, edits and runs), the held edit (the lines it may change, what its replacement
keeps and must not copy, the in-place `sed` script), what a failure expects, what there is to
read about it next, and what every remedy shares (the marker, the token budget, the failing
call quoted).

It writes from what the reading and the state know: it imports `text`, `outputs`, `reading`
and `state` below it, never a pattern; the detectors and the plan word their remedies with it.
"""
