"""``convbench list``, ``build``, ``install``, ``publish``, ``metrics``, ``export`` and ``lm-eval-path``: the datasets and
metrics as files.
"""


import argparse
from typing import Any

from .._console import warn
from ..counts import MAX_SEED, count_flag
from ..errors import ConvbenchError
from ..runs.run_config import flag_rate as _error_rate
from ._parsing import _command
from .roles import _params


def add_list(commands: Any) -> None:
    """``convbench list``'s parser."""
    _command(commands, "list", "benchmarks, their configs, row counts and licenses")


def add_build(commands: Any) -> None:
    """``convbench build``'s parser."""
    build = _command(commands, "build", "build a benchmark into a Hub-layout dataset folder")
    build.add_argument("name", help="benchmark name (see `convbench list`)")
    build.add_argument("--out", required=True, help="folder to write (replaced if it is an earlier build)")
    build.add_argument("--sources", metavar="DIR", help="local mirror of the upstream files (default: $CONVBENCH_SOURCES, else download)")
    build.add_argument("--data-dir", metavar="DIR", help="user-supplied data, for benchmarks that need it")
    build.add_argument("--summarizer", metavar="SPEC", help="cocoeval: abstractive summaries by this model (default: extractive)")
    build.add_argument("--summarizer-base-url", metavar="URL", help="cocoeval: OpenAI-compatible server for --summarizer")
    build.add_argument("--cleaner", metavar="SPEC",
                       help="cocoeval: this model cleans QMSum Product and Academic after the rules, as the paper (default: rules only)")
    build.add_argument("--cleaner-base-url", metavar="URL", help="cocoeval: OpenAI-compatible server for --cleaner")
    build.add_argument("--metadata-model", metavar="SPEC",
                       help="cocoeval: this model writes every row's setting, participants' roles and goals (default: from the sources)")
    build.add_argument("--metadata-model-base-url", metavar="URL", help="cocoeval: OpenAI-compatible server for --metadata-model")
    for stage, flag in (("summarizer", "--summarizer"), ("cleaner", "--cleaner"), ("metadata_model", "--metadata-model")):
        build.add_argument(f"{flag}-param", action="append", metavar="KEY=VALUE", dest=f"{stage}_param",
                           help=f"cocoeval: a request field for {flag} (as convbench run --param); repeat for more")
    build.add_argument("--cache", metavar="FILE",
                       help="cocoeval: response cache of the model-made stages (default $CONVBENCH_CACHE/responses.sqlite)")
    build.add_argument("--retry-errors", action="store_true",
                       help="cocoeval: ask the model-made stages again the prompts that ended in a per-row error in an "
                            "earlier build (default: record the error again, the rule-made value kept)")
    build.add_argument("--max-error-rate", type=_error_rate, metavar="SHARE",
                       help="cocoeval: the share of a model-made stage's prompts that may end in an error (default "
                            "0.05, i.e. 5%%): with more, the build stops, exit 1, with their count")
    build.add_argument("--no-progress", action="store_true", help="hide progress bars")


def add_install(commands: Any) -> None:
    """``convbench install``'s parser."""
    install = _command(commands, "install", "make load_dataset(\"convbench/NAME\") work offline on this machine")
    install.add_argument("name", help="benchmark name (see `convbench list`)")
    install.add_argument("--dataset", metavar="DIR", help="a folder from `convbench build` (default: build into the cache)")
    install.add_argument("--sources", metavar="DIR", help="upstream mirror for building the dataset")
    install.add_argument("--force", action="store_true",
                         help="install even beside a convbench/NAME that convbench did not install (kept, never deleted)")
    install.add_argument("--no-progress", action="store_true", help="hide progress bars")


def add_publish(commands: Any) -> None:
    """``convbench publish``'s parser."""
    publish = _command(commands, "publish", "upload a built dataset (or, with `metric`, a metric Space) to the Hub")
    publish.add_argument("what", nargs="+", metavar="NAME", help="a benchmark name, or: metric METRIC_NAME")
    publish.add_argument("--repo-id", required=True, help="ORG/NAME on the Hub")
    publish.add_argument("--folder", help="the built dataset folder (default hub/NAME)")
    publish.add_argument("--private", action="store_true")


def add_metrics(commands: Any) -> None:
    """``convbench metrics``'s parser."""
    metrics = _command(commands, "metrics", "install convbench's evaluate modules for offline loading as convbench/NAME, "
                                            "or export self-contained copies that need no convbench")
    metrics.add_argument("action", choices=["install", "export"])
    metrics.add_argument("names", nargs="*", help="metrics to install or export (default: all)")
    metrics.add_argument("--out", metavar="DIR", help="export: write DIR/NAME/ per metric (evaluate.load(\"DIR/NAME\"))")


def add_export(commands: Any) -> None:
    """``convbench export``'s parser."""
    export = _command(commands, "export", "write training data from a benchmark: cocoeval-sft, chat-format JSON Lines "
                                          "for fine-tuning a simulator on CoCoEval's train split")
    export.add_argument("what", choices=["cocoeval-sft"], help="what to write")
    export.add_argument("--turns-per-call", type=int, choices=[1, 5, 30], required=True,
                        help="turns the simulator writes per call (1 and 5: from a seeded random turn of the reference)")
    export.add_argument("--out", required=True, metavar="FILE",
                        help="JSON Lines file to write, with FILE.convbench.json beside it (a file convbench did not "
                             "write is refused)")
    export.add_argument("--config", default="all", help="a source or all (default)")
    export.add_argument("--prompt", choices=["vanilla", "taxonomy"], default="vanilla", help="the simulation prompt")
    export.add_argument("--taxonomy", metavar="FILE", help="your behaviour taxonomy (YAML), for --prompt taxonomy")
    export.add_argument("--seed", type=count_flag(0, MAX_SEED), default=0, help="seed of the random start turns (default 0)")
    export.add_argument("--no-repetition-countermeasure", action="store_true",
                        help="prompts and targets without the paper's copy of the last 5 turns first (the runner's "
                             "default has it; use this for runs with --no-repetition-countermeasure)")
    export.add_argument("--dataset", metavar="DIR", help="a folder from `convbench build` (default: build into the cache)")
    export.add_argument("--sources", metavar="DIR", help="upstream mirror for building the dataset")


def add_lm_eval_path(commands: Any) -> None:
    """``convbench lm-eval-path``'s parser."""
    _command(commands, "lm-eval-path", "the folder of convbench's lm-eval task configs (lm_eval --include_path)")


def _cmd_list(args: argparse.Namespace) -> None:
    from ..api import list_benchmarks

    for bench in list_benchmarks():
        print(f"{bench.name}: {bench.title}  [license: {bench.license}; {bench.needs}]")
        for config, splits in bench.configs.items():
            print(f"  {config:<20} " + "  ".join(f"{s}: {'?' if n is None else n} rows" for s, n in splits.items()))


def _cmd_build(args: argparse.Namespace) -> None:
    from ..api import build

    options: dict[str, Any] = {}
    for stage in ("summarizer", "cleaner", "metadata_model"):  # cocoeval's model-made stages
        spec, base_url = getattr(args, stage), getattr(args, f"{stage}_base_url")
        if spec or base_url:
            if args.name != "cocoeval":
                raise ConvbenchError(f"--{stage.replace('_', '-')} applies to cocoeval only")
            if not spec:
                raise ConvbenchError(f"--{stage.replace('_', '-')}-base-url needs --{stage.replace('_', '-')}")
            options[stage] = spec
            options[f"{stage}_options"] = {"base_url": base_url} if base_url else {}
        flag = f"--{stage.replace('_', '-')}-param"
        params = _params(getattr(args, f"{stage}_param"), flag)
        if params:
            if args.name != "cocoeval" or not spec:
                raise ConvbenchError(f"{flag} needs --{stage.replace('_', '-')} (cocoeval)")
            options[f"{stage}_options"]["params"] = params
    for flag, value in (("--cache", args.cache), ("--retry-errors", args.retry_errors),
                        ("--max-error-rate", args.max_error_rate)):
        if value not in (None, False):
            if args.name != "cocoeval":
                raise ConvbenchError(f"{flag} applies to cocoeval's model-made stages only")
            options[flag.lstrip("-").replace("-", "_")] = value
    summary = build(args.name, args.out, sources=args.sources, data_dir=args.data_dir, progress=not args.no_progress,
                    **options)
    print("\n".join(summary.lines()))


def _cmd_install(args: argparse.Namespace) -> None:
    from ..api import install

    result = install(args.name, args.dataset, sources=args.sources, force=args.force, progress=not args.no_progress)
    print("\n".join(result.lines()))


def _cmd_publish(args: argparse.Namespace) -> None:
    from ..publish import publish_dataset, publish_metric

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
    from ..publish import install_metrics

    if args.action == "export":
        from pathlib import Path

        from ..standalone import export_metric, metric_names

        if not args.out:
            raise ConvbenchError("usage: convbench metrics export [NAME ...] --out DIR")
        from ..atomic import refuse_link

        refuse_link(args.out)  # each metric goes to DIR/NAME: a DIR that is a link would be written through
        for name in args.names or metric_names():
            print(f"exported {export_metric(name, Path(args.out) / name)}")
        return
    if args.out:
        raise ConvbenchError("--out applies to `convbench metrics export` only")
    for path in install_metrics(args.names or None):
        print(f"installed {path}")


def _cmd_export(args: argparse.Namespace) -> None:
    from ..cocoeval.sft import export_sft

    done = export_sft(args.out, args.turns_per_call, config=args.config, seed=args.seed, style=args.prompt,
                      taxonomy=args.taxonomy, repetition_countermeasure=not args.no_repetition_countermeasure,
                      dataset=args.dataset, sources=args.sources)
    print(f"wrote {done.examples} examples ({args.turns_per_call} turns per call, {args.config} train split) to "
          f"{done.path}, signature in {done.path.name}.convbench.json")
    unlisted = done.signature["targets_with_unlisted_speakers"]["count"]
    if unlisted:
        warn(f"{unlisted} of {done.examples} targets name a speaker the prompt does not list (kept; ids in the signature)")


def _cmd_lm_eval_path(args: argparse.Namespace) -> None:
    from ..integrations.lm_eval import tasks_path

    print(tasks_path())
