"""A tiny causal LM and tokenizer built locally (random weights, fixed seed): no download needed."""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)
WORDS = (
    "answer repeat paraphrase definition example silence preclosing other acknowledgment assessment "
    "the a is what do you mean sorry thanks okay yes no please again agent user line label"
).split()


def build_tiny_lm(folder: Path, *, chat_template: bool = True, seed: int = 0) -> Path:
    """A 2-layer GPT-2 with a word-level vocabulary, saved to ``folder``; returns the folder."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    specials = ["<unk>", "<pad>", "<eos>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
    vocab = {token: i for i, token in enumerate(specials + WORDS + [",", ".", "?", ":"])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    core.add_special_tokens(specials)  # matched whole, before punctuation splitting
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
    if chat_template:
        tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(vocab), n_positions=4096, n_embd=32, n_layer=2, n_head=2, initializer_range=0.5,
                        bos_token_id=vocab["<eos>"], eos_token_id=vocab["<eos>"], pad_token_id=vocab["<pad>"])
    model = GPT2LMHeadModel(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_bert(folder: Path, characters: str, *, seed: int = 0, layers: int = 2) -> Path:
    """A BERT of ``layers`` layers (default 2) over single characters (a WordPiece vocabulary of them)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(ch for ch in characters if not ch.isspace())]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(str(folder / "vocab.txt"), do_lower_case=False, tokenize_chinese_chars=True,
                              model_max_length=128)  # bert-score truncates to this; the default is unbounded
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
