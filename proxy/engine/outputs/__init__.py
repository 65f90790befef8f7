"""What a tool's output says: the output out of its envelope and labels, without the noise a
run prints whatever it does, how it came out (pass, fail, an environment problem), what a
failure is (its normalised signature, its evidence, the files and lines it points at), and
the code an edit should replace, cut from what the agent's own read of a file showed.

It reads text, never a call: it imports only `text` below it.
"""
