#!/usr/bin/env python3
"""Writes a random-weight bf16 checkpoint of an 8B-shaped model of one architecture, made and saved by
transformers' own classes (AutoConfig, from_config, save_pretrained), for `hipstudio bench model` on
a GPU machine: the decode steps of windowed, soft-capped and q/k-normed layers timed at Llama-3.1-8B
sizes (hidden 4096, 32 layers, intermediate 14336, vocab 128256). Nothing of it belongs in git.

    scripts/dev/make_random_arch.py OUT_DIR ARCH [--device cuda] [--tokenizer-from DIR]

ARCH:
    qwen3           Qwen3: 32 heads / 8 KV heads of head_dim 128, q_norm and k_norm before RoPE
    gemma2          Gemma 2: 16 heads / 8 KV heads of head_dim 256, query_pre_attn_scalar 256,
                    sliding window 4096 on every other layer, attention soft-cap 50, final soft-cap 30
    mistral_window  Mistral: 32 heads / 8 KV heads of head_dim 128, sliding window 4096 on every layer

The weights are drawn on the device in bf16 (no float32 copy of the model anywhere): matrices
normal(0, fan_in^-1/2), embeddings normal(0, 0.02), norms at their identity (1, or 0 for Gemma's
(1 + w) norms), so that attention is not uniform. The tokenizer (tokenizer.json and
tokenizer_config.json) is copied from --tokenizer-from (default /tmp/llama8b, the 8B Llama checkpoint
scripts/dev/device-scale prepares) when it holds one, with bos/eos 1/2 as there.
"""
import argparse
import json
import os
import shutil

import torch
from transformers import AutoConfig, AutoModelForCausalLM

COMMON = dict(hidden_size=4096, num_hidden_layers=32, intermediate_size=14336, vocab_size=128256,
              max_position_embeddings=131072, bos_token_id=1, eos_token_id=2)

ARCHS = {
    "qwen3": ("qwen3", dict(num_attention_heads=32, num_key_value_heads=8, head_dim=128, rope_theta=1e6,
                            rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False)),
    "gemma2": ("gemma2", dict(num_attention_heads=16, num_key_value_heads=8, head_dim=256,
                              query_pre_attn_scalar=256, sliding_window=4096, attn_logit_softcapping=50.0,
                              final_logit_softcapping=30.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
                              pad_token_id=0,
                              layer_types=["sliding_attention" if l % 2 == 0 else "full_attention"
                                           for l in range(COMMON["num_hidden_layers"])])),
    "mistral_window": ("mistral", dict(num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                       rope_theta=1e6, sliding_window=4096, rms_norm_eps=1e-5,
                                       tie_word_embeddings=False)),
}


def make_config(arch):
    model_type, extra = ARCHS[arch]
    return AutoConfig.for_model(model_type, **COMMON, **extra)


def build_model(cfg, device):
    # Built on the device in bf16: from_config's own initialisation runs there, never on the host.
    with torch.device(device):
        try:
            return AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        except TypeError:  # transformers before 4.56 names the argument torch_dtype
            return AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)


@torch.no_grad()
def redraw(model, gemma_norms, seed):
    g = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    for name, p in model.named_parameters():
        if p.dim() == 1:  # RMSNorm weights (q_norm / k_norm too)
            p.fill_(0.0 if gemma_norms else 1.0)
        elif "embed_tokens" in name:
            p.normal_(0.0, 0.02, generator=g)
        else:
            p.normal_(0.0, p.shape[-1] ** -0.5, generator=g)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("arch", choices=sorted(ARCHS))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tokenizer-from", default="/tmp/llama8b")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    cfg = make_config(a.arch)
    model = build_model(cfg, a.device).eval()
    redraw(model, gemma_norms=a.arch.startswith("gemma"), seed=a.seed)
    dtypes = {p.dtype for p in model.parameters()}
    if dtypes != {torch.bfloat16}:
        raise SystemExit(f"error: the model holds {sorted(map(str, dtypes))}, expected bfloat16 only")
    n_params = sum(p.numel() for p in model.parameters())
    os.makedirs(a.out, exist_ok=True)
    model.save_pretrained(a.out, max_shard_size="4GB")
    del model
    copied = []
    for name in ("tokenizer.json", "tokenizer_config.json"):
        src = os.path.join(a.tokenizer_from, name)
        if os.path.isfile(src):
            shutil.copy(src, os.path.join(a.out, name))
            copied.append(name)
    with open(os.path.join(a.out, "config.json")) as fh:
        written = json.load(fh)
    print(f"wrote {a.out}: {a.arch} ({written.get('architectures')}), {n_params / 1e9:.2f} B parameters, "
          f"{written['num_hidden_layers']} layers, head_dim {written.get('head_dim')}, "
          f"sliding_window {written.get('sliding_window')}, tokenizer {'copied' if copied else 'none'}")


if __name__ == "__main__":
    main()
