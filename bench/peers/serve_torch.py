#!/usr/bin/env python3
"""examples/serve's model in PyTorch (Hugging Face Llama-style code written here), on the weights and
requests a `serve --save DIR` run wrote, to compare with xhal's engine:

    build/bin/serve --preset 1b --requests 64 --prompt-min 128 --prompt-max 1024 --max-new 128 --save DIR
    python3 bench/peers/serve_torch.py DIR [--compile]

1. Logits: each request's prompt alone through the model; its last position's logits against the
   ones xhal's engine sampled its first token from (first_logits.f32): relative L2 error, and
   whether the greedy first tokens agree.
2. Time: all requests as one static batch, the way an eager PyTorch server runs them: prompts
   left-padded into one prefill, then max_new_tokens greedy decode steps over a preallocated KV
   cache (keys past each row's length masked), one token a request a step. Decode tokens/s and
   prefill tokens/s (real prompt tokens only) for eager PyTorch and, with --compile, for the decode
   step under torch.compile (default mode: no CUDA graphs). Compare with serve's printed decode
   tokens/s (its decode-only steps; also 64 requests, one token each).
"""
import argparse
import json
import math
import struct
import time

import torch
import torch.nn.functional as F

DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}


def read_safetensors(path, device, dtype):
    """name -> tensor on device in dtype (the format: 8-byte header length, JSON header, bytes)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        out[name] = t.to(device=device, dtype=dtype)
    return out


def inverse_frequencies(cfg):
    d, theta = cfg["head_dim"], cfg["rope_theta"]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    s = cfg.get("rope_scaling")
    if s and s["rope_type"] == "llama3":  # Llama 3.1's wavelength bands, as transformers computes them
        old, low, high, factor = s["original_max_position_embeddings"], s["low_freq_factor"], s["high_freq_factor"], s["factor"]
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        inv = torch.where(medium, (1 - smooth) * scaled / factor + smooth * scaled, scaled)
    elif s and s["rope_type"] == "linear":
        inv = inv / s["factor"]
    elif s:
        raise SystemExit(f"rope_scaling {s['rope_type']} is not written here")
    return inv.float()


class Llama:
    def __init__(self, cfg, w, max_len, device):
        self.cfg, self.w = cfg, w
        self.H, self.Hq, self.Hkv, self.D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        self.L, self.eps = cfg["num_hidden_layers"], cfg["rms_norm_eps"]
        self.lm_head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
        freqs = torch.arange(max_len, device=device, dtype=torch.float32)[:, None] * inverse_frequencies(cfg).to(device)[None]
        self.cos, self.sin = torch.cat([freqs, freqs], -1).cos(), torch.cat([freqs, freqs], -1).sin()

    def norm(self, x, weight):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * weight

    def rope(self, x, positions):  # x [B, heads, S, D], positions [B, S]
        cos, sin = self.cos[positions][:, None].to(x.dtype), self.sin[positions][:, None].to(x.dtype)
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rotated * sin

    def forward(self, ids, positions, k_cache, v_cache, write_at, mask, last_only):
        """ids, positions [B, S]; caches a [B, Hkv, T, D] a layer, written at write_at + 0..S-1; mask [B, 1, S, T]
        (True: attend). Returns logits [B, V] of the last position (last_only) or [B, S, V]."""
        B, S = ids.shape
        x = F.embedding(ids, self.w["model.embed_tokens.weight"])
        p = "model.layers.{}."
        for l in range(self.L):
            n = p.format(l)
            h = self.norm(x, self.w[n + "input_layernorm.weight"])
            q = F.linear(h, self.w[n + "self_attn.q_proj.weight"], self.w.get(n + "self_attn.q_proj.bias"))
            k = F.linear(h, self.w[n + "self_attn.k_proj.weight"], self.w.get(n + "self_attn.k_proj.bias"))
            v = F.linear(h, self.w[n + "self_attn.v_proj.weight"], self.w.get(n + "self_attn.v_proj.bias"))
            q = self.rope(q.view(B, S, self.Hq, self.D).transpose(1, 2), positions)
            k = self.rope(k.view(B, S, self.Hkv, self.D).transpose(1, 2), positions)
            v = v.view(B, S, self.Hkv, self.D).transpose(1, 2)
            k_cache[l].index_copy_(2, write_at, k)
            v_cache[l].index_copy_(2, write_at, v)
            o = F.scaled_dot_product_attention(q, k_cache[l], v_cache[l], attn_mask=mask, enable_gqa=True)
            x = x + F.linear(o.transpose(1, 2).reshape(B, S, -1), self.w[n + "self_attn.o_proj.weight"])
            h = self.norm(x, self.w[n + "post_attention_layernorm.weight"])
            gate = F.linear(h, self.w[n + "mlp.gate_proj.weight"])
            up = F.linear(h, self.w[n + "mlp.up_proj.weight"])
            x = x + F.linear(F.silu(gate) * up, self.w[n + "mlp.down_proj.weight"])
        x = self.norm(x[:, -1] if last_only else x, self.w["model.norm.weight"])
        return F.linear(x, self.lm_head)


def caches(model, B, T, dtype, device):
    """A K and a V tensor [B, Hkv, T, D] a layer (separate tensors, as transformers' StaticCache: under
    torch.compile an in-place write to a view of one larger input tensor copies all of it back)."""
    def one():
        return torch.zeros((B, model.Hkv, T, model.D), dtype=dtype, device=device)
    return [one() for _ in range(model.L)], [one() for _ in range(model.L)]


def check_logits(model, requests, xhal_logits, dtype, device):
    errors, same_first = [], 0
    for i, r in enumerate(requests):
        n = len(r["prompt"])
        ids = torch.tensor([r["prompt"]], device=device)
        pos = torch.arange(n, device=device)[None]
        k, v = caches(model, 1, n, dtype, device)
        mask = torch.ones(n, n, dtype=torch.bool, device=device).tril()[None, None]
        ours = model.forward(ids, pos, k, v, torch.arange(n, device=device), mask, True)[0].float()
        theirs = xhal_logits[i].to(device)
        errors.append(((ours - theirs).norm() / theirs.norm()).item())
        same_first += int(ours.argmax().item() == r["generated"][0])
    return errors, same_first


def serve_static(model, requests, dtype, device, step_fn):
    """Prefill all prompts left-padded, then greedy decode; returns (prefill s, decode s)."""
    B, P, new = len(requests), max(len(r["prompt"]) for r in requests), requests[0]["max_new_tokens"]
    T = P + new
    pad = torch.tensor([P - len(r["prompt"]) for r in requests], device=device)
    ids = torch.zeros(B, P, dtype=torch.long, device=device)
    for b, r in enumerate(requests):
        ids[b, P - len(r["prompt"]):] = torch.tensor(r["prompt"], device=device)
    keys = torch.arange(T, device=device)
    positions = (torch.arange(P, device=device)[None] - pad[:, None]).clamp(min=0)
    real = keys[None, :] >= pad[:, None]  # [B, T]: a row's keys from its first real token on
    causal = keys[None, :] <= torch.arange(P, device=device)[:, None]  # [P, T]
    mask = (real[:, None, :] & causal[None])[:, None]  # [B, 1, P, T]
    k, v = caches(model, B, T, dtype, device)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    logits = model.forward(ids, positions, k, v, torch.arange(P, device=device), mask, True)
    token = logits.argmax(-1, keepdim=True)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    for t in range(new - 1):
        at = torch.tensor([P + t], device=device)
        step_mask = (real & (keys[None, :] <= P + t))[:, None, None]  # [B, 1, 1, T]
        token = step_fn(token, (P + t - pad)[:, None], k, v, at, step_mask)
    torch.cuda.synchronize()
    return t1 - t0, time.perf_counter() - t1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="a serve --save directory")
    ap.add_argument("--compile", action="store_true", help="also time the decode step under torch.compile")
    args = ap.parse_args()
    device, dtype = "cuda", torch.bfloat16
    cfg = json.load(open(f"{args.dir}/config.json"))
    requests = json.load(open(f"{args.dir}/requests.json"))
    w = read_safetensors(f"{args.dir}/model.safetensors", device, dtype)
    max_len = max(len(r["prompt"]) for r in requests) + requests[0]["max_new_tokens"]
    model = Llama(cfg, w, max_len, device)
    V = cfg["vocab_size"]
    xhal_logits = torch.frombuffer(bytearray(open(f"{args.dir}/first_logits.f32", "rb").read()),
                                   dtype=torch.float32).reshape(len(requests), V)
    with torch.no_grad():  # not inference_mode: torch.compile's graphs are guarded against its tensors
        errors, same_first = check_logits(model, requests, xhal_logits, dtype, device)
        print(f"first-token logits vs xhal: relative L2 error median {sorted(errors)[len(errors) // 2]:.2e}, "
              f"max {max(errors):.2e}; greedy first tokens equal in {same_first} of {len(requests)}")

        def eager_step(token, positions, k, v, at, mask):
            return model.forward(token, positions, k, v, at, mask, True).argmax(-1, keepdim=True)

        prompt_tokens = sum(len(r["prompt"]) for r in requests)
        decode_tokens = len(requests) * (requests[0]["max_new_tokens"] - 1)
        runs = [("eager", eager_step)]
        if args.compile:
            runs.append(("torch.compile", torch.compile(eager_step, dynamic=False)))
        for name, step in runs:
            serve_static(model, requests, dtype, device, step)  # warm-up (and compilation)
            prefill_s, decode_s = serve_static(model, requests, dtype, device, step)
            compiles = torch._dynamo.utils.counters["stats"]["unique_graphs"] if name != "eager" else 0
            print(f"PyTorch {name}, {len(requests)} requests as one static batch ({compiles} graphs compiled): prefill {prompt_tokens / prefill_s:.0f} "
                  f"prompt tokens/s ({prefill_s:.3f} s), decode {decode_tokens / decode_s:.0f} tokens/s "
                  f"({decode_s / (requests[0]['max_new_tokens'] - 1) * 1e3:.2f} ms a step)")


if __name__ == "__main__":
    main()
