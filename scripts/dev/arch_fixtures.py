#!/usr/bin/env python3
"""Tiny random checkpoints of every supported architecture, saved by transformers' own classes, with
the logits transformers computes for them: the reference the architecture tests compare against.

Run where transformers is installed (the development GPU machine; see scripts/dev/README.md):
    scripts/dev/arch_fixtures.py OUT_DIR [--only NAME,...]
Each OUT_DIR/<variant>/ holds config.json and model.safetensors as save_pretrained wrote them,
tokenizer.json (a byte-level BPE of 320 pieces trained here), and reference.json:
    ids           the token ids fed (one sequence, longer than every sliding window)
    nll_f32       per-token negative log-likelihood of ids[1:], float32 eager attention on the CPU
    logits_f32    file name of the float32 logits [len(ids), vocab] (.npy, little-endian float32)
    nll_bf16      the same NLL with the model cast to bfloat16 (CPU)
    greedy_prompt the first 48 ids; greedy_f32 the 32 tokens greedy decoding appends (full recompute)
Weights are redrawn larger than from_config's (std 0.15, norms near their identity) so that
attention is far from uniform and every RoPE, window and cap setting moves the logits.
"""
import json
import math
import os
import sys
import traceback

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

VOCAB = 320
HIDDEN = 64
HEADS = 4
KV_HEADS = 2
WINDOW = 24
SEQ = 96
COMMON = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=112, num_attention_heads=HEADS,
              num_key_value_heads=KV_HEADS, max_position_embeddings=512, bos_token_id=0, eos_token_id=1,
              pad_token_id=None, rms_norm_eps=1e-5)

LLAMA3_SCALING = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                      original_max_position_embeddings=64)


def variants():
    C = transformers
    half = 8  # head_dim 16 / 2
    long_factor = [1.0 + 0.5 * i for i in range(half)]
    short_factor = [1.0 + 0.05 * i for i in range(half)]
    return {
        "llama_tied": (C.LlamaConfig, dict(num_hidden_layers=3, rope_theta=10000.0, tie_word_embeddings=True)),
        "llama2": (C.LlamaConfig, dict(num_hidden_layers=3, rope_theta=10000.0, tie_word_embeddings=False)),
        "llama3": (C.LlamaConfig, dict(num_hidden_layers=3, rope_theta=500000.0, rope_scaling=LLAMA3_SCALING)),
        "llama32_tied": (C.LlamaConfig, dict(num_hidden_layers=3, rope_theta=500000.0, tie_word_embeddings=True,
                                             rope_scaling=dict(LLAMA3_SCALING, factor=32.0))),
        "llama_bias": (C.LlamaConfig, dict(num_hidden_layers=2, attention_bias=True, mlp_bias=True)),
        "mistral": (C.MistralConfig, dict(num_hidden_layers=3, rope_theta=1e6, sliding_window=None)),
        "mistral_window": (C.MistralConfig, dict(num_hidden_layers=3, rope_theta=1e6, sliding_window=WINDOW)),
        "qwen2": (C.Qwen2Config, dict(num_hidden_layers=3, rope_theta=1e6, use_sliding_window=False,
                                      tie_word_embeddings=False)),
        "qwen2_tied": (C.Qwen2Config, dict(num_hidden_layers=2, rope_theta=1e6, tie_word_embeddings=True)),
        "qwen2_window": (C.Qwen2Config, dict(num_hidden_layers=4, rope_theta=1e6, use_sliding_window=True,
                                             sliding_window=WINDOW, max_window_layers=2,
                                             tie_word_embeddings=False)),
        "qwen3": (C.Qwen3Config, dict(num_hidden_layers=3, head_dim=32, rope_theta=1e6, tie_word_embeddings=False)),
        "qwen3_tied": (C.Qwen3Config, dict(num_hidden_layers=2, head_dim=16, rope_theta=1e6, tie_word_embeddings=True)),
        "gemma2": (C.Gemma2Config, dict(num_hidden_layers=4, head_dim=16, sliding_window=WINDOW,
                                        query_pre_attn_scalar=24, attn_logit_softcapping=5.0,
                                        final_logit_softcapping=3.0, hidden_activation="gelu_pytorch_tanh")),
        "gemma3": (C.Gemma3TextConfig, dict(num_hidden_layers=6, head_dim=16, sliding_window=WINDOW,
                                            query_pre_attn_scalar=16, rope_theta=1e6, rope_local_base_freq=10000.0)),
        "gemma3_linear": (C.Gemma3TextConfig, dict(num_hidden_layers=4, head_dim=16, sliding_window=WINDOW,
                                                   query_pre_attn_scalar=16, rope_theta=1e6,
                                                   rope_scaling=dict(rope_type="linear", factor=8.0),
                                                   sliding_window_pattern=2)),
        "phi3": (C.Phi3Config, dict(num_hidden_layers=3, rope_theta=10000.0, sliding_window=None)),
        "phi3_window": (C.Phi3Config, dict(num_hidden_layers=2, rope_theta=10000.0, sliding_window=WINDOW)),
        "phi3_longrope": (C.Phi3Config, dict(num_hidden_layers=3, rope_theta=10000.0, sliding_window=None,
                                             original_max_position_embeddings=64,
                                             rope_scaling=dict(rope_type="longrope", long_factor=long_factor,
                                                               short_factor=short_factor))),
    }


def make_config(cls, extra):
    kw = dict(COMMON)
    kw.update(extra)
    return cls(**kw)


def redraw(model, gemma_norms):
    g = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * 0.15)
            elif "norm" in name:
                base = 0.0 if gemma_norms else 1.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))
            else:  # biases
                p.copy_(0.1 * torch.randn(p.shape, generator=g))


def train_tokenizer(path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    text = ("Once upon a time there was a little model that attended to every token it had seen. "
            "Hierarchically pruned attention finds the top keys of each query block with a tree search. ") * 20
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([text], trainer)
    tok.save(path)


def nll_of(model, ids):
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    lp = torch.log_softmax(logits, -1)
    return logits.float(), (-lp[:-1].gather(1, torch.tensor(ids[1:]).unsqueeze(1))[:, 0]).tolist()


def greedy(model, prompt, steps):
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(steps):
            ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids[len(prompt):]


def build(name, cls, extra, out):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    cfg = make_config(cls, extra)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    redraw(model, gemma_norms=name.startswith("gemma"))
    model.save_pretrained(d)
    train_tokenizer(os.path.join(d, "tokenizer.json"))
    rng = np.random.default_rng(7)
    ids = [0] + rng.integers(2, VOCAB, SEQ - 1).tolist()
    logits, nll = nll_of(model, ids)
    np.save(os.path.join(d, "logits_f32.npy"), logits.numpy().astype("<f4"))
    ref = dict(architecture=type(model).__name__, transformers=transformers.__version__, ids=ids, nll_f32=nll,
               logits_f32="logits_f32.npy", greedy_prompt=ids[:48], greedy_f32=greedy(model, ids[:48], 32))
    ref["nll_bf16"] = nll_of(model.to(torch.bfloat16), ids)[1]
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f)
    print(f"{name}: {ref['architecture']}, mean NLL {sum(nll) / len(nll):.5f}, files {sorted(os.listdir(d))}")


def main():
    out = sys.argv[1]
    only = None
    if len(sys.argv) > 3 and sys.argv[2] == "--only":
        only = set(sys.argv[3].split(","))
    failed = []
    for name, (cls, extra) in variants().items():
        if only and name not in only:
            continue
        try:
            build(name, cls, extra, out)
        except Exception:
            traceback.print_exc()
            failed.append(name)
    print("FAILED:", failed if failed else "none")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
