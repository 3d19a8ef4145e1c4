"""CoCoEvalBench's section of ``convbench report``: behaviour frequencies (its Figure 3 and Table 11
as bars), the overall ratings (its Table 4 layout) and convbench's mismatch with its noise floor.
"""

from __future__ import annotations

import html
from pathlib import Path

from .report_figures import cocoeval_figure, cocoeval_source_figure
from ..report.html import html_table, save_figure, save_table
from ..report.runs import Run
from .report_tables import (_compared, cocoeval_paper_differences, cocoeval_ratings_table, cocoeval_source_table,
                            cocoeval_table)

MEANS = {"mean": "n"}  # a long table's mean, computed from its row's n instances (marked under 10)


def section(runs: list[Run], out: Path, reference: bool = True) -> list[str]:
    """CoCoEvalBench's part of the page (``reference`` changes nothing: its paper setup is flagged per run)."""
    import pandas as pd

    labels = {r.name: r.label for r in runs}  # a run of part of the rows says so wherever it is named
    frame = cocoeval_table(runs, with_n=True)
    frame["who"] = frame["who"].map(lambda who: labels.get(who, who))
    save_table(frame, out / "tables", "cocoeval_frequencies", counts=MEANS)
    parts = ["<h2>CoCoEvalBench</h2>"]
    for run in runs:
        differences = cocoeval_paper_differences(run)
        if differences:
            parts.append(f"<p class='warning not-paper-setup'>{html.escape(run.name)}: not the paper's setup "
                         f"({html.escape('; '.join(differences))}).</p>")
    if len(frame):
        figure = save_figure(cocoeval_figure(frame), out / "figures", "cocoeval_behaviours")
        parts.append(f"<h3>All sources (the paper's Figure 3)</h3><img alt='Behaviour frequencies' src='{figure}'>")
    by_source = cocoeval_source_table(runs, with_n=True)
    if len(by_source):
        by_source["who"] = by_source["who"].map(lambda who: labels.get(who, who))
        save_table(by_source, out / "tables", "cocoeval_frequencies_per_source", counts=MEANS)
        figure = save_figure(cocoeval_source_figure(by_source), out / "figures", "cocoeval_behaviours_per_source")
        parts.append(f"<h3>Per source (the paper's Table 11, as bars)</h3><img alt='Behaviour frequencies per source' "
                     f"src='{figure}'>")
    ratings = cocoeval_ratings_table(runs, with_n=True).rename(index=labels)
    if len(ratings):
        scales = {c: "n" for c in ratings.columns if c != "n" and not str(c).endswith((" low", " high"))}
        save_table(ratings, out / "tables", "cocoeval_ratings", counts=scales)
        parts += ["<h3>Overall ratings (1-10; the paper's Table 4 layout)</h3><p>Mean judge rating over the compared "
                  "continuations (n), with percentile-bootstrap 95% intervals (low, high).</p>",
                  html_table(ratings, counts=scales)]
    rows = []
    for run in runs:
        if "mismatch" in run.results:
            rows.append({"who": run.label, "scale": "mismatch (%, convbench's)", "mean": run.results["mismatch"],
                         "low": run.results.get("intervals", {}).get("mismatch", [None, None])[0],
                         "high": run.results.get("intervals", {}).get("mismatch", [None, None])[1],
                         "n": _compared(run)})
            # the noise floor beside it: what a simulator identical to the humans would score (older runs: n/a)
            rows.append({"who": run.label, "scale": "mismatch noise floor (%, two halves of its human data)",
                         "mean": run.results.get("mismatch_floor"), "low": None, "high": None, "n": _compared(run)})
    overall = pd.DataFrame(rows, columns=["who", "scale", "mean", "low", "high", "n"]).drop_duplicates()
    overall["n"] = overall["n"].astype("Int64")
    save_table(overall, out / "tables", "cocoeval_overall", counts=MEANS)
    parts += ["<h3>Mismatch</h3>", html_table(overall, counts=MEANS), _mismatch_note(runs),
              "<h3>Frequencies</h3><p>n: the compared instances behind each mean.</p>", html_table(frame, counts=MEANS)]
    return parts


def _mismatch_note(runs: list[Run]) -> str:
    """What the mismatch is (convbench's, with a noise floor) and each run's cut simulation replies."""
    cuts = "; ".join(f"{html.escape(r.name)}: {r.results.get('simulation_cut_replies', 0)} cut replies, "
                     f"{r.results.get('excluded', {}).get('simulation_cut', 0)} instances excluded" for r in runs)
    return ("<p>The mismatch is convbench's addition, not a statistic of the CoCoEval paper: total absolute "
            "difference of the per-type means over the total human mean. Sampling noise keeps it above 0 even "
            "for a simulator identical to the humans; the floor row estimates that level from two halves of the "
            "human data. Simulation replies cut at the token limit (asked again once with twice the limit; a "
            f"second cut excludes the instance): {cuts}.</p>")
