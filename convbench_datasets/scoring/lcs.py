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
    return lcs_f(lcs_length(prediction, reference), len(prediction), len(reference))


def lcs_f(lcs: int, prediction_len: int, reference_len: int, f: str = "f1") -> float:
    """ROUGE-L's F-measure from the LCS length and the two lengths (0 when the LCS is empty).

    With P = lcs / prediction_len and R = lcs / reference_len, F = (1 + b^2) P R / (R + b^2 P):
    ``f1`` takes b = 1 (rouge-score's ``rougeL``); ``p/r`` takes b = P / R, as the ``rouge`` and
    ``rouge-chinese`` packages do, which is F1 when P = R and below it otherwise.

    Example (P = 1/2, R = 1):
        >>> round(lcs_f(2, 4, 2), 4), round(lcs_f(2, 4, 2, "p/r"), 4)
        (0.6667, 0.5556)
    """
    if lcs == 0:
        return 0.0
    precision, recall = lcs / prediction_len, lcs / reference_len
    if f == "f1":
        return 2 * precision * recall / (precision + recall)
    if f != "p/r":
        raise ValueError(f"rouge_l_f must be 'f1' or 'p/r', got {f!r}")
    beta2 = (precision / recall) ** 2
    return (1 + beta2) * precision * recall / (recall + beta2 * precision)
