"""Hypothesis profiles: `ci` (the default) is derandomised, so every run of the suite tries the
same examples and a failure reproduces; `explore` (HYPOTHESIS_PROFILE=explore) draws new ones."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, max_examples=2000, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
