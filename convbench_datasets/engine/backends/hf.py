"""Local causal language models through transformers (the ``hf`` extra): ``hf:<folder or hub id>``.

Prompts are rendered with the tokenizer's chat template when it has one, else as plain
``ROLE: content`` lines ending in ``ASSISTANT:``. Decoding is greedy, batched, with left padding
(so every prompt ends where generation starts).

Which prompts share a batch (``batch_order``) matters: in bf16 (and fp16) a greedy answer can change with
its batch's other prompts and padding. ``length`` (the default) sorts the prompts a stage asks by length
and batches them so, to waste little padding; ``file`` batches them in their order, ``batch_size`` at a
time, as a benchmark's released script may batch (one data file at a time, batches of 8, in file order)
does: the stage then fixes the batches (``fixed_batches``: blocks of the stage's prompts, restarting at
each set, asked whole; see ``engine/stage.py``), and the answers' cache identity names the order and size.
Each answer reports ``finish_reason``: ``length`` when it used all ``max_new_tokens`` without ending,
else ``stop``. A prompt longer than the model's context is that row's (permanent) error.
``presence_penalty`` is applied by :class:`PresencePenalty` (greedy decoding only).

``params`` (``--param KEY=VALUE``) are decoding settings of :data:`HF_PARAMS`: ``temperature`` (above 0
samples), ``top_p``, ``top_k``, ``min_p``, ``repetition_penalty``, ``no_repeat_ngram_size``, ``do_sample``,
``seed`` (the sampler seeded before each batch), ``max_new_tokens`` or ``max_tokens`` (the token limit),
``stop`` (a string or a list: generation ends at one, which is cut from the answer, as OpenAI does); None
keeps convbench's value; any other name is a one-line error. They are part of the identity when given.

A GGUF file is named by the spec (``hf:/path/model.gguf``: transformers dequantizes it with the ``gguf``
package, ``from_pretrained(folder, gguf_file=name)``) or by ``gguf_file`` beside a folder or hub id
(``hf:FOLDER`` with ``gguf_file="model.gguf"``). The chat template is the one the GGUF file carries.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from ...counts import MAX_BATCH_SIZE, check_count
from ...errors import ConvbenchError
from .base import Backend, Generation, GenerationParams, Messages, check_params

EXTRA_HINT = "the hf backend needs torch and transformers: pip install 'convbench[hf]'"
BATCH_ORDERS = ("length", "file")  # the first is the default: see the module docstring
# request parameters the hf backend takes (see the module docstring)
HF_PARAMS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "no_repeat_ngram_size", "do_sample",
             "seed", "max_new_tokens", "max_tokens", "stop")


def plain_prompt(messages: Messages) -> str:
    """The fallback rendering for tokenizers without a chat template."""
    lines = [f"{m['role'].upper()}: {m['content']}" for m in messages]
    return "\n".join(lines + ["ASSISTANT:"])


def model_fingerprint(model: str, lm: Any, tokenizer: Any) -> str:
    """A short hash of what decides a model's answers: for a local folder, its small files (config,
    tokenizer, chat template) in full and its weight files by size and first/last megabyte; for a hub
    id, the resolved commit. The tokenizer's chat template is included either way."""
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256(str(getattr(tokenizer, "chat_template", "") or "").encode())
    folder = Path(model)
    if folder.is_file():  # a GGUF file: its size and first and last megabyte
        size = folder.stat().st_size
        with open(folder, "rb") as f:
            digest.update(str(size).encode() + f.read(1 << 20))
            f.seek(max(0, size - (1 << 20)))
            digest.update(f.read())
    elif folder.is_dir():
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(folder)).encode())
            size = path.stat().st_size
            with open(path, "rb") as f:
                if size <= 8 << 20:
                    digest.update(f.read())
                else:
                    digest.update(str(size).encode() + f.read(1 << 20))
                    f.seek(-(1 << 20), 2)
                    digest.update(f.read())
    else:
        digest.update(str(getattr(lm.config, "_commit_hash", "") or model).encode())
    return digest.hexdigest()[:16]


class PresencePenalty:
    """A logits processor with OpenAI's ``presence_penalty``: ``penalty`` is subtracted once from the
    logit of every token that already occurs in the answer (the tokens after ``prompt_length``; the
    prompt itself is not penalised, as on OpenAI-compatible servers such as vLLM)."""

    def __init__(self, penalty: float, prompt_length: int) -> None:
        self.penalty = penalty
        self.prompt_length = prompt_length

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        answer = input_ids[:, self.prompt_length :]
        if not answer.shape[1]:
            return scores
        seen = scores.new_zeros(scores.shape, dtype=scores.dtype).scatter_(1, answer, 1.0)
        return scores - self.penalty * seen


class StopStrings:
    """A stopping criterion: a row stops once its decoded answer (the tokens after ``prompt_length``) holds
    one of ``stops``. It decodes, so it works with any tokenizer (transformers' own ``stop_strings`` needs a
    byte-level or sentencepiece vocabulary)."""

    def __init__(self, tokenizer: Any, stops: Sequence[str], prompt_length: int) -> None:
        self.tokenizer, self.stops, self.prompt_length = tokenizer, list(stops), prompt_length

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        texts = self.tokenizer.batch_decode(input_ids[:, self.prompt_length :], skip_special_tokens=True)
        return torch.tensor([any(stop in text for stop in self.stops) for text in texts], device=input_ids.device)


class HFBackend(Backend):
    kind = "hf"
    holds_weights = True

    def __init__(self, model: str, *, device: str = "auto", dtype: str = "auto", batch_size: int = 8,
                 batch_order: str = "length", params: dict[str, Any] | None = None,
                 gguf_file: str | None = None) -> None:
        self.params = check_params(params) or {}
        unknown = sorted(set(self.params) - set(HF_PARAMS))
        if unknown:
            raise ConvbenchError(f"hf backend: request parameter {unknown[0]!r} (--param / --judge-param) is not one it "
                                 f"takes; it takes {', '.join(HF_PARAMS)}")
        stop = self.params.get("stop")
        if stop is not None and not (isinstance(stop, str) and stop or isinstance(stop, list) and stop
                                     and all(isinstance(x, str) and x for x in stop)):
            raise ConvbenchError(f"hf backend: stop (--param stop=...) must be a string or a list of strings, got {stop!r}")
        if batch_order not in BATCH_ORDERS:
            raise ConvbenchError(f"batch order must be one of {', '.join(BATCH_ORDERS)}, got {batch_order!r}")
        batch_size = check_count("batch_size (--batch-size)", batch_size, least=1, most=MAX_BATCH_SIZE)
        try:
            import torch
            import transformers
        except ImportError as err:
            raise ConvbenchError(f"{EXTRA_HINT} ({err})") from None
        self.model = model
        self.dtype = dtype
        self.batch_size = batch_size
        self.batch_order = batch_order
        # the stage's fixed batches (engine/stage.py): the released script's, when asked for
        self.fixed_batches = batch_size if batch_order == "file" else None
        self.calls = 0
        self._torch = torch
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        self.gguf_file = gguf_file
        source, load = model, {}
        if gguf_file is not None:
            load = {"gguf_file": gguf_file}
        elif model.endswith(".gguf"):  # hf:/path/model.gguf
            from pathlib import Path

            source, load = str(Path(model).parent), {"gguf_file": Path(model).name}
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(source, **load)
            weights = "auto" if dtype == "auto" else getattr(torch, dtype)
            self.lm = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=weights, **load)
        except (OSError, ValueError, AttributeError, ImportError) as err:
            raise ConvbenchError(f"cannot load hf model {model!r}: {err}") from None
        try:
            self.lm.to(self.device).eval()
        except (RuntimeError, AssertionError, ValueError) as err:
            raise ConvbenchError(f"cannot put hf model {model!r} on device {self.device!r}: {err}") from None
        self.fingerprint = model_fingerprint(model, self.lm, self.tokenizer)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    def identity(self) -> dict[str, Any]:
        """The spec plus a fingerprint of the files that decide the answers, so that two models
        behind one name (a folder overwritten, another working directory) never share cache entries."""
        # "text": answers are kept as decoded, unstripped (earlier versions stripped them: other cache entries)
        identity = {"kind": self.kind, "model": self.model, "dtype": self.dtype, "fingerprint": self.fingerprint,
                    "text": "raw"}
        if self.batch_order != "length":  # length order keeps the keys it always had (caches stay valid)
            identity.update(batch_order=self.batch_order, batch_size=self.batch_size)
        if self.gguf_file is not None:
            identity["gguf_file"] = self.gguf_file
        if self.params:  # without params: the keys it always had
            identity["params"] = dict(self.params)
        return identity

    def _decoding(self, params: GenerationParams) -> tuple[int, float]:
        """The token limit and temperature: ``params``' unless this backend's request parameters set them."""
        limit = next((self.params[k] for k in ("max_new_tokens", "max_tokens") if self.params.get(k) is not None),
                     params.max_new_tokens)
        temperature = self.params.get("temperature")
        if temperature is None:  # a local model has no server default: None (a benchmark's "not sent") is greedy
            temperature = params.temperature or 0.0
        return int(limit), float(temperature)

    def render(self, messages: Messages) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return plain_prompt(messages)

    def context_length(self) -> int | None:
        config = self.lm.config
        for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
            value = getattr(config, name, None)
            if isinstance(value, int) and value > 0:
                return value
        return None

    def generate(self, prompts: Sequence[Messages], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        from dataclasses import replace

        if self.lm is None:
            raise ConvbenchError(f"hf model {self.model!r} was closed (its weights freed): make a new backend to use it")
        limit_tokens, temperature = self._decoding(params)
        params = replace(params, max_new_tokens=limit_tokens, temperature=temperature)
        if params.presence_penalty is not None and params.temperature > 0:
            # transformers runs custom logit processors after its temperature and top-k/top-p warpers, so
            # the penalty would not mean what it means on an OpenAI-compatible server; greedy is exact
            raise ConvbenchError("hf backend: presence_penalty is supported with greedy decoding (temperature 0) only, "
                                 f"got temperature {params.temperature}")
        texts = [self.render(m) for m in prompts]
        limit = self.context_length()
        lengths = [len(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        fitting = []
        for i, length in enumerate(lengths):
            if limit is not None and length + params.max_new_tokens > limit:
                # a row this model cannot answer: reported for the row, like a server's refusal
                yield i, Generation("", prompt_tokens=length, error=(
                    f"refused for this row: prompt of {length} tokens + {params.max_new_tokens} new tokens "
                    f"exceeds the model's context of {limit}"), permanent=True)
            else:
                fitting.append(i)
        order = fitting if self.batch_order == "file" else sorted(fitting, key=lambda i: lengths[i])
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            yield from zip(batch, self._generate_batch([texts[i] for i in batch], params))

    def _generate_batch(self, texts: list[str], params: GenerationParams) -> list[Generation]:
        torch = self._torch
        began = time.perf_counter()
        encoded = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        options: dict[str, Any] = {"max_new_tokens": params.max_new_tokens, "pad_token_id": self.tokenizer.pad_token_id}
        if params.temperature > 0:
            options.update(do_sample=True, temperature=params.temperature)
        else:
            options.update(do_sample=False)
        for name in ("top_p", "top_k", "min_p", "repetition_penalty", "no_repeat_ngram_size", "do_sample"):
            if self.params.get(name) is not None:
                options[name] = self.params[name]
        stops = self.params.get("stop")
        stops = [stops] if isinstance(stops, str) else stops or []
        if stops:
            from transformers import StoppingCriteriaList

            options["stopping_criteria"] = StoppingCriteriaList(
                [StopStrings(self.tokenizer, stops, int(encoded["input_ids"].shape[1]))])
        if self.params.get("seed") is not None:
            torch.manual_seed(int(self.params["seed"]))
        if params.presence_penalty is not None:
            from transformers import LogitsProcessorList

            penalty = PresencePenalty(params.presence_penalty, int(encoded["input_ids"].shape[1]))
            options["logits_processor"] = LogitsProcessorList([penalty])
        with torch.inference_mode():
            output = self.lm.generate(**encoded, **options)
        self.calls += len(texts)
        new_tokens = output[:, encoded["input_ids"].shape[1] :]
        seconds = (time.perf_counter() - began) / len(texts)
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
        eos = self._stop_ids()
        results = []
        for row, length in zip(new_tokens, prompt_lengths):
            kept = row[row != self.tokenizer.pad_token_id] if self.tokenizer.pad_token_id is not None else row
            text = self.tokenizer.decode(kept, skip_special_tokens=True)
            # generation ends at a stop token or at the limit; a row that never met one was cut
            ended = any(int(token) in eos for token in row.tolist())
            cut = [text.find(stop) for stop in stops if stop in text]
            if cut:  # ended at a stop string: the answer is what came before it (OpenAI's rule)
                text, ended = text[: min(cut)], True
            # kept as decoded, like the openai backend and the released pipeline: a turn that starts with a
            # new line is judged as an empty first line there, so stripping here would change verdicts
            results.append(Generation(text, int(length), int(kept.numel()), seconds,
                                      finish_reason="stop" if ended or row.numel() < params.max_new_tokens else "length"))
        return results

    def _stop_ids(self) -> set[int]:
        """The token ids that end generation (the generation config's, else the tokenizer's eos)."""
        config = getattr(self.lm, "generation_config", None)
        ids = getattr(config, "eos_token_id", None)
        if ids is None:
            ids = self.tokenizer.eos_token_id
        return {int(i) for i in (ids if isinstance(ids, (list, tuple)) else [ids]) if i is not None}

    def close(self) -> None:
        """Free the weights (and GPU memory) once the stage is done."""
        self.lm = None
        if self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()
