"""Hypothesis profiles: `ci` (the default) is derandomised, so every run of the suite tries the
same examples and a failure reproduces; `explore` (HYPOTHESIS_PROFILE=explore) draws new ones,
ten times as many (`strategies.examples`: each test states its count for `ci`)."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
