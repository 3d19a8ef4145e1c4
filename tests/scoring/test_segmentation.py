"""The fast segmentation backend gives exactly jieba.lcut's tokens; without it, jieba itself is used."""

from __future__ import annotations

import random
import re
import sys

import pytest

from convbench_datasets.nico import nico_generation
from convbench_datasets.scoring import segmentation
from convbench_datasets.nico.nico_generation import score_generation
from convbench_datasets.scoring.segmentation import backend, jieba_cutter

WORDS = ("我们 今天 晚上 一起 去 吃 火锅 吧 你 觉得 怎么样 好啊 不过 我 有点 累 明天 再说 周末 公园 散步 天气 不错 "
         "要不要 带上 孩子 超市 打折 买 水果 没问题 谢谢 真 好 哈哈 算了 随便 都 行 中华人民共和国 北京大学 研究生 "
         "结婚 的 和 尚未 工信处 女干事 每月 经过 下属 科室 小明 硕士 毕业 于 中国科学院 计算所 后 在 日本京都大学 深造 "
         "南京市 长江大桥 李小福 是 创新办 主任 也是 云计算 方面 专家 石墨烯 嗯嗯 呃 啦 嘛 呗 咋 整 贼 好吃 老铁 "
         "绝绝子 躺平 内卷 打工人 吃瓜 群众 元 个 点 号线 人 太多 了 就够 太贵").split()
CJK_PUNCT = list("。，！？、；：“”‘’（）《》【】…—～·「」『』〔〕〈〉﹏")
ASCII_PUNCT = list(".,!?;:'\"()[]{}-+#&_%@/\\*^$=<>|~`")
FULL_WIDTH = [chr(c) for c in range(0xFF01, 0xFF5F)]  # ！ to ～: full-width digits, letters and marks
# Latin runs jieba's HMM splits and jieba-rs keeps whole, and jieba's only Latin dictionary words.
LATIN = ("hello world OK iPhone WiFi Python3 C++ c++ C# c# AT&T a_b e-mail foo.bar x86_64 COVID-19 U.S.A. "
         "v1.2.3 1.2.3 3.5 50% 12.5% 2024 ab12.5%cd a--b -_- ...").split()
EMOJI = ["😀", "😂", "👍", "👍🏽", "❤️", "🇨🇳", "👨‍👩‍👧", "🙏", "✨", "🔥", "☕", "1️⃣", "©", "™"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\r\r\n", "\u3000", "\xa0", "\u200b", "\u2028", "\x0b", "\x0c", "\x1c", "\x85"]
OTHER = list("éèüñçßøåÆœあいうえおカタカナ한국어приветمرحبا") + ["e\u0301", "\ufeff", "\x00"]
# Ideographs jieba does not count as Chinese but jieba-rs does (and the ones both do, most often).
IDEOGRAPH_RANGES = [(0x4E00, 0x9FD5, 70), (0x9FD6, 0x9FFF, 8), (0x3400, 0x4DBF, 10), (0x20000, 0x2A6DF, 6),
                    (0x2A700, 0x2EBEF, 2), (0xF900, 0xFAFF, 2), (0x2F800, 0x2FA1F, 2)]


def _ideograph(rng: random.Random) -> str:
    low, high, _ = rng.choices(IDEOGRAPH_RANGES, [w for *_, w in IDEOGRAPH_RANGES])[0]
    return chr(rng.randint(low, high))


def _number(rng: random.Random) -> str:
    digits = str(rng.randint(0, 10 ** rng.randint(1, 8)))
    form = rng.random()
    if form < 0.2:
        return f"{digits}.{rng.randint(0, 99)}"
    if form < 0.3:
        return digits + "%"
    if form < 0.4:
        return "".join(chr(ord(c) - 0x30 + 0xFF10) for c in digits)  # full-width digits
    return digits


PIECES = [
    (lambda rng: rng.choice(WORDS), 40), (_ideograph, 10), (lambda rng: rng.choice(CJK_PUNCT), 10),
    (lambda rng: rng.choice(ASCII_PUNCT), 6), (lambda rng: rng.choice(FULL_WIDTH), 4),
    (lambda rng: rng.choice(LATIN), 8), (_number, 6), (lambda rng: rng.choice(EMOJI), 5),
    (lambda rng: rng.choice(SPACES), 6), (lambda rng: rng.choice(OTHER), 4),
]


def varied_sentences(n: int, seed: int) -> list[str]:
    """``n`` seeded sentences of 1 to 30 pieces drawn from every character class above; one in four
    is plain Chinese words and punctuation only (the texts rjieba gets whole)."""
    rng = random.Random(seed)
    makers, weights = [m for m, _ in PIECES], [w for _, w in PIECES]
    out = []
    for _ in range(n):
        if rng.random() < 0.25:
            out.append("".join(rng.choice(WORDS + CJK_PUNCT) for _ in range(rng.randint(1, 30))))
        else:
            out.append("".join(maker(rng) for maker in rng.choices(makers, weights, k=rng.randint(1, 30))))
    return out


def test_patterns_are_jiebas_own() -> None:
    import jieba

    assert segmentation.JIEBA_HAN.pattern == jieba.re_han_default.pattern
    assert segmentation.JIEBA_SKIP.pattern == jieba.re_skip_default.pattern


def test_rjieba_backend_equals_jieba_on_12000_varied_sentences() -> None:
    pytest.importorskip("rjieba", reason="the fast extra (rjieba) is not installed: pip install 'convbench[fast]'")
    if segmentation._rjieba() is None:
        pytest.skip("the installed rjieba is outside the verified range")
    texts = varied_sentences(12_000, seed=2024)
    latin = re.compile("[a-zA-Z0-9+#&._%-]")  # the non-Chinese characters of jieba's blocks
    classes = {
        "plain Chinese": lambda t: segmentation._WHOLE_TEXT_SAFE.fullmatch(t) and not latin.search(t),
        "Latin runs": lambda t: latin.search(t),
        "jieba's Latin words": lambda t: re.search("AT&T|[Cc](?:#|\\+\\+)", t),
        "other ideographs or scripts": lambda t: not segmentation._WHOLE_TEXT_SAFE.fullmatch(t),
        "CR LF": lambda t: "\r\n" in t,
    }
    for name, member in classes.items():  # every input class is really exercised
        assert sum(1 for t in texts if member(t)) >= 300, name
    reference, fast = jieba_cutter("jieba"), jieba_cutter("rjieba")
    mismatches = [(t, reference(t), fast(t)) for t in texts if reference(t) != fast(t)]
    assert not mismatches, f"{len(mismatches)} differ, first: {mismatches[0]}"


# Repeated characters and words, and long blocks full of them: texts with several equally good
# segmentations, where jieba-rs used to round its way to another one (about 1 in 20 of these differed;
# "呵" * 79, "啊" * 94, "好" * 105, "哈" * 124, "南" * 8, "太多" * 43, a 91-character text opening 买买买).
REPEATED_CHARS = "呵啊好哈呀嘿买真南专"


def repetition_texts() -> list[str]:
    """3,000 runs (each character above 1 to 300 times) and every word of WORDS repeated up to 300
    characters (every 7th count)."""
    texts = [ch * n for ch in REPEATED_CHARS for n in range(1, 301)]
    texts += [word * n for word in WORDS for n in range(1, 300 // len(word) + 1, 7)]
    return texts


def long_mixed_blocks(n: int, seed: int) -> list[str]:
    """Seeded 60-300 character texts of words, runs of one character, repeated words, rare ideographs
    and, in one of four, punctuation and Latin runs between them."""
    rng = random.Random(seed)
    chars = sorted(set("".join(WORDS)))
    out = []
    for _ in range(n):
        size, text, mixed = rng.randint(60, 300), "", rng.random() < 0.25
        while len(text) < size:
            roll = rng.random()
            if roll < 0.15:
                text += rng.choice(chars) * rng.randint(2, 40)
            elif roll < 0.22:
                text += rng.choice(WORDS) * rng.randint(2, 8)
            elif roll < 0.27:
                text += _ideograph(rng) * rng.randint(1, 5)
            elif mixed and roll < 0.35:
                text += rng.choice(CJK_PUNCT + LATIN + SPACES)
            else:
                text += rng.choice(WORDS)
        out.append(text[:size])
    return out


KNOWN_TIES = [
    "呵" * 79, "啊" * 94, "好" * 105, "哈" * 124, "南" * 8, "专" * 43, "太多" * 43, "买买买",
    # 91 characters: 买买买 ties (买|买买, 买买|买) and the rest decides how the sums round
    "买买买去工信处中国科学院呃了买火锅超市小明一起火锅嘛科室明天专家人个行小明科室云计算吧了计算所云计算周末专家明天"
    "老铁超市啦天气好啊嗯嗯日本京都大学随便哈哈真打折科室吃瓜今天好吃火锅主",
]


@pytest.mark.slow
def test_rjieba_backend_equals_jieba_on_repetitions_and_long_blocks() -> None:
    # Before: 1,386 of 22,170 such texts differed (jieba-rs's dictionary total and HMM rounding; see
    # scoring/segmentation.py); expected: jieba.lcut itself.
    pytest.importorskip("rjieba", reason="the fast extra (rjieba) is not installed: pip install 'convbench[fast]'")
    if segmentation._rjieba() is None:
        pytest.skip("the installed rjieba is outside the verified range")
    texts = KNOWN_TIES + repetition_texts() + long_mixed_blocks(1500, seed=13)
    assert len(texts) >= 6_500 and max(map(len, texts)) == 300
    reference, fast = jieba_cutter("jieba"), jieba_cutter("rjieba")
    mismatches = [(t, reference(t), fast(t)) for t in texts if reference(t) != fast(t)]
    assert not mismatches, f"{len(mismatches)} differ, first: {mismatches[0]}"


# Short texts around a repeated character or unit: where jieba's HMM has exact ties (南南南南想, 我水水水热:
# ``B E B M E`` and ``B M E B E`` give the same emissions and transitions), which jieba-rs's copy of the
# HMM rounds its own way (31 of 4,554 such probes differed when only runs of 5 went to jieba).
PROBE_CHARS = "南水我想热好哈呵啊买真专的了是在有人这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家"
PROBE_CONTEXT = ["", "我", "想", "热", "个", "买", "的", "了", "是", "很", "a", "3", "，"]


def repeat_probes() -> list[str]:
    """Every character of PROBE_CHARS 2 to 4 times in a row, and every unit of two or three of them
    (taken in order) twice or three times in a row, each between every pair of PROBE_CONTEXT."""
    cores = [ch * n for ch in PROBE_CHARS for n in (2, 3, 4)]
    cores += [PROBE_CHARS[i:i + size] * times for size in (2, 3) for i in range(0, len(PROBE_CHARS) - size, size)
              for times in (2, 3)]
    return sorted({before + core + after for core in cores for before in PROBE_CONTEXT for after in PROBE_CONTEXT})


@pytest.mark.slow
def test_rjieba_backend_equals_jieba_on_repeat_probes() -> None:
    pytest.importorskip("rjieba", reason="the fast extra (rjieba) is not installed: pip install 'convbench[fast]'")
    if segmentation._rjieba() is None:
        pytest.skip("the installed rjieba is outside the verified range")
    probes = repeat_probes()
    reference, fast = jieba_cutter("jieba"), jieba_cutter("rjieba")
    assert len(probes) > 25_000 and {"南南南南想", "我水水水热"} <= set(probes)
    # the probes reach the ties: jieba-rs's own HMM splits some of them otherwise
    rjieba_hmm = segmentation._rjieba()
    assert sum(rjieba_hmm(t, True) != reference(t) for t in probes) >= 100
    mismatches = [(t, reference(t), fast(t)) for t in probes if reference(t) != fast(t)]
    assert not mismatches, f"{len(mismatches)} differ, first: {mismatches[0]}"


def test_rjieba_dictionary_total_is_jiebas() -> None:
    # jieba's total counts every line of dict.txt, jieba-rs each word once: the difference is what the
    # pad word adds back. Recomputed here from jieba's own dictionary.
    import os

    import jieba

    jieba.initialize()
    once: dict[str, int] = {}
    with open(os.path.join(os.path.dirname(jieba.__file__), "dict.txt"), encoding="utf-8") as lines:
        for line in lines:
            word, freq = line.split()[:2]
            once[word] = int(freq)
    assert jieba.dt.total - sum(once.values()) == segmentation.JIEBA_DUPLICATE_FREQ
    pad = segmentation.TOTAL_PAD_WORD  # never part of a text or block rjieba is given
    assert not segmentation._WHOLE_TEXT_SAFE.fullmatch(pad) and not segmentation.JIEBA_HAN.search(pad)
    pytest.importorskip("rjieba", reason="the fast extra (rjieba) is not installed: pip install 'convbench[fast]'")
    if segmentation._rjieba() is None:
        pytest.skip("the installed rjieba is outside the verified range")
    # the route alone (jieba without its HMM; a DAG tie, no HMM buffer in it): rjieba's, padded, is jieba's
    text = KNOWN_TIES[-1]
    assert segmentation._rjieba()(text, False) == jieba.lcut(text, HMM=False)


def test_repetitions_score_the_same_with_either_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    # distinct_2 of ["哈" * 124, "呵" * 79] was 5.06 with rjieba and 6.31 with jieba before.
    pytest.importorskip("rjieba", reason="the fast extra (rjieba) is not installed: pip install 'convbench[fast]'")
    scores = {}
    for name in ("jieba", "rjieba"):
        monkeypatch.setenv("CONVBENCH_SEGMENTER", name)
        nico_generation._tokenizer.cache_clear()
        scores[name] = score_generation(["哈" * 124, "呵" * 79], ["哈哈", "呵呵"], workers=1, tokenizer="jieba")
    nico_generation._tokenizer.cache_clear()
    assert scores["rjieba"]["signature"]["segmenter"] == "rjieba" and scores["jieba"]["signature"]["segmenter"] == "jieba"
    assert {k: v for k, v in scores["jieba"].items() if k != "signature"} == {
        k: v for k, v in scores["rjieba"].items() if k != "signature"}


def test_signature_names_the_segmenter(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import version

    monkeypatch.setenv("CONVBENCH_SEGMENTER", "jieba")
    nico_generation._tokenizer.cache_clear()
    try:
        sig = score_generation(["好的"], ["好的"], tokenizer="jieba")["signature"]  # characters are NICO's default
        assert {k: sig[k] for k in ("segmenter", "segmenter_version", "jieba_version")} == {
            "segmenter": "jieba", "segmenter_version": version("jieba"), "jieba_version": version("jieba")}
        assert "segmenter" not in score_generation(["好的"], ["好的"], tokenizer="char")["signature"]
        if segmentation._rjieba() is not None:
            monkeypatch.setenv("CONVBENCH_SEGMENTER", "rjieba")
            nico_generation._tokenizer.cache_clear()
            sig = score_generation(["好的"], ["好的"], tokenizer="jieba")["signature"]
            assert (sig["segmenter"], sig["segmenter_version"]) == ("rjieba", version("rjieba"))
    finally:
        nico_generation._tokenizer.cache_clear()


@pytest.mark.parametrize("text", [
    *KNOWN_TIES, "a_b", "COVID-19的疫苗", "v1.2.3版本", "3.5元太贵了吧", "2、3个人就够了", "我用C++和AT&T", "ab12.5%cd",
    "㐀我们鿖去𠀀吃豈", "\r\n你好\r\r\n", "ＯＫ１２３好的", "", " ", "👨‍👩‍👧一家人",
])
def test_rjieba_backend_equals_jieba_on_known_differences(text: str) -> None:
    pytest.importorskip("rjieba", reason="the fast extra (rjieba) is not installed: pip install 'convbench[fast]'")
    if segmentation._rjieba() is None:
        pytest.skip("the installed rjieba is outside the verified range")
    assert jieba_cutter("rjieba")(text) == jieba_cutter("jieba")(text)


def test_scores_are_the_same_with_either_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("rjieba", reason="the fast extra (rjieba) is not installed: pip install 'convbench[fast]'")
    texts = varied_sentences(600, seed=7)
    predictions, references = texts[:300], texts[300:]
    scores = {}
    for name in ("jieba", "rjieba"):
        monkeypatch.setenv("CONVBENCH_SEGMENTER", name)
        nico_generation._tokenizer.cache_clear()
        scores[name] = score_generation(predictions, references, workers=1)
    nico_generation._tokenizer.cache_clear()
    for out in scores.values():  # the signature names the backend; nothing else differs
        out["signature"] = {k: v for k, v in out["signature"].items() if k not in ("segmenter", "segmenter_version")}
    assert scores["jieba"] == scores["rjieba"]


def test_without_rjieba_jieba_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import jieba

    monkeypatch.setitem(sys.modules, "rjieba", None)  # import rjieba now raises ImportError
    segmentation._rjieba.cache_clear()
    try:
        assert backend() == "jieba"
        assert jieba_cutter() is jieba.lcut
        monkeypatch.setenv("CONVBENCH_SEGMENTER", "rjieba")
        with pytest.raises(ImportError, match="convbench\\[fast\\]"):
            backend()
    finally:
        segmentation._rjieba.cache_clear()


def test_unverified_rjieba_release_falls_back_to_jieba(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("rjieba", reason="the fast extra (rjieba) is not installed: pip install 'convbench[fast]'")
    monkeypatch.setattr(segmentation, "VERIFIED_RJIEBA", ((9, 0, 0), (10, 0, 0)))
    segmentation._rjieba.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="segmenting with jieba instead"):
            assert backend() == "jieba"
    finally:
        segmentation._rjieba.cache_clear()


def test_segmenter_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVBENCH_SEGMENTER", "jieba")
    assert backend() == "jieba"
    monkeypatch.setenv("CONVBENCH_SEGMENTER", "pkuseg")
    with pytest.raises(ValueError, match="CONVBENCH_SEGMENTER"):
        backend()
