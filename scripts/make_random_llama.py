#!/usr/bin/env python3
"""Writes a random-weight Hugging Face checkpoint with the Llama-3.1-8B configuration (or a smaller
one with --layers), for end-to-end benchmarks on a GPU machine: `hipstudio bench model --model DIR`.
No tokenizer is written (the benchmark feeds random token ids). Nothing of it belongs in git.

usage: scripts/make_random_llama.py OUT_DIR [--layers N] [--device cuda]
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file

CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False, "bos_token_id": 128000,
    "eos_token_id": 128001, "torch_dtype": "bfloat16",
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192},
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    cfg = dict(CONFIG, num_hidden_layers=a.layers)
    os.makedirs(a.out, exist_ok=True)
    g = torch.Generator(device=a.device).manual_seed(0)
    d, f, hd = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd

    def rand(*shape, scale):
        return (torch.randn(*shape, generator=g, device=a.device) * scale).to(torch.bfloat16).cpu()

    shards, tensors, index = [], {}, {}

    def flush():
        if tensors:
            name = f"model-{len(shards) + 1:05d}.safetensors"
            save_file(tensors, os.path.join(a.out, name), metadata={"format": "pt"})
            shards.append(name)
            index.update({k: name for k in tensors})
            tensors.clear()

    tensors["model.embed_tokens.weight"] = rand(cfg["vocab_size"], d, scale=0.02)
    for l in range(a.layers):
        p = f"model.layers.{l}."
        tensors[p + "input_layernorm.weight"] = torch.ones(d, dtype=torch.bfloat16)
        tensors[p + "post_attention_layernorm.weight"] = torch.ones(d, dtype=torch.bfloat16)
        tensors[p + "self_attn.q_proj.weight"] = rand(q, d, scale=d ** -0.5)
        tensors[p + "self_attn.k_proj.weight"] = rand(kv, d, scale=d ** -0.5)
        tensors[p + "self_attn.v_proj.weight"] = rand(kv, d, scale=d ** -0.5)
        tensors[p + "self_attn.o_proj.weight"] = rand(d, q, scale=q ** -0.5)
        tensors[p + "mlp.gate_proj.weight"] = rand(f, d, scale=d ** -0.5)
        tensors[p + "mlp.up_proj.weight"] = rand(f, d, scale=d ** -0.5)
        tensors[p + "mlp.down_proj.weight"] = rand(d, f, scale=f ** -0.5)
        if l % 4 == 3:
            flush()
    tensors["model.norm.weight"] = torch.ones(d, dtype=torch.bfloat16)
    tensors["lm_head.weight"] = rand(cfg["vocab_size"], d, scale=d ** -0.5)
    flush()
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {}, "weight_map": index}, fh)
    with open(os.path.join(a.out, "config.json"), "w") as fh:
        json.dump(cfg, fh, indent=2)
    print(f"wrote {a.out}: {a.layers} layers, {len(shards)} shards")


if __name__ == "__main__":
    main()
