"""Metric logic, importable without the evaluate machinery (the evaluate modules in metrics/ wrap it).

The modules here know no benchmark: text and statistics (LCS, segmentation, BERTScore, rank
correlation, paired tests, resampling, input checks). Each benchmark's scoring lives in its folder:
``from convbench_datasets.nc.ncbench_action import score_actions``, ``nico/nico_generation.py``,
``cocoeval/behavior_frequency.py``...
"""
