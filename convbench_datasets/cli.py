"""The ``convbench`` command. Each subcommand is a thin layer over the Python API.

Errors the user can act on are printed as one line (``convbench: error: ...``) with exit code 1.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Sequence

from ._version import __version__
from .errors import ConvbenchError


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _positive_seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="convbench",
        description="Build, run and score conversation benchmarks (NC-Bench, NICO, CoCoEvalBench).",
    )
    parser.add_argument("--version", action="version", version=f"convbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser("list", help="benchmarks, their configs, row counts and licenses")

    build = commands.add_parser("build", help="build a benchmark into a Hub-layout dataset folder")
    build.add_argument("name", help="benchmark name (see `convbench list`)")
    build.add_argument("--out", required=True, help="folder to write (replaced if it is an earlier build)")
    build.add_argument("--sources", metavar="DIR", help="local mirror of the upstream files (default: $CONVBENCH_SOURCES, else download)")
    build.add_argument("--data-dir", metavar="DIR", help="user-supplied data, for benchmarks that need it")
    build.add_argument("--summarizer", metavar="SPEC", help="cocoeval: abstractive summaries by this model (default: extractive)")
    build.add_argument("--summarizer-base-url", metavar="URL", help="cocoeval: OpenAI-compatible server for --summarizer")
    build.add_argument("--no-progress", action="store_true", help="hide progress bars")
    agree = commands.add_parser("agreement", help="judge agreement: Cohen's kappa and % agreement of two raters' NC-Bench labels")
    agree.add_argument("rater_a", help="JSON Lines: id, set, and labels or judge_output (and passed, acceptable_labels or task)")
    agree.add_argument("rater_b", help="the same rows rated by the other rater")
    agree.add_argument("--label-mode", choices=["first", "set"], default="first",
                       help="compare each row's first label (default) or its whole label set")
    agree.add_argument("--bootstrap", type=_non_negative, default=1000, metavar="N", help="bootstrap resamples (default 1000)")
    agree.add_argument("--rules", choices=["paper", "released_script"], default="paper",
                       help="acceptable labels used when a row gives only set + task")
    agree.add_argument("--seed", type=int, default=0)
    agree.add_argument("--json", action="store_true", help="print the result as JSON")
    run = commands.add_parser("run", help="generate, judge and score a benchmark with a model")
    run.add_argument("name", choices=["nc", "nico", "cocoeval"], help="benchmark")
    run.add_argument("--config", default="all", help="nc: basic, rag, complex_request or all (default); cocoeval: a source or all")
    run.add_argument("--task", help="nico: open_domain, dialog_completion, identify_unnatural or rewrite_unnatural")
    run.add_argument("--shots", type=int, default=0, choices=[0, 3], help="nico: zero-shot (default) or 3-shot prompts")
    run.add_argument("--split", default="test", help="nico: the split to score (default test)")
    run.add_argument("--bertscore", metavar="MODEL", help="nico: add BERTScore F1 with this model (name or folder)")
    run.add_argument("--turns-per-call", type=int, choices=[1, 5, 30], default=5, help="cocoeval: turns simulated per model call")
    run.add_argument("--prompt", choices=["vanilla", "taxonomy"], default="vanilla", help="cocoeval: simulation prompt")
    run.add_argument("--taxonomy", metavar="FILE", help="cocoeval: your own behaviour taxonomy (YAML)")
    run.add_argument("--model", required=True, help="generator spec: hf:<path>, openai:<model>, baseline:silence|repeat")
    run.add_argument("--judge", help="nc: judge spec, same forms")
    run.add_argument("--out", required=True, help="run folder for records.jsonl and results.json")
    run.add_argument("--limit", type=_positive, help="only the first N rows")
    run.add_argument("--concurrency", type=_positive, help="parallel requests for openai backends (default 8)")
    run.add_argument("--max-new-tokens", type=_positive, help="generator token limit (default: nc 1024, nico 256)")
    run.add_argument("--judge-max-new-tokens", type=_positive, help="judge token limit (default: nc 128, cocoeval 1024)")
    run.add_argument("--base-url", help="OpenAI-compatible server for the model (and the judge, unless --judge-base-url)")
    run.add_argument("--judge-base-url", help="OpenAI-compatible server for the judge")
    run.add_argument("--api-key-env", help="environment variable holding the API key (default OPENAI_API_KEY)")
    run.add_argument("--timeout", type=_positive_seconds, help="seconds per request before a retry (default 120)")
    run.add_argument("--device", help="hf backends: cpu, cuda, cuda:1... (default: cuda if available)")
    run.add_argument("--dtype", help="hf backends: float32, bfloat16, float16 or auto (default)")
    run.add_argument("--batch-size", type=_positive, help="hf backends: prompts per batch (default 8)")
    run.add_argument("--judge-template", metavar="FILE", help="your own judge template (YAML: system, user, labels)")
    run.add_argument("--all-lines", action="store_true", help="judge the whole response, not only its first line")
    run.add_argument("--rules", choices=["paper", "released_script"], default="paper", help="acceptable-label rules")
    run.add_argument("--dataset", metavar="DIR", help="a folder from `convbench build` (default: build into the cache)")
    run.add_argument("--sources", metavar="DIR", help="upstream mirror for building the dataset")
    run.add_argument("--cache", metavar="FILE", help="response cache (default $CONVBENCH_CACHE/responses.sqlite)")
    run.add_argument("--no-progress", action="store_true")

    report = commands.add_parser("report", help="HTML report, figures and tables from run folders")
    report.add_argument("rundirs", nargs="+", metavar="RUNDIR")
    report.add_argument("--out", required=True, help="folder for report.html, figures/ and tables/")

    compare = commands.add_parser("compare", help="paired significance test of two NC-Bench runs on the same rows")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--resamples", type=_positive, default=1000)
    compare.add_argument("--seed", type=int, default=0)

    publish = commands.add_parser("publish", help="upload a built dataset (or, with `metric`, a metric Space) to the Hub")
    publish.add_argument("what", nargs="+", metavar="NAME", help="a benchmark name, or: metric METRIC_NAME")
    publish.add_argument("--repo-id", required=True, help="ORG/NAME on the Hub")
    publish.add_argument("--folder", help="the built dataset folder (default hub/NAME)")
    publish.add_argument("--private", action="store_true")

    metrics = commands.add_parser("metrics", help="install convbench's evaluate modules for offline bare-name loading")
    metrics.add_argument("action", choices=["install"])
    metrics.add_argument("names", nargs="*", help="metrics to install (default: all)")

    score = commands.add_parser("score", help="re-score a run folder from its records (no model calls)")
    score.add_argument("rundir")

    cache = commands.add_parser("cache", help="inspect or clear the response cache")
    cache.add_argument("action", choices=["stats", "clear"])
    cache.add_argument("--cache", metavar="FILE", help="cache file (default $CONVBENCH_CACHE/responses.sqlite)")
    cache.add_argument("--model", help="clear: only this model's entries (MODEL or BACKEND:MODEL, as stats shows)")
    return parser


def _backend_options(args: argparse.Namespace, base_url: str | None) -> dict:
    return {
        "base_url": base_url, "concurrency": args.concurrency, "api_key_env": args.api_key_env,
        "timeout": args.timeout, "device": args.device, "dtype": args.dtype, "batch_size": args.batch_size,
    }


def _cmd_run(args: argparse.Namespace) -> None:
    if args.name == "nico":
        return _cmd_run_nico(args)
    if args.name == "cocoeval":
        return _cmd_run_cocoeval(args)
    from .runner import run_nc

    if not args.judge:
        raise ConvbenchError("convbench run nc needs --judge SPEC")
    result = run_nc(
        model=args.model, judge=args.judge, out=args.out, config=args.config, limit=args.limit,
        max_new_tokens=args.max_new_tokens or 1024, judge_max_new_tokens=args.judge_max_new_tokens or 128,
        first_line_only=not args.all_lines, template=args.judge_template, rules=args.rules, cache=args.cache,
        dataset=args.dataset, sources=args.sources,
        backend_options=_backend_options(args, args.base_url),
        judge_options=_backend_options(args, args.judge_base_url or args.base_url),
        progress=not args.no_progress,
    )
    _print_results(result.results, result.path)


def _cmd_run_cocoeval(args: argparse.Namespace) -> None:
    from .runner.cocoeval_run import run_cocoeval

    if not args.judge:
        raise ConvbenchError("convbench run cocoeval needs --judge SPEC")
    result = run_cocoeval(
        model=args.model, judge=args.judge, out=args.out, config=args.config, split=args.split, limit=args.limit,
        turns_per_call=args.turns_per_call, prompt=args.prompt, taxonomy=args.taxonomy,
        max_new_tokens=args.max_new_tokens or 1024, judge_max_new_tokens=args.judge_max_new_tokens or 1024,
        dataset=args.dataset, sources=args.sources, cache=args.cache,
        backend_options=_backend_options(args, args.base_url),
        judge_options=_backend_options(args, args.judge_base_url or args.base_url), progress=not args.no_progress,
    )
    r = result.results
    print(f"cocoeval: {r['n_compared']} of {r['n']} instances compared; excluded {r['excluded']}")
    if "mismatch" in r:
        print(f"  mismatch {r['mismatch']:.1f}%  (0 = human frequencies reproduced)")
        for name in r["model_mean"]:
            print(f"  {name:<24} model {r['model_mean'][name]:6.2f}   human {r['human_mean'][name]:6.2f}")
    print(f"wrote {result.path}/records.jsonl and {result.path}/results.json")


def _cmd_run_nico(args: argparse.Namespace) -> None:
    import json

    from .runner import run_nico

    if not args.task:
        raise ConvbenchError("convbench run nico needs --task (open_domain, dialog_completion, identify_unnatural, rewrite_unnatural)")
    result = run_nico(
        task=args.task, model=args.model, out=args.out, shots=args.shots, split=args.split, limit=args.limit,
        max_new_tokens=args.max_new_tokens or 256, dataset=args.dataset, cache=args.cache,
        bertscore=bool(args.bertscore), bertscore_model=args.bertscore or "bert-base-chinese",
        backend_options=_backend_options(args, args.base_url), progress=not args.no_progress,
    )
    scores = {k: round(v, 2) for k, v in result.results.items() if isinstance(v, float)}
    print(f"nico {args.task} ({args.shots}-shot, {result.results['n']} examples): {json.dumps(scores, ensure_ascii=False)}")
    print(f"wrote {result.path}/records.jsonl and {result.path}/results.json")


def _print_results(results: dict, path: object, rescored: bool = False) -> None:
    if "accuracy" not in results:  # a NICO or CoCoEval run: print its scores as they are
        import json

        scores = {k: round(v, 2) for k, v in results.items() if isinstance(v, float)}
        print(f"{results.get('n')} examples: {json.dumps(scores, ensure_ascii=False)}")
        print(f"wrote {path}/results.json")
        return
    print(f"accuracy {results['accuracy']:.1f}% over {results['n']} rows ({results['unparsed']} unparsed judge answers)")
    for name, accuracy in results.get("per_set", {}).items():
        print(f"  {name:<20} {accuracy:6.1f}%")
    stats = results.get("stats", {})
    if stats and not rescored:
        print(f"model calls {stats.get('model_calls')}, judge calls {stats.get('judge_calls')} (the rest from cache)")
    print(f"wrote {path}/records.jsonl and {path}/results.json")


def _cmd_report(args: argparse.Namespace) -> None:
    try:
        from .report import write_report
    except ImportError as err:
        raise ConvbenchError(f"reports need the report extra: pip install 'convbench[report]' ({err})") from None
    print(f"wrote {write_report(args.rundirs, args.out)}")


def _cmd_compare(args: argparse.Namespace) -> None:
    from .report.runs import load_runs
    from .scoring.paired import compare_nc_runs

    a, b = load_runs([args.run_a, args.run_b])
    if a.benchmark != "nc" or b.benchmark != "nc":
        raise ConvbenchError(f"convbench compare takes two NC-Bench runs; got {a.benchmark} and {b.benchmark}")
    for key in ("dataset_fingerprint", "judge", "rules"):
        if a.signature.get(key) != b.signature.get(key):
            print(f"warning: the runs differ in {key}: {a.signature.get(key)!r} vs {b.signature.get(key)!r}", file=sys.stderr)
    result = compare_nc_runs(a.records, b.records, n_resamples=args.resamples, seed=args.seed)
    print(f"{a.name} - {b.name} (accuracy points, {result['overall']['n']} rows)")
    for name, test in [("overall", result["overall"]), *result["per_set"].items(), *result["per_set_pattern"].items()]:
        flag = "" if test["significant"] else "  n.s."
        print(f"  {name:<24} {test['difference']:+6.1f}  95% [{test['interval'][0]:+.1f}, {test['interval'][1]:+.1f}]"
              f"  p(bootstrap) {test['p_bootstrap']:.3f}  p(randomisation) {test['p_randomization']:.3f}{flag}")


def _cmd_publish(args: argparse.Namespace) -> None:
    from .publish import publish_dataset, publish_metric

    if args.what[0] == "metric":
        if len(args.what) != 2:
            raise ConvbenchError("usage: convbench publish metric METRIC_NAME --repo-id ORG/NAME")
        print(f"published metric {args.what[1]}: {publish_metric(args.what[1], args.repo_id, private=args.private)}")
        return
    if len(args.what) != 1:
        raise ConvbenchError("usage: convbench publish NAME --repo-id ORG/NAME [--folder DIR]")
    folder = args.folder or f"hub/{args.what[0]}"
    print(f"published {folder}: {publish_dataset(folder, args.repo_id, private=args.private)}")


def _cmd_metrics(args: argparse.Namespace) -> None:
    from .publish import install_metrics

    for path in install_metrics(args.names or None):
        print(f"installed {path}")


def _cmd_score(args: argparse.Namespace) -> None:
    from .runner import score_run

    result = score_run(args.rundir)
    _print_results(result.results, result.path, rescored=True)


def _cmd_cache(args: argparse.Namespace) -> None:
    from .runner import ResponseCache

    with ResponseCache(args.cache) as cache:
        if args.action == "clear":
            deleted = cache.clear(args.model)
            print(f"deleted {deleted} entries from {cache.path}")
            if deleted == 0 and args.model:
                print(f"warning: no entries for model {args.model!r}; `convbench cache stats` lists them", file=sys.stderr)
            return
        stats = cache.stats()
    print(f"{stats['path']}: {stats['entries']} entries, {stats['bytes']} bytes")
    for m in stats["models"]:
        print(f"  {m['backend']}:{m['model']}  {m['entries']} entries, {m['prompt_tokens']} prompt + "
              f"{m['completion_tokens']} completion tokens")


def _cmd_agreement(args: argparse.Namespace) -> None:
    import json

    from .scoring.agreement import agreement_files

    result = agreement_files(
        args.rater_a, args.rater_b, label_mode=args.label_mode, n_bootstrap=args.bootstrap, seed=args.seed,
        rules=args.rules,
    )
    print(json.dumps(result.to_dict(), indent=2, allow_nan=False) if args.json else "\n".join(result.lines()))


def _cmd_list(args: argparse.Namespace) -> None:
    from .api import list_benchmarks

    for bench in list_benchmarks():
        print(f"{bench.name}: {bench.title}  [license: {bench.license}; {bench.needs}]")
        for config, splits in bench.configs.items():
            print(f"  {config:<20} " + "  ".join(f"{s}: {'?' if n is None else n} rows" for s, n in splits.items()))


def _cmd_build(args: argparse.Namespace) -> None:
    from .api import build

    options = {}
    if args.summarizer:
        if args.name != "cocoeval":
            raise ConvbenchError("--summarizer applies to cocoeval only")
        options = {"summarizer": args.summarizer,
                   "summarizer_options": {"base_url": args.summarizer_base_url} if args.summarizer_base_url else {}}
    summary = build(args.name, args.out, sources=args.sources, data_dir=args.data_dir, progress=not args.no_progress,
                    **options)
    print("\n".join(summary.lines()))


COMMANDS = {
    "list": _cmd_list,
    "build": _cmd_build,
    "run": _cmd_run,
    "score": _cmd_score,
    "report": _cmd_report,
    "publish": _cmd_publish,
    "metrics": _cmd_metrics,
    "compare": _cmd_compare,
    "cache": _cmd_cache,
    "agreement": _cmd_agreement,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        COMMANDS[args.command](args)
    except (ConvbenchError, OSError, ValueError, sqlite3.Error) as err:
        if os.environ.get("CONVBENCH_DEBUG"):
            raise
        print(f"convbench: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("convbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `convbench list | head`: the reader left; not an error
        sys.stderr.close()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
