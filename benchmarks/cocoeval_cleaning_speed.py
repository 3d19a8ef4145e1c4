"""CoCoEval's rule-based text cleaning on every QMSum and IQ2 transcript, beside the plain approach.

The plain approach is how convbench cleaned before (one regex substitution per rule per turn, each
pattern free to start at any character, ``\\s+`` where the text has single spaces), written out here
with today's rules. The library's ``clean_texts`` must give the same texts and the same counts; the
target is at least 3x faster by CPU time (both run in turn, round after round, in one process; wall time
beside it). The sources come from a mirror (``--sources DIR`` or
``CONVBENCH_SOURCES``), else they are downloaded.

Usage: python benchmarks/cocoeval_cleaning_speed.py [--sources DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import zipfile
from collections import Counter

from convbench_datasets._resources import read_yaml
from convbench_datasets.cocoeval import cleaning
from convbench_datasets.cocoeval.conversations import iq2_source, pins, qmsum_sources
from convbench_datasets.sources import fetch

from timing import interleaved, verdict  # benchmarks/timing.py (this folder is on sys.path when a script runs)

# The plain approach's patterns (the markers, stage directions and page headers are the library's own:
# they were never the slow part).
PLAIN_UNINTELLIGIBLE = re.compile(r"(?<!\S)@(?:\s+@)*(?!\S)")
PLAIN_SPACES = re.compile(r"\s{2,}|[^\S ]")  # runs, and any lone whitespace but a space
PLAIN_SPACED = re.compile(r"\s+([,.?!;:%])(?!\d)")
PLAIN_CLITIC = re.compile(r"(\w)\s+('(?:s|re|ve|ll|d|m)|n't)\b", re.IGNORECASE)
PLAIN_HYPHEN = re.compile(r"(\w)\s+-\s+(?=\w)")


def plain_clean_text(text: str, counts: Counter, tokenised: bool, headers: re.Pattern[str] | None) -> str:
    rules = [("markers", cleaning._MARKER, " "), ("unintelligible", PLAIN_UNINTELLIGIBLE, " "),
             ("stage_directions", cleaning._STAGE, " ")]
    if headers is not None:
        rules.append(("page_headers", headers, " "))
    for rule, pattern, replacement in rules:
        text, n = pattern.subn(replacement, text)
        counts[rule] += n
    collapsed = PLAIN_SPACES.sub(" ", text).strip()
    if collapsed != text:
        counts["whitespace"] += 1
    text = collapsed
    rules = [("spaced_punctuation", PLAIN_SPACED, r"\1"), ("spaced_contractions", PLAIN_CLITIC, r"\1\2")]
    if tokenised:
        rules.append(("spaced_hyphens", PLAIN_HYPHEN, r"\1-"))
    for rule, pattern, replacement in rules:
        text, n = pattern.subn(replacement, text)
        counts[rule] += n
    return text


def transcripts(sources_dir: str | None) -> list[tuple[list[str], bool, re.Pattern[str] | None]]:
    """(turn texts, tokenised, page-header pattern) per meeting or debate, as the build reads them."""
    meetings = []
    for src in qmsum_sources():
        data = json.loads(fetch(src, sources_dir=sources_dir, progress=False).read_text(encoding="utf-8"))
        meetings.append(([t["content"] for t in data["meeting_transcripts"]], True, None))
    archive = fetch(iq2_source(), sources_dir=sources_dir, progress=False)
    with zipfile.ZipFile(io.BytesIO(archive.read_bytes())) as z:
        debates = json.loads(z.read(pins()["iq2"]["member"]))
    headers = read_yaml("convbench_datasets.cocoeval", "iq2_page_headers.yaml")
    inline = read_yaml("convbench_datasets.cocoeval", "iq2_inline_speakers.yaml")
    for key in sorted(debates):
        texts = [text for turn in debates[key]["transcript"] if turn["segment"] == 1
                 for _, text in cleaning.split_inline_speakers(turn["speaker"], turn["paragraphs"], Counter(),
                                                               inline.get(key))]
        meetings.append((texts, False, cleaning.page_header_pattern(headers.get(key, []))))
    return meetings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", default=os.environ.get("CONVBENCH_SOURCES"), help="mirror folder")
    parser.add_argument("--repeat", type=int, default=3, help="median of this many interleaved runs of each")
    args = parser.parse_args()
    meetings = transcripts(args.sources)

    def plain() -> tuple[list[list[str]], Counter]:
        counts: Counter = Counter()
        return [[plain_clean_text(t, counts, tok, headers) for t in texts] for texts, tok, headers in meetings], counts

    def ours() -> tuple[list[list[str]], Counter]:
        counts: Counter = Counter()
        return [cleaning.clean_texts(texts, counts, tokenised=tok, page_headers=headers)
                for texts, tok, headers in meetings], counts

    timings, results = interleaved({"plain": plain, "ours": ours}, args.repeat)
    (plain_texts, plain_counts), (our_texts, our_counts) = results["plain"], results["ours"]
    assert our_texts == plain_texts, "cleaned texts differ"
    assert +our_counts == +plain_counts, f"counts differ: {our_counts} vs {plain_counts}"
    turns, chars = sum(len(m[0]) for m in meetings), sum(len(t) for m in meetings for t in m[0])
    print(f"{len(meetings)} transcripts, {turns} turns, {chars:,} characters; identical texts and counts:")
    print("  " + ", ".join(f"{rule}={our_counts[rule]}" for rule in cleaning.RULES if our_counts[rule]))
    ours_t, plain_t = timings["ours"], timings["plain"]
    speedup = plain_t.cpu / ours_t.cpu
    print(f"rule-based cleaning (text rules): convbench {ours_t.cpu:.2f} s CPU ({ours_t.wall:.2f} s wall), plain "
          f"{plain_t.cpu:.2f} s CPU ({plain_t.wall:.2f} s wall): {speedup:.1f}x faster by CPU "
          f"({plain_t.wall / ours_t.wall:.1f}x wall); target >= 3x: {verdict(speedup, 3)}")


if __name__ == "__main__":
    main()
