"""examples/train_llama's training step in PyTorch, eager and torch.compile: the median step time
and the model FLOP utilisation by train_llama's count, for the same config on the same GPU.

The model: token embedding, decoder layers (RMSNorm, q/k/v projection, RoPE (neox), causal SDPA
with GQA, output projection, RMSNorm, SwiGLU MLP, residuals), final RMSNorm, lm head,
cross-entropy; global-norm clipping and fused AdamW. As a PyTorch user trains in bf16: f32
parameters under torch.autocast(bfloat16) (train_llama keeps bf16 parameters and f32 master
weights: the same arithmetic in the matrix products, the same optimizer state)."""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_dim, inter):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.attn_norm = nn.RMSNorm(hidden, eps=1e-5)
        self.qkv = nn.Linear(hidden, (heads + 2 * kv_heads) * head_dim, bias=False)
        self.o = nn.Linear(heads * head_dim, hidden, bias=False)
        self.mlp_norm = nn.RMSNorm(hidden, eps=1e-5)
        self.gate_up = nn.Linear(hidden, 2 * inter, bias=False)
        self.down = nn.Linear(inter, hidden, bias=False)

    def forward(self, x, cos, sin):
        B, S, _ = x.shape
        qkv = self.qkv(self.attn_norm(x)).view(B, S, self.heads + 2 * self.kv_heads, self.head_dim)
        q, k, v = qkv.split([self.heads, self.kv_heads, self.kv_heads], dim=2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                                           enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(B, S, -1))
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embedding = nn.Embedding(c.vocab, c.hidden)
        self.blocks = nn.ModuleList(Block(c.hidden, c.heads, c.kv_heads, c.head_dim, c.inter) for _ in range(c.layers))
        self.norm = nn.RMSNorm(c.hidden, eps=1e-5)
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False)
        inv_freq = 10000.0 ** (-torch.arange(0, c.head_dim, 2, dtype=torch.float64) / c.head_dim)
        angles = torch.arange(c.seq, dtype=torch.float64)[:, None] * inv_freq[None, :]
        self.register_buffer("cos", angles.cos().float()[None, :, None, :], persistent=False)
        self.register_buffer("sin", angles.sin().float()[None, :, None, :], persistent=False)

    def forward(self, ids, labels):
        x = self.embedding(ids)
        cos, sin = self.cos.to(torch.bfloat16), self.sin.to(torch.bfloat16)
        for block in self.blocks:
            x = block(x, cos, sin)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("layers", 16), ("hidden", 2048), ("head-dim", 64), ("vocab", 32000), ("seq", 2048),
                          ("batch", 4), ("steps", 10)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--modes", default="eager,compile")
    c = ap.parse_args()
    c.heads = c.hidden // c.head_dim
    c.kv_heads = c.heads // 4 if c.heads >= 8 and c.heads % 4 == 0 else c.heads // 2
    c.inter = (c.hidden * 11 // 4 + 63) // 64 * 64
    torch.manual_seed(0)
    device = "cuda"
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}: {c.layers} layers, hidden {c.hidden}, "
          f"heads {c.heads}/{c.kv_heads}, vocab {c.vocab}, {c.batch} x {c.seq} tokens")
    for mode in c.modes.split(","):
        model = Llama(c).to(device)
        params = [p for p in model.parameters()]
        matrices = sum(p.numel() for p in params) - model.embedding.weight.numel()
        opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.01, fused=True)
        forward = torch.compile(model) if mode == "compile" else model
        tokens = c.batch * c.seq

        def step():
            ids = torch.randint(0, c.vocab, (c.batch, c.seq), device=device)
            labels = torch.randint(0, c.vocab, (c.batch, c.seq), device=device)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = forward(ids, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        times = []
        for i in range(c.steps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            step().item()
            torch.cuda.synchronize()
            if i >= 3:  # the first steps compile and warm up
                times.append(time.perf_counter() - t0)
        median = statistics.median(times)
        flops = tokens * (6.0 * matrices + 12.0 * c.layers * c.hidden * c.seq)
        print(f"{mode}: median step {median * 1e3:.2f} ms, {tokens / median:.0f} tokens/s, "
              f"{flops / median / 1e12:.1f} model TFLOP/s, MFU {100 * flops / median / 1e12 / c.peak_tflops:.1f}% "
              f"of {c.peak_tflops:.0f} TFLOP/s ({matrices / 1e9:.3f} B matrix parameters)")
        del model, opt, forward, params
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
