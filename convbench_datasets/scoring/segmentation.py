r"""jieba's segmentation (precise mode, HMM on), from a faster backend when one is installed.

``jieba_cutter()`` returns a function that always gives exactly ``jieba.lcut(text)``. With the ``fast``
extra (``pip install 'convbench[fast]'``: ``rjieba``, a binding of the Rust port jieba-rs, about 10x
faster) the work goes to rjieba, corrected where jieba-rs is known to differ from jieba:

- jieba-rs counts more code points as Chinese (CJK extension A, U+9FD6-U+9FFF, compatibility
  ideographs, the supplementary planes), so its blocks differ from jieba's around those. A text
  with any character outside the ideographs jieba knows (U+4E00-U+9FD5), ASCII, and the usual
  punctuation and full-width blocks is therefore first split into jieba's own blocks with jieba's
  own pattern; non-Chinese blocks are cut by jieba's rule here (one token per character, ``\r\n``
  kept together), the others go to rjieba.
- jieba-rs sums its dictionary's frequencies once per word; jieba counts each line of dict.txt, and
  jieba 0.42's lists ``B超`` (frequency 3) twice, so jieba's total is 60,101,967 and jieba-rs's
  60,101,964. Every word's log-probability then differs by about 5e-8, which changes nothing except
  exact ties: a run of a repeated character (``呵呵呵…``: ``呵|呵呵`` and ``呵呵|呵`` score the same) or any
  other text with two segmentations made of the same words has several best routes, and which one
  the dynamic programme keeps depends on how its floating-point sums round. From about 60 characters
  of such a run (``"呵" * 79``, ``"啊" * 94``, a 91-character text starting ``买买买``) they rounded
  differently. convbench therefore uses its own rjieba instance and adds to it one word of frequency
  ``JIEBA_DUPLICATE_FREQ`` that no text handed to rjieba can contain (``TOTAL_PAD_WORD``, a Unicode
  noncharacter outside jieba's blocks): the totals, and so every sum, are then bit for bit jieba's.
- jieba's HMM (for stretches the dictionary leaves as single characters) has exact ties too, and
  jieba-rs's copy of its probabilities rounds them differently: ``"南" * 8`` is ``南南|南南南|南南南``
  in jieba and ``南南南|南南|南南南`` in jieba-rs. Such ties need two segmentations made of the same
  words in another order, which repetition gives: a run of 5 or more of one character (``2 + 3`` or
  ``3 + 2``; shorter runs have none), or a unit of 2 or more characters three times in a row (``u|uu``
  or ``uu|u``). A text (or block) holding either within Chinese characters (``_TIE_PRONE``: runs of 5,
  units of up to ``TIE_UNIT_MAX`` characters) goes to jieba itself; everything else stays with
  rjieba. The check costs about 4 µs a text; it sent 77 of the speed benchmark's 20,000 texts to jieba.
- Inside a block its HMM keeps Latin/digit runs such as ``a_b``, ``COVID-19`` or ``1.2.3`` whole where
  jieba's HMM splits them with the pattern ``[a-zA-Z0-9]+(?:\.\d+)?%?``. jieba's dictionary has no word
  that mixes such characters with Chinese, so each run of rjieba tokens made only of them is exactly
  one such stretch of jieba's HMM, and it is split again here with jieba's pattern. The only
  dictionary words made of them (``AT&T``, ``C#``, ``c#``, ``C++``, ``c++``) would blur that, so a text
  holding one is left to jieba whole.

tests/scoring/test_segmentation.py checks the equality on 12,000 seeded sentences that mix all of
these, on runs of repeated characters and words up to 300 characters long, and on long mixed blocks.
``CONVBENCH_SEGMENTER=jieba`` forces jieba itself (for instance after ``jieba.add_word``, which rjieba
cannot see; read at first use); without rjieba, jieba is used and nothing else changes.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import re
import warnings
from collections.abc import Callable
from functools import lru_cache

# jieba 0.42's own patterns (jieba.re_han_default, jieba.re_skip_default, jieba.finalseg.re_skip;
# a test checks they still are).
JIEBA_HAN = re.compile("([\u4E00-\u9FD5a-zA-Z0-9+#&\\._%\\-]+)", re.U)
JIEBA_SKIP = re.compile("(\r\n|\\s)", re.U)
JIEBA_HMM_SKIP = re.compile(r"([a-zA-Z0-9]+(?:\.\d+)?%?)")
# Characters rjieba treats as jieba does when handed a whole text: the ideographs jieba knows, ASCII,
# and the punctuation, symbol and full-width blocks that both take one character at a time.
_WHOLE_TEXT_SAFE = re.compile(
    "[\u4E00-\u9FD5\x00-\x7F\u00A0-\u00BF\u2000-\u206F\u3000-\u303F\uFE30-\uFE4F\uFF00-\uFFEF]*"
)
_LATIN_CLASS = re.compile("[a-zA-Z0-9+#&._%\\-]")  # non-Chinese characters of jieba's blocks
_LATIN_ONLY = re.compile("[a-zA-Z0-9+#&._%\\-]+")
# Where jieba's HMM can tie (see the module docstring): one Chinese character five times in a row, or a
# unit of 2 to TIE_UNIT_MAX Chinese characters three times in a row (\1 is the unit's first character).
TIE_UNIT_MAX = 12
_TIE_PRONE = re.compile(f"([\u4E00-\u9FD5])(?:\\1{{4}}|([\u4E00-\u9FD5]{{1,{TIE_UNIT_MAX - 1}}}?)\\1\\2\\1\\2)")
_LATIN_WORDS = re.compile("AT&T|[Cc](?:#|\\+\\+)")  # the only dictionary words made of them (jieba 0.42)

BACKENDS: tuple[str, ...] = ("rjieba", "jieba")
# jieba 0.42's total counts dict.txt's duplicated line "B超 3" twice, jieba-rs's once (module docstring);
# a test recomputes this from jieba's own dictionary. The pad word is a noncharacter outside every range
# _WHOLE_TEXT_SAFE and JIEBA_HAN accept, so it never occurs in a text or block that rjieba is given.
JIEBA_DUPLICATE_FREQ = 3
TOTAL_PAD_WORD = "\uFDD0"


@lru_cache(maxsize=None)
def _jieba() -> Callable[[str], list[str]]:
    import jieba

    jieba.setLogLevel(logging.WARNING)  # it announces its dictionary on stderr otherwise
    jieba.initialize()
    return jieba.lcut


# rjieba releases whose output (with the corrections below) was checked equal to jieba 0.42's: the
# ``fast`` extra's range. Another release may bring another jieba-rs, so it is not used unasked.
VERIFIED_RJIEBA = ((0, 2, 2), (0, 3, 0))  # from, up to (excluded)


@lru_cache(maxsize=None)
def _rjieba() -> Callable[[str], list[str]] | None:
    try:
        import rjieba
    except ImportError:
        return None
    try:
        release = tuple(int(part) for part in importlib.metadata.version("rjieba").split(".")[:3])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        release = ()
    low, high = VERIFIED_RJIEBA
    if not low <= release < high:
        shown = [".".join(map(str, v)) for v in (release, low, high)]
        warnings.warn(f"rjieba {shown[0] or '(unknown version)'} is outside the range checked against jieba "
                      f"(>={shown[1]},<{shown[2]}): segmenting with jieba instead", RuntimeWarning, stacklevel=2)
        return None
    instance = rjieba.Jieba()  # not rjieba's shared default instance: the pad word stays ours
    instance.add_word(TOTAL_PAD_WORD, JIEBA_DUPLICATE_FREQ, None)  # dictionary total = jieba's
    return instance.cut


def version(name: str) -> str | None:
    """The installed version of a segmentation backend (``rjieba`` or ``jieba``), or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def signature(name: str | None = None) -> dict[str, str | None]:
    """What produces ``jieba_cutter(name)``'s tokens (default: ``backend()``), for a result's signature:
    the backend and its version, and the jieba release whose tokens it reproduces.

    >>> signature("jieba")["segmenter"]
    'jieba'
    """
    name = name or backend()
    return {"segmenter": name, "segmenter_version": version(name), "jieba_version": version("jieba")}


def backend() -> str:
    """The backend ``jieba_cutter()`` uses: ``rjieba`` when a verified release is installed (unless
    ``CONVBENCH_SEGMENTER=jieba``), else ``jieba``."""
    choice = os.environ.get("CONVBENCH_SEGMENTER", "").strip().lower()
    if choice not in ("", *BACKENDS):
        raise ValueError(f"CONVBENCH_SEGMENTER must be one of {BACKENDS}, got {choice!r}")
    if choice == "jieba" or _rjieba() is None:
        if choice == "rjieba":
            raise ImportError("CONVBENCH_SEGMENTER=rjieba but no usable rjieba is installed: "
                              "pip install 'convbench[fast]'")
        return "jieba"
    return "rjieba"


def jieba_cutter(name: str | None = None) -> Callable[[str], list[str]]:
    """A function equal to ``jieba.lcut`` (precise mode, HMM on), from backend ``name`` (default: ``backend()``).

    >>> jieba_cutter()("我今天去超市买了3.5元的COVID-19口罩")
    ['我', '今天', '去', '超市', '买', '了', '3.5', '元', '的', 'COVID', '-', '19', '口罩']
    """
    name = name or backend()
    if name == "jieba":
        return _jieba()
    fast = _rjieba()
    if name != "rjieba" or fast is None:
        raise ValueError(f"segmentation backend {name!r} is not available; choose from {BACKENDS}")
    return _make_hybrid(fast)


def _make_hybrid(fast: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    whole_text_safe, latin_only, tie_prone = _WHOLE_TEXT_SAFE.fullmatch, _LATIN_ONLY.fullmatch, _TIE_PRONE.search

    def cut_safe(text: str) -> list[str]:
        """A text of whole-text-safe characters (or one of jieba's blocks)."""
        if tie_prone(text):
            return _jieba()(text)  # jieba segments blocks independently: the block's words are the text's
        words = fast(text)
        if not _LATIN_CLASS.search(text):
            return words
        if _LATIN_WORDS.search(text):
            return _jieba()(text)
        out: list[str] = []
        run: list[str] = []
        for word in words:
            if latin_only(word):
                run.append(word)
                continue
            if run:
                out.extend(piece for piece in JIEBA_HMM_SKIP.split("".join(run)) if piece)
                run.clear()
            out.append(word)
        if run:
            out.extend(piece for piece in JIEBA_HMM_SKIP.split("".join(run)) if piece)
        return out

    def cut(text: str) -> list[str]:
        if whole_text_safe(text):
            return cut_safe(text)
        words: list[str] = []
        for i, block in enumerate(JIEBA_HAN.split(text)):
            if not block:
                continue
            if i % 2:  # a capture of JIEBA_HAN: a block jieba segments with its dictionary
                words.extend(cut_safe(block))
                continue
            for piece in JIEBA_SKIP.split(block):  # jieba: whitespace (\r\n together) and other characters one by one
                if JIEBA_SKIP.match(piece):
                    words.append(piece)
                else:
                    words.extend(piece)
        return words

    return cut
