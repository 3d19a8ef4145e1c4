"""``convbench agreement``, ``report``, ``compare`` and ``import-inspect``: results read from run folders, logs and
annotation files.
"""


import argparse
from typing import Any

from .._console import warn
from ..counts import MAX_RESAMPLES, MAX_SEED, count_flag
from ..scoring.paired import CORRECTIONS
from ..settings import positive as _positive
from ..errors import ConvbenchError
from ._parsing import _command
from ..engine.error_rate import TooManyErrors
from .run import _add_limit_flags, _limits, _print_run


def add_agreement(commands: Any) -> None:
    """``convbench agreement``'s parser."""
    agree = _command(commands, "agreement", "judge agreement: Cohen's kappa and % agreement of two raters' NC-Bench labels; "
                     "with `cocoeval`, leave-one-out Spearman of a CoCoEval run's judge and of annotators with annotators")
    agree.usage = "%(prog)s [nc] A.jsonl B.jsonl [options]  |  %(prog)s cocoeval HUMANS.jsonl RUNDIR [options]"
    agree.add_argument("inputs", nargs="+", metavar="INPUT",
                       help="NC-Bench: two raters' JSON Lines, A and B (id, set, and labels or judge_output; and passed, "
                            "acceptable_labels or task), the same rows in both; CoCoEval: the word cocoeval, the human "
                            "ratings (JSON Lines, format in the CoCoEvalBench card) and a `convbench run cocoeval` folder")
    agree.add_argument("--label-mode", choices=["first", "set"],
                       help="nc: compare each row's first label (default) or its whole label set")
    agree.add_argument("--bootstrap", type=count_flag(0, MAX_RESAMPLES), default=1000, metavar="N",
                       help=f"bootstrap resamples (default 1000, at most {MAX_RESAMPLES:,})")
    agree.add_argument("--rules", choices=["paper", "released_script"],
                       help="nc: acceptable labels used when a row gives only set + task (default paper)")
    agree.add_argument("--taxonomy", metavar="FILE",
                       help="cocoeval: the run's taxonomy file, for runs whose signature does not record its groups")
    agree.add_argument("--bootstrap-unit", choices=["continuation", "source_conversation"],
                       help="cocoeval: what the bootstrap resamples: each rated continuation (default, the paper's "
                            "conversations) or whole source conversations (meetings, debates)")
    agree.add_argument("--seed", type=count_flag(0, MAX_SEED), default=0)
    agree.add_argument("--json", action="store_true", help="print the result as JSON")


def add_report(commands: Any) -> None:
    """``convbench report``'s parser."""
    report = _command(commands, "report", "HTML report, figures and tables from run folders")
    report.add_argument("rundirs", nargs="+", metavar="RUNDIR")
    report.add_argument("--out", required=True, help="folder for report.html, figures/ and tables/")
    report.add_argument("--no-reference", action="store_true",
                        help="nc: leave out the paper's published results (shown beside your runs by default)")


def add_compare(commands: Any) -> None:
    """``convbench compare``'s parser."""
    compare = _command(commands, "compare", "paired significance test of two NC-Bench runs on the same rows")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--resamples", type=count_flag(1, MAX_RESAMPLES), default=1000,
                         help=f"bootstrap and randomisation resamples (default 1000, at most {MAX_RESAMPLES:,})")
    compare.add_argument("--seed", type=count_flag(0, MAX_SEED), default=0)
    compare.add_argument("--correction", choices=CORRECTIONS, default="holm",
                         help="adjust the p-values for the comparisons printed together: holm (default, the "
                              "family-wise error), bh (Benjamini-Hochberg, the false discovery rate) or none")


def add_import_inspect(commands: Any) -> None:
    """``convbench import-inspect``'s parser."""
    imported = _command(commands, "import-inspect", "a run folder (records.jsonl, results.json) from an inspect_ai log "
                                                    "of a convbench task, for score, report and compare")
    imported.add_argument("log", help="an inspect log (.eval or .json) of inspect eval convbench/nc|nico|cocoeval")
    imported.add_argument("--out", required=True, help="run folder to write (missing, empty or an earlier run folder)")
    imported.add_argument("--epoch", type=_positive, default=1, help="the log's epoch that becomes the run (default 1)")
    _add_limit_flags(imported)


def _cmd_agreement(args: argparse.Namespace) -> None:
    """``[nc] A B``: NC-Bench label agreement; ``cocoeval HUMANS RUNDIR``: CoCoEval judge-human agreement."""
    import json

    inputs = list(args.inputs)
    form = inputs.pop(0) if inputs[0] in ("nc", "cocoeval") else "nc"  # a file named so: ./nc
    if len(inputs) != 2:
        raise ConvbenchError("usage: convbench agreement [nc] A.jsonl B.jsonl, or convbench agreement cocoeval "
                             "HUMANS.jsonl RUNDIR")
    if form == "cocoeval":
        from ..cocoeval.cocoeval_agreement import cocoeval_agreement

        for option in ("label_mode", "rules"):
            if getattr(args, option) is not None:
                raise ConvbenchError(f"--{option.replace('_', '-')} applies to NC-Bench agreement only")
        result: Any = cocoeval_agreement(inputs[0], inputs[1], taxonomy=args.taxonomy, n_bootstrap=args.bootstrap,
                                         seed=args.seed, bootstrap_unit=args.bootstrap_unit or "continuation")
    else:
        from ..nc.agreement import agreement_files

        for option in ("taxonomy", "bootstrap_unit"):
            if getattr(args, option) is not None:
                raise ConvbenchError(f"--{option.replace('_', '-')} applies to `convbench agreement cocoeval` only")
        result = agreement_files(
            inputs[0], inputs[1], label_mode=args.label_mode or "first", n_bootstrap=args.bootstrap, seed=args.seed,
            rules=args.rules or "paper",
        )
    print(json.dumps(result.to_dict(), indent=2, allow_nan=False) if args.json else "\n".join(result.lines()))


def _cmd_report(args: argparse.Namespace) -> None:
    try:
        from ..report import write_report
    except ImportError as err:
        raise ConvbenchError(f"reports need the report extra: pip install 'convbench[report]' ({err})") from None
    print(f"wrote {write_report(args.rundirs, args.out, reference=not args.no_reference)}")


def _cmd_compare(args: argparse.Namespace) -> None:
    from ..report.runs import load_runs
    from ..nc.compare import compare_nc_runs

    a, b = load_runs([args.run_a, args.run_b])
    if a.benchmark != "nc" or b.benchmark != "nc":
        raise ConvbenchError(f"convbench compare takes two NC-Bench runs; got {a.benchmark} and {b.benchmark}")
    from ..nc.run import run_parsing

    for key in ("dataset_fingerprint", "judge", "rules", "parsing", "judge_template", "judge_template_sha256",
                "fill_request_details", "first_line_only"):
        # the reading as each run was scored (older names and a reading not recorded: what they meant)
        seen = [run_parsing(r.signature) if key == "parsing" else r.signature.get(key) for r in (a, b)]
        if seen[0] != seen[1]:
            warn(f"the runs differ in {key}: {seen[0]!r} vs {seen[1]!r}")
    from ..scoring.paired import adjust_family

    result = compare_nc_runs(a.records, b.records, n_resamples=args.resamples, seed=args.seed)
    family = [("overall", result["overall"]), *result["per_set"].items(), *result["per_set_pattern"].items()]
    adjust_family([test for _, test in family], args.correction)
    how = {"holm": "Holm-adjusted over", "bh": "Benjamini-Hochberg-adjusted over", "none": "unadjusted, of"}
    print(f"{a.name} - {b.name} (accuracy points, {result['overall']['n']} rows; p-values {how[args.correction]} "
          f"the {len(family)} comparisons below; n.s.: not significant at 5%)")
    for name, test in family:
        if test["identical"]:
            print(f"  {name:<24} n {test['n']:<4} identical")  # the same pass/fail on every row: nothing to test
            continue
        flag = "" if test["significant"] else "  n.s."
        print(f"  {name:<24} n {test['n']:<4} {test['difference']:+6.1f}  95% [{test['interval'][0]:+.1f}, "
              f"{test['interval'][1]:+.1f}]  p(bootstrap) {test['p_bootstrap']:.3f}  p(randomisation) "
              f"{test['p_randomization']:.3f}  p(adjusted) {test['p_adjusted']:.3f}{flag}")


def _cmd_import_inspect(args: argparse.Namespace) -> None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise ConvbenchError("import-inspect needs inspect_ai: pip install \"convbench[inspect]\"") from None
    from ..runs.api import import_inspect_log

    try:
        result = import_inspect_log(args.log, args.out, epoch=args.epoch, **_limits(args))
    except TooManyErrors as err:  # the folder is written: show what it holds, then fail with the count
        if err.result is not None:
            _print_run(err.result, rescored=True, records_written=True)
        raise
    _print_run(result, rescored=True, records_written=True)
