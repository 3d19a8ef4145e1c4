"""Longest common subsequence length by bit-parallel dynamic programming (Allison & Dix 1986; Hyyrö 2004).

One Python big integer holds a whole DP row as bits, so a pair costs O(len(b)) integer operations
instead of O(len(a) * len(b)) Python steps. ROUGE-L needs nothing but this length.

Example:
    >>> lcs_length("ABCBDAB", "BDCABA")
    4
    >>> lcs_length([], ["x"])
    0
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of two token sequences.

    Still quadratic: len(longer) big-integer steps of len(shorter) bits, minutes for two 10 MB texts;
    the metrics refuse texts over their ``max_chars`` before calling this.
    """
    if not a or not b:
        return 0
    if len(a) < len(b):
        a, b = b, a  # the shorter sequence sets the bit width
    masks: dict[Hashable, int] = {}
    bit = 1
    for token in b:
        masks[token] = masks.get(token, 0) | bit
        bit <<= 1
    width = bit - 1
    row = width  # a 1 bit: the LCS has not yet been extended at that position
    for match in map(masks.get, a):  # map: no per-token Python call overhead
        if match:
            low = row & match
            row = ((row + low) | (row - low)) & width
    return len(b) - row.bit_count()


def rouge_l_f(prediction: Sequence[Hashable], reference: Sequence[Hashable]) -> float:
    """ROUGE-L F-measure of two token sequences, as rouge-score defines it (0 when either is empty)."""
    if not prediction or not reference:
        return 0.0
    lcs = lcs_length(prediction, reference)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(prediction), lcs / len(reference)
    return 2 * precision * recall / (precision + recall)
