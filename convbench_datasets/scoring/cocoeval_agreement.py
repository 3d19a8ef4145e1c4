"""Moved to :mod:`convbench_datasets.cocoeval.cocoeval_agreement` (a benchmark's scoring lives in its folder); this name stays
importable and is that very module, so what patches or reads one sees the other."""

import sys

from ..cocoeval import cocoeval_agreement

sys.modules[__name__] = cocoeval_agreement
