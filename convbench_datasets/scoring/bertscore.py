"""BERTScore F1 for NICO's generation metrics: which layer to use, and a failure that keeps other work.

bert-score needs the layer whose embeddings it compares. For model names in its own table
(``bert_score.utils.model2layers``: ``bert-base-chinese`` -> 8) it knows it; for any other model, a
local folder included, ``bert_score.score`` fails with a KeyError unless ``num_layers`` is given.
convbench picks the layer in this order (``resolve_layer``):

1. ``num_layers`` when given (``bertscore_options={"num_layers": N}``, ``convbench run nico --bertscore-layer N``);
2. bert-score's table, for a known model name, or a local folder that is one: an Hugging Face cache
   snapshot of it (``…/models--bert-base-chinese/snapshots/<rev>``) or a folder named after it
   (``…/bert-base-chinese``) with at least that many layers;
3. otherwise ``DEFAULT_LAYER_FRACTION`` (2/3) of the model's depth, from its config, rounded half up
   and at least 1: the depth at which bert-score's table puts bert-base-chinese (8 of 12).

``compute_bertscore`` never raises for a model that cannot be loaded or scored (offline without the
model, a broken folder): it returns the error (and warns with it), naming the model and how to
provide it locally, so that the metrics computed before it are kept.

A pair whose prediction or reference is blank (empty or only whitespace: a failed request in
``convbench run nico`` is scored as an empty turn) gets bert-score's own score for it: bert-score sets
the raw P, R and F of an empty text to 0 (``greedy_cos_idf``: "Empty candidate sentence detected"),
rescaled with the baseline like any other score when ``rescale_with_baseline`` is on. bert-score 0.3.13
cannot reach that code under transformers 5 (its ``sent_encode`` calls the tokenizer's
``build_inputs_with_special_tokens``, which transformers 5 removed, and fails for the whole batch), so
convbench scores the other pairs with bert-score and gives blank pairs that score itself; with
``idf=True`` the weights are still computed over every reference (bert-score's ``get_idf_dict``, blank
references included as the empty documents they are). ``bertscore_blank_pairs`` counts them.
"""

from __future__ import annotations

import csv
import importlib.util
import math
import os
import warnings
from collections import Counter, defaultdict
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import MetricInputError

DEFAULT_MODEL = "bert-base-chinese"  # bert-score's own model for lang="zh"
DEFAULT_LAYER_FRACTION = Fraction(2, 3)


class Layer(NamedTuple):
    """The layer bert-score will use, and the rule that chose it (recorded in the signature)."""

    layer: int
    rule: str


def check_available(options: dict[str, Any] | None) -> None:
    """Fail before any scoring work when BERTScore cannot run at all: no bert-score, a bad ``num_layers``."""
    if importlib.util.find_spec("bert_score") is None:
        raise ImportError("BERTScore needs the bertscore extra: pip install 'convbench[bertscore]'")
    layer = (options or {}).get("num_layers")
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int) or layer < 0):
        raise MetricInputError(f"bertscore num_layers must be a whole number of at least 0, got {layer!r}")


def _table_name(model: str) -> str | None:
    """The name bert-score's table may know a local folder by (cache snapshot, or the folder's own name)."""
    parts = Path(model).resolve().parts
    for part in reversed(parts):
        if part.startswith("models--"):  # huggingface_hub's cache: models--{org}--{name}
            return part[len("models--"):].replace("--", "/")
    return parts[-1] if parts else None


def _depth(model: str) -> int:
    from transformers import AutoConfig

    depth = getattr(AutoConfig.from_pretrained(model), "num_hidden_layers", None)
    if not isinstance(depth, int) or depth < 1:
        raise ValueError("its config gives no number of layers (num_hidden_layers); pass num_layers")
    return depth


def resolve_layer(model: str, num_layers: int | None = None) -> Layer:
    """The layer for ``model`` (a hub name or a local folder) by the rules in the module docstring.

    Example:
        >>> resolve_layer("bert-base-chinese")
        Layer(layer=8, rule="bert-score's layer for bert-base-chinese")
    """
    if num_layers is not None:
        return Layer(num_layers, "given")
    from bert_score.utils import model2layers

    if model in model2layers:
        return Layer(model2layers[model], f"bert-score's layer for {model}")
    depth = _depth(model)
    if Path(model).is_dir():
        name = _table_name(model)
        known = {key.rsplit("/", 1)[-1]: key for key in model2layers} | {key: key for key in model2layers}
        if name in known and model2layers[known[name]] <= depth:
            return Layer(model2layers[known[name]], f"bert-score's layer for {known[name]} (folder name)")
    layer = max(1, int(DEFAULT_LAYER_FRACTION * depth + Fraction(1, 2)))
    return Layer(layer, f"default: {DEFAULT_LAYER_FRACTION} of the model's {depth} layers")


def _failure(model: str, err: BaseException) -> str:
    reason = f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0]}"
    if Path(model).is_dir():
        return f"BERTScore not computed with the model folder {model!r} ({reason}); the other scores are kept"
    if Path(model).is_absolute() or model.startswith((".", "~")) or model.count("/") > 1:  # a path, not org/name
        return f"BERTScore not computed: there is no model folder {model!r}; the other scores are kept"
    return (f"BERTScore not computed: model {model!r} could not be loaded or run ({reason}); the other scores are "
            f"kept. Offline, provide the model as a local folder: download it once where there is network "
            f"(huggingface-cli download {model} --local-dir DIR) and pass bertscore_model=DIR "
            f"(convbench run nico --bertscore DIR)")


def compute_bertscore(
    predictions: Sequence[str], references: Sequence[str], model: str = DEFAULT_MODEL,
    options: dict[str, Any] | None = None, pairs: bool = False,
) -> dict[str, Any]:
    """``bertscore_f1`` (mean F1 in percent) and the ``signature`` entries (model, layer, the layer's
    rule); on failure ``bertscore_f1`` is None and ``bertscore_error`` says why. ``options`` go to
    ``bert_score.score`` (``num_layers``, ``batch_size``, ``device``...). ``pairs``: add each pair's F1
    (0-1) as ``bertscore_f1_pairs``, for a bootstrap over the pairs."""
    kwargs = {"lang": "zh", "verbose": False, **(options or {})}
    # everything that changes the number: bert-score's version, the model, its layer, idf weighting and
    # baseline rescaling (bert-score's defaults: no idf, no rescaling)
    signature: dict[str, Any] = {"bertscore_model": model, "bertscore_layer": None,
                                 "bertscore_version": _version("bert-score"),
                                 "bertscore_idf": bool(kwargs.get("idf", False)),
                                 "bertscore_rescale_with_baseline": bool(kwargs.get("rescale_with_baseline", False))}
    try:
        layer = resolve_layer(model, kwargs.pop("num_layers", None))
        signature.update(bertscore_layer=layer.layer, bertscore_layer_rule=layer.rule)
        import bert_score

        _check_baseline(bert_score, model, kwargs)
        blank = [not p.strip() or not r.strip() for p, r in zip(predictions, references)]
        mean_f1, f1s = _f1(bert_score, list(predictions), list(references), blank, model, layer.layer, kwargs)
    except Exception as err:  # noqa: BLE001 - any failure: the caller's other scores must survive it
        message = _failure(model, err)
        warnings.warn(message, stacklevel=2)  # the CLI shows it as one line; the result keeps it too
        return {"bertscore_f1": None, "bertscore_error": message, "signature": signature}
    return {"bertscore_f1": 100.0 * mean_f1, "bertscore_blank_pairs": sum(blank),
            **({"bertscore_f1_pairs": f1s} if pairs else {}), "signature": signature}


def _f1(bert_score: Any, predictions: list[str], references: list[str], blank: list[bool], model: str,
        layer: int, kwargs: dict[str, Any]) -> tuple[float, list[float]]:
    """Mean bert-score F1 over the pairs and each pair's, a blank pair scoring what bert-score gives an empty text."""
    if not any(blank):
        _, _, f1 = bert_score.score(predictions, references, model_type=model, num_layers=layer, **kwargs)
        return float(f1.mean()), f1.tolist()
    options = dict(kwargs)
    if options.get("idf") is True:  # weights from every reference, as bert-score computes them for the whole call
        options["idf"] = _idf_weights(bert_score, references, model, options)
    scores = [_blank_f1(bert_score, model, layer, kwargs)] * len(blank)
    kept = [i for i, is_blank in enumerate(blank) if not is_blank]
    if kept:
        _, _, f1 = bert_score.score([predictions[i] for i in kept], [references[i] for i in kept], model_type=model,
                                    num_layers=layer, **options)
        for i, value in zip(kept, f1.tolist()):
            scores[i] = value
    return sum(scores) / len(scores), scores


def _blank_f1(bert_score: Any, model: str, layer: int, kwargs: dict[str, Any]) -> float:
    """bert-score's F1 for a pair with an empty text: 0, rescaled as bert-score rescales (row ``layer`` of the
    baseline file, column F: (F - b) / (1 - b)) when asked to."""
    if not kwargs.get("rescale_with_baseline"):
        return 0.0
    with open(_baseline_path(bert_score, model, kwargs), encoding="utf-8", newline="") as lines:
        rows = list(csv.reader(lines))
    baseline = float(rows[1 + layer][3])  # bert-score: pd.read_csv(path).iloc[num_layers], columns LAYER, P, R, F
    return (0.0 - baseline) / (1.0 - baseline)


def _idf_weights(bert_score: Any, references: list[str], model: str, options: dict[str, Any]) -> dict[int, float]:
    """bert-score's ``get_idf_dict`` over every reference; a blank one is the empty document bert-score makes
    of it (its special tokens only), which ``sent_encode`` cannot encode under transformers 5."""
    from bert_score.utils import get_tokenizer, sent_encode

    tokenizer = get_tokenizer(model, options.get("use_fast_tokenizer", False))
    counts: Counter[int] = Counter()
    for reference in references:
        ids = sent_encode(tokenizer, reference) if reference.strip() else tokenizer.encode("", add_special_tokens=True)
        counts.update(set(ids))
    documents = len(references)
    weights: defaultdict[int, float] = defaultdict(lambda: math.log((documents + 1) / 1))
    weights.update({token: math.log((documents + 1) / (count + 1)) for token, count in counts.items()})
    return weights


def _check_baseline(bert_score: Any, model: str, kwargs: dict[str, Any]) -> None:
    """With rescaling asked for, the baseline file must exist: bert-score only prints a warning and returns
    unrescaled scores without it (its default file: ``rescale_baseline/<lang>/<model>.tsv`` beside it, which
    a local folder never has), while the signature would say the scores are rescaled."""
    if not kwargs.get("rescale_with_baseline"):
        return
    path = _baseline_path(bert_score, model, kwargs)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"rescale_with_baseline needs a baseline file, and there is none at {path} "
                                "(pass baseline_path, or rescale_with_baseline=False)")


def _baseline_path(bert_score: Any, model: str, kwargs: dict[str, Any]) -> str:
    return str(kwargs.get("baseline_path") or os.path.join(os.path.dirname(bert_score.__file__), "rescale_baseline",
                                                           str(kwargs.get("lang")), f"{model}.tsv"))


def _version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None
