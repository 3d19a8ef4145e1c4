"""Moved to :mod:`convbench_datasets.nc.agreement` (a benchmark's scoring lives in its folder); this name stays
importable and is that very module, so what patches or reads one sees the other."""

import sys

from ..nc import agreement

sys.modules[__name__] = agreement
