"""Moved to :mod:`convbench_datasets.nico.nico_generation` (a benchmark's scoring lives in its folder); this name stays
importable and is that very module, so what patches or reads one sees the other."""

import sys

from ..nico import nico_generation

sys.modules[__name__] = nico_generation
