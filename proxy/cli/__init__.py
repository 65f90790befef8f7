"""The commands: `serve`, `check-config`, `check-policy`, `replay`, `report`, `demo` (see `main`).

Each command module imports only its own layers: `replay` runs the engine offline and
imports no HTTP or store code.
"""
