#!/usr/bin/env python3
"""Cross-checks hipstudio against Hugging Face transformers/tokenizers (where they are installed,
e.g. the GPU machine): converts the default model with `hipstudio convert --to hf`, loads the result
with transformers + tokenizers, and compares token ids and perplexity with `hipstudio ppl`.

usage: scripts/hf_crosscheck.py path/to/hipstudio [--device cpu|cuda]
"""
import subprocess
import sys
import tempfile

import torch
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

TEXT = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
        "One day, she saw a big red ball in the park. Caf\u00e9 \u4e2d\u6587 \U0001F600!")


def main():
    exe = sys.argv[1]
    device = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--device" else "cpu"
    out = tempfile.mkdtemp() + "/stories15M-hf"
    subprocess.run([exe, "convert", "--to", "hf", "--dtype", "f32", "--out", out], check=True)
    tok = PreTrainedTokenizerFast(tokenizer_file=out + "/tokenizer.json")
    ids = tok(TEXT)["input_ids"]
    if ids[0] != 1:
        ids = [1] + ids  # BOS, as hipstudio adds it
    round_trip = tok.decode(ids, skip_special_tokens=True)
    model = AutoModelForCausalLM.from_pretrained(out, torch_dtype=torch.float32).to(device).eval()
    with torch.no_grad():
        logits = model(torch.tensor([ids], device=device)).logits[0].double().cpu()
    logprobs = torch.log_softmax(logits, -1)
    nll = -logprobs[:-1].gather(1, torch.tensor(ids[1:]).unsqueeze(1)).mean().item()
    ours = subprocess.run([exe, "ppl", "--model", out, "--text", TEXT, "--device", device],
                          check=True, capture_output=True, text=True).stdout
    fields = dict(line.split(": ") for line in ours.strip().splitlines())
    print(f"transformers: {len(ids)} tokens, mean NLL {nll:.6f}, perplexity {torch.exp(torch.tensor(nll)).item():.6f}")
    print(f"hipstudio   : {fields['tokens']} tokens, mean NLL {float(fields['mean_nll']):.6f}, "
          f"perplexity {float(fields['perplexity']):.6f}")
    print(f"tokenizers round trip exact: {round_trip == TEXT}")
    ok = int(fields["tokens"]) == len(ids) and abs(float(fields["mean_nll"]) - nll) < 1e-4 and round_trip == TEXT
    print("CROSSCHECK", "OK" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
