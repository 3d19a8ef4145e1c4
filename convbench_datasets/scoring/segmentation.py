r"""jieba's segmentation (precise mode, HMM on), from a faster backend when one is installed.

``jieba_cutter()`` returns a function that always gives exactly ``jieba.lcut(text)``. With the ``fast``
extra (``pip install 'convbench[fast]'``: ``rjieba``, a binding of the Rust port jieba-rs) the dictionary
work goes to rjieba and the rest is jieba's own code:

- jieba cuts a text into blocks (``JIEBA_HAN``: ideographs U+4E00-U+9FD5, ASCII letters and digits,
  ``+#&._%-``), finds each block's best route through its dictionary (the dynamic programme over the
  word graph), and hands every stretch of consecutive one-character pieces of that route (the
  "buffer") to its HMM (``jieba.finalseg``) unless the stretch is itself a dictionary word.
- rjieba gives the route (``cut(text, hmm=False)``); convbench collects the buffers from it and runs
  jieba's own HMM on them (``jieba.finalseg.cut``, the same test on jieba's ``FREQ``), memoised per
  buffer. jieba-rs's copy of the HMM probabilities rounds exact ties differently from jieba's (a run
  of three or four of one character, ``南南南南想``, ``我水水水热``; a unit repeated, ``务风务风``), and
  its HMM keeps Latin/digit runs such as ``COVID-19`` whole where jieba's splits them; neither is used.
- With ``hmm=False`` jieba-rs joins consecutive one-character ASCII letters and digits of the route into
  one token (``COVID``); jieba's dictionary has no word made only of them, so such a token is always
  one-character pieces of the route, and goes back into the buffer.
- jieba-rs sums its dictionary's frequencies once per word; jieba counts each line of dict.txt, and
  jieba 0.42's lists ``B超`` (frequency 3) twice, so jieba's total is 60,101,967 and jieba-rs's
  60,101,964. Every word's log-probability then differs by about 5e-8, which changes routes with exact
  ties (``呵|呵呵`` and ``呵呵|呵`` in a long run of 呵, a 91-character text starting ``买买买``). convbench
  therefore uses its own rjieba instance and adds to it one word of frequency ``JIEBA_DUPLICATE_FREQ``
  that no text handed to rjieba can contain (``TOTAL_PAD_WORD``, a Unicode noncharacter outside
  jieba's blocks): the totals, and so every sum, are then bit for bit jieba's.
- jieba-rs counts more code points as Chinese (CJK extension A, U+9FD6-U+9FFF, compatibility
  ideographs, the supplementary planes), so its blocks differ from jieba's around those. A text
  with any character outside the ideographs jieba knows, ASCII, and the usual punctuation and
  full-width blocks is therefore first split into jieba's own blocks with jieba's own pattern;
  non-Chinese stretches are cut by jieba's rule here (one token per character, ``\r\n`` kept
  together), the blocks go to rjieba.

tests/scoring/test_segmentation.py checks the equality on 12,000 seeded sentences that mix all of
these, on runs of repeated characters and words up to 300 characters long, on long mixed blocks, and
on every short probe of a repeated character (2-4 times) or unit (2-3 times) between other characters.
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

# jieba 0.42's own patterns (jieba.re_han_default, jieba.re_skip_default; a test checks they still are).
JIEBA_HAN = re.compile("([\u4E00-\u9FD5a-zA-Z0-9+#&\\._%\\-]+)", re.U)
JIEBA_SKIP = re.compile("(\r\n|\\s)", re.U)
# Characters rjieba treats as jieba does when handed a whole text: the ideographs jieba knows, ASCII,
# and the punctuation, symbol and full-width blocks that both take one character at a time.
_WHOLE_TEXT_SAFE = re.compile(
    "[\u4E00-\u9FD5\x00-\x7F\u00A0-\u00BF\u2000-\u206F\u3000-\u303F\uFE30-\uFE4F\uFF00-\uFFEF]*"
)
_BLOCK_CHAR = re.compile("[\u4E00-\u9FD5a-zA-Z0-9+#&._%\\-]")  # one character of a JIEBA_HAN block
_ASCII_WORD = re.compile("[a-zA-Z0-9]+")  # what jieba-rs without HMM joins from one-character route pieces
HMM_MEMO = 1 << 16  # buffers whose HMM segmentation is remembered

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
def _rjieba() -> Callable[[str, bool], list[str]] | None:
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
    return instance.cut  # (text, hmm): convbench asks for the route only (hmm=False)


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


@lru_cache(maxsize=None)
def _jieba_hmm_parts() -> tuple[Callable[[str], int | None], Callable[[str], tuple[str, ...]]]:
    """jieba's dictionary look-up (``FREQ.get``) and its HMM (``finalseg.cut``, memoised per buffer)."""
    _jieba()  # jieba's dictionary loaded
    import jieba
    import jieba.finalseg

    @lru_cache(maxsize=HMM_MEMO)
    def hmm(buffer: str) -> tuple[str, ...]:
        return tuple(jieba.finalseg.cut(buffer))

    return jieba.dt.FREQ.get, hmm


def _make_hybrid(fast: Callable[[str, bool], list[str]]) -> Callable[[str], list[str]]:
    whole_text_safe, block_char, ascii_word = _WHOLE_TEXT_SAFE.fullmatch, _BLOCK_CHAR.fullmatch, _ASCII_WORD.fullmatch
    in_dictionary, hmm = _jieba_hmm_parts()

    def flush(buffer: str, out: list[str]) -> None:
        """jieba's ``__cut_DAG`` for a stretch of one-character route pieces."""
        if len(buffer) == 1:
            out.append(buffer)
        elif not in_dictionary(buffer):
            out.extend(hmm(buffer))
        else:
            out.extend(buffer)

    def cut_safe(text: str) -> list[str]:
        """A text of whole-text-safe characters (or one of jieba's blocks): rjieba's route, jieba's HMM."""
        out: list[str] = []
        buffer = ""
        for word in fast(text, False):
            if (len(word) == 1 and block_char(word)) or ascii_word(word):
                buffer += word  # one-character pieces of the route (ASCII ones joined by jieba-rs)
                continue
            if buffer:  # a word of the route, or a character outside every block: the buffer ends
                flush(buffer, out)
                buffer = ""
            out.append(word)
        if buffer:
            flush(buffer, out)
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
