#!/usr/bin/env python3
"""xhal side by side with PyTorch on one NVIDIA GPU or on the CPU, on the same tensors, in one process.

Run after building xhal with the CUDA backend (needs torch with CUDA, and Triton for torch.compile):

    python3 bench/peers/torch_compare.py --lib build/lib/libxhal.so [--quick] [--json OUT.json]

or, for xhal's CPU backend against torch on the CPU (torch.compile there needs a C++ compiler; a
torch without it, F.rms_norm or SDPA gets the composite peers, and a peer it lacks is left out):

    python3 bench/peers/torch_compare.py --device cpu --lib build/lib/libxhal.so

xhal is loaded with ctypes; torch tensors reach it through DLPack (zero copy) and every op runs on
torch's current stream. For each op and shape the script first checks xhal's output against each
peer's (relative L2 error in f32; NaN never passes; xhal's outputs are poisoned first), then times
xhal and the peers alternately with CUDA events: median of N runs after warm-up, with the L2 cache
flushed before every run. The ceilings (1 GiB device copy, bf16 8192^3 matmul) are measured in the
same run. --quick divides rows / tokens / sequence lengths by 8 (attention: S=1024) and times 5 runs.
On the CPU the timer is the wall clock around each (synchronous) call, the shapes are those of
xhal-bench's CPU cases, the matmul ceiling is 4096^3, and both libraries run on the same number of
threads. Exit status 1 if any check failed or any section raised.
"""
import argparse
import ctypes
import datetime
import gc
import json
import math
import os
import re
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F
import torch.utils.dlpack

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # torch before 2.3: SDPA's own choice of backend only (CPU runs)
    SDPBackend = sdpa_kernel = None

DEVICE = "cuda:0"  # --device cpu makes it "cpu"
DTYPE = torch.bfloat16
EPS = 1e-6
REL_TOL = 2e-2  # bf16; a correct kernel lands near 4e-3 (one rounding of each output element)
GiB = 1 << 30
SCALE = {"GB/s": 1e9, "TFLOP/s": 1e12}

# ------------------------------------------------------------------ xhal through ctypes


class AttentionParams(ctypes.Structure):
    # xhal_attention_params of include/xhal/xhal.h: same order, natural alignment (32 bytes).
    _fields_ = [("scale", ctypes.c_float), ("causal", ctypes.c_int32),
                ("window_left", ctypes.c_int64), ("window_right", ctypes.c_int64),
                ("softcap", ctypes.c_float)]


class SampleParams(ctypes.Structure):
    # xhal_sample_params of include/xhal/xhal.h.
    _fields_ = [("temperature", ctypes.c_float), ("top_k", ctypes.c_int64), ("top_p", ctypes.c_float),
                ("min_p", ctypes.c_float), ("seed", ctypes.c_uint64), ("step", ctypes.c_uint64)]


_P = ctypes.c_void_p  # DLTensor*, stream, optional tensors (None = NULL)
_PARAMS = ctypes.POINTER(AttentionParams)
_OP_ARGTYPES = {  # each returns xhal_status (an int enum); the native stream is always last
    "xhal_rms_norm": [_P, _P, ctypes.c_float, _P, _P],
    "xhal_fused_add_rms_norm": [_P, _P, _P, ctypes.c_float, _P, _P],
    "xhal_swiglu": [_P, _P, _P, _P],
    "xhal_gelu_and_mul_packed": [_P, _P, ctypes.c_int32, _P],
    "xhal_rope": [_P, _P, _P, _P, ctypes.c_int32, _P],
    "xhal_attention": [_P, _P, _P, _P, _PARAMS, _P, _P],
    "xhal_paged_attention": [_P, _P, _P, _P, _P, _P, _PARAMS, _P],
    "xhal_linear": [_P, _P, _P, _P, _P],
    "xhal_rms_norm_backward": [_P, _P, _P, ctypes.c_float, _P, _P, _P],
    "xhal_fused_add_rms_norm_backward": [_P, _P, _P, ctypes.c_float, _P, _P, _P, _P],
    "xhal_swiglu_backward": [_P, _P, _P, _P, _P, _P],
    "xhal_rope_backward": [_P, _P, _P, _P, ctypes.c_int32, _P],
    "xhal_cross_entropy": [_P, _P, _P, _P, ctypes.c_int64, ctypes.c_float, ctypes.c_float, _P],
    "xhal_cross_entropy_backward": [_P, _P, _P, _P, _P, ctypes.c_int64, ctypes.c_float, ctypes.c_float, _P],
    "xhal_linear_backward": [_P, _P, _P, _P, _P, _P, _P],
    "xhal_attention_backward": [_P, _P, _P, _P, _P, _P, _P, _P, _P, _PARAMS, _P],
    "xhal_embedding": [_P, _P, _P, _P],
    "xhal_embedding_backward": [_P, _P, _P, ctypes.c_int64, _P],
    "xhal_merge_attention_states": [_P, _P, _P, _P, _P, _P, _P],
    "xhal_kv_cache_write": [_P, _P, _P, _P, _P, _P],
    "xhal_argmax": [_P, _P, _P, _P],
    "xhal_softmax": [_P, _P, _P],
    "xhal_add": [_P, _P, _P, _P],
    "xhal_mul": [_P, _P, _P, _P],
    "xhal_sample": [_P, _P, ctypes.POINTER(SampleParams), _P, _P],
    "xhal_top_k": [_P, _P, _P, _P],
    "xhal_quantize": [_P, _P, _P, ctypes.c_int32, ctypes.c_int64, ctypes.c_int32, _P],
    "xhal_linear_fp8": [_P, _P, _P, _P, _P, _P, _P],
    "xhal_linear_int8": [_P, _P, _P, _P, _P, _P, _P],
}

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def dlpack_capsule(t):
    # The legacy "dltensor" capsule holds a DLManagedTensor whose first member is the DLTensor.
    # (t.__dlpack__(max_version=(1, 0)) would give DLManagedTensorVersioned, laid out differently.)
    to_dlpack = getattr(torch.utils.dlpack, "to_dlpack", None)
    return to_dlpack(t) if to_dlpack is not None else t.__dlpack__()


class Xhal:
    def __init__(self, path):
        path = os.path.abspath(path)
        # libxhal_cuda.so sits next to libxhal.so; xhal reads this when it first enumerates devices.
        os.environ["XHAL_PLUGIN_PATH"] = os.path.dirname(path)
        self.lib = lib = ctypes.CDLL(path)
        for name, argtypes in _OP_ARGTYPES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        lib.xhal_last_error.argtypes, lib.xhal_last_error.restype = [], ctypes.c_char_p
        lib.xhal_attention_params_default.argtypes = []
        lib.xhal_attention_params_default.restype = AttentionParams
        lib.xhal_device_count.argtypes = [ctypes.POINTER(ctypes.c_int32)]
        lib.xhal_device_name.argtypes = [ctypes.c_int32, ctypes.c_char_p, ctypes.c_size_t]
        lib.xhal_device_count.restype = lib.xhal_device_name.restype = ctypes.c_int

    def check(self, status, what):
        if status != 0:  # xhal_last_error is per thread: read it right away, on this thread
            raise RuntimeError(f"{what}: status {status}: {self.lib.xhal_last_error().decode()}")

    def devices(self):
        n = ctypes.c_int32()
        self.check(self.lib.xhal_device_count(ctypes.byref(n)), "xhal_device_count")
        names = []
        for i in range(n.value):
            buf = ctypes.create_string_buffer(64)
            self.check(self.lib.xhal_device_name(i, buf, len(buf)), "xhal_device_name")
            names.append(buf.value.decode())
        return names

    def attention_params(self, causal=False):
        p = self.lib.xhal_attention_params_default()
        p.causal = int(causal)
        return ctypes.pointer(p)  # the pointer object keeps the struct alive

    def op(self, name, *args):
        """A no-argument callable that runs xhal op `name` on torch's current stream. Tensors
        become DLTensor pointers (their capsules live as long as the callable), None is NULL.
        All conversion happens here, so a timed call costs only the ctypes call itself."""
        keep, cargs = [], []
        for a in args:
            if isinstance(a, torch.Tensor):
                capsule = dlpack_capsule(a)
                keep.append(capsule)
                cargs.append(_capsule_pointer(capsule, b"dltensor"))
            else:
                cargs.append(a)
        # torch's default stream is the legacy stream, handle 0; xhal reads NULL as the device's
        # default stream, which is the same legacy stream on CUDA. On the CPU, ops are synchronous.
        cargs.append(torch.cuda.current_stream().cuda_stream if on_cuda() else None)
        fn = getattr(self.lib, name)

        def run():
            self.check(fn(*cargs), name)
        run.keep = keep
        return run


# ------------------------------------------------------------------ timing and checking


def on_cuda():
    return DEVICE.startswith("cuda")


class Bench:
    # On the CPU a pause after the flush: both libraries' OpenMP thread pools spin for a while
    # after their parallel regions, and a pool still spinning would take cores from the next call.
    CPU_SETTLE_S = 0.05

    def __init__(self, iters, warmup):
        self.iters, self.warmup = iters, warmup
        # Beyond L2 on the GPU, and beyond the last-level cache of the CPU hosts these run on.
        self.flush_buf = torch.empty((256 if on_cuda() else 1024) << 20, dtype=torch.uint8, device=DEVICE)

    def time(self, cands):
        """cands: {name: prepare}; prepare() does the untimed set-up (clones for in-place ops) and
        returns the callable to time. Candidates alternate within each round, so clock and thermal
        drift hit all of them alike. Returns {name: median ms}."""
        for _ in range(self.warmup):
            for prepare in cands.values():
                prepare()()
        if not on_cuda():
            return self.time_cpu(cands)
        events = {name: [] for name in cands}
        for _ in range(self.iters):
            for name, prepare in cands.items():
                run = prepare()
                # Cold L2, as in a model where other layers ran in between. The memset (~0.1 ms
                # of GPU time) also hides the host cost of launching the timed call.
                self.flush_buf.zero_()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                run()
                end.record()
                events[name].append((start, end))
        torch.cuda.synchronize()
        return {name: statistics.median([s.elapsed_time(e) for s, e in ev])
                for name, ev in events.items()}

    def time_cpu(self, cands):
        times = {name: [] for name in cands}
        for _ in range(self.iters):
            for name, prepare in cands.items():
                run = prepare()
                self.flush_buf.zero_()
                time.sleep(self.CPU_SETTLE_S)
                start = time.perf_counter()
                run()
                times[name].append((time.perf_counter() - start) * 1e3)
        return {name: statistics.median(t) for name, t in times.items()}


def compare(outs, refs):
    """(max abs diff, ||a - b|| / ||b||) over all outputs together, in f32; NaN anywhere in xhal's
    outputs makes both NaN, which fails the check."""
    diff2 = ref2 = max_abs = 0.0
    for a, b in zip(outs, refs, strict=True):
        if a.shape != b.shape:  # a - b would broadcast silently
            raise ValueError(f"xhal output {tuple(a.shape)} vs peer {tuple(b.shape)}")
        a, b = a.float(), b.float()
        if torch.isnan(a).any().item():
            return float("nan"), float("nan")
        d = a - b
        max_abs = max(max_abs, d.abs().max().item())
        diff2 += d.square().sum(dtype=torch.float64).item()
        ref2 += b.square().sum(dtype=torch.float64).item()
        del a, b, d  # the f32 copies of a 1 GiB output are 2 GiB each
    return max_abs, (diff2 / max(ref2, 1e-30)) ** 0.5


def run_case(ctx, xhal_prep, peers, poison, work, unit, ceiling, check=compare):
    """One op at one shape. xhal_prep() -> (run, outs): untimed set-up, the callable, and the
    tensors that hold its results. peers: [(name, fn)], fn() -> list of outputs in the order of
    outs. poison: xhal's pure outputs, filled with NaN before the checking run. check(outs, refs)
    -> (max abs, relative error) of xhal's outputs (compare: against the peer's). Returns rows."""
    for t in poison:
        t.fill_(float("nan"))
    run, outs = xhal_prep()
    run()
    checked = {}
    for name, fn in peers:
        try:
            refs = fn()
        except Exception as e:  # e.g. an SDPA backend that refuses these inputs: not fatal
            ctx.notes.append(f"{ctx.where}: peer {name} refused: {first_line(e)}")
            print(f"  {ctx.notes[-1]}", flush=True)
            continue
        checked[name] = (fn, check(outs, refs))
        del refs
    del run, outs
    if not checked:
        raise RuntimeError("no peer ran: nothing to check xhal against")
    cands = {"xhal": lambda: xhal_prep()[0]}
    cands.update({name: (lambda fn=fn: fn) for name, (fn, _) in checked.items()})
    ms = ctx.bench.time(cands)
    rows = []
    for name, (_, (max_abs, rel)) in checked.items():
        rate = work / (ms["xhal"] * 1e-3) / SCALE[unit]
        limit = ctx.ceilings.get(ceiling)
        rows.append(dict(xhal_ms=ms["xhal"], peer=name, peer_ms=ms[name],
                         speedup=ms[name] / ms["xhal"], work=work, unit=unit, xhal_rate=rate,
                         peer_rate=work / (ms[name] * 1e-3) / SCALE[unit], ceiling=ceiling,
                         frac=rate / limit if limit else None, rel_err=rel, max_abs=max_abs,
                         ok=rel <= REL_TOL))  # NaN compares False
    return rows


def first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:160]


def randn(*shape, scale=1.0):
    return torch.randn(*shape, device=DEVICE, dtype=DTYPE) * scale


# ------------------------------------------------------------------ peers compiled by torch

def maybe_compile(fn):
    # dynamic=False: each shape gets its own specialised kernel, as a user's fixed-shape model would.
    # None where this torch has no torch.compile (before 2.0).
    return torch.compile(fn, dynamic=False) if hasattr(torch, "compile") else None


def _rms_norm(x, w):
    if hasattr(F, "rms_norm"):  # torch 2.4 and later
        return F.rms_norm(x, (x.shape[-1],), w, EPS)
    xf = x.float()  # what a user of an older torch writes
    return (xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)


RMS_NORM_NAME = "F.rms_norm" if hasattr(F, "rms_norm") else "composite"


def _add_rms_norm(x, res, w):
    r = x + res
    return _rms_norm(r, w), r


def _silu_mul(g, u):
    return F.silu(g) * u


def _gelu_mul_packed(x):  # vLLM's layout: gate and up the halves of one row
    g, u = x.chunk(2, dim=-1)
    return F.gelu(g) * u


def _gelu_tanh_mul_packed(x):
    g, u = x.chunk(2, dim=-1)
    return F.gelu(g, approximate="tanh") * u


def _neox_rotate(x, cos, sin):
    half = cos.shape[-1]
    x1, x2 = x[..., :half].float(), x[..., half:2 * half].float()
    rest = x[..., 2 * half:].float()  # features past rotary_dim pass through
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1).to(x.dtype)


def _rope_neox(q, k, positions, cache):
    cs = cache[positions]  # [T, rotary_dim] f32: the same cache xhal reads
    half = cache.shape[1] // 2
    cos, sin = cs[:, None, :half], cs[:, None, half:]
    return _neox_rotate(q, cos, sin), _neox_rotate(k, cos, sin)


def _cross_entropy(x, labels):
    return F.cross_entropy(x, labels, reduction="none")


def _linear(x, w, b):
    return F.linear(x, w, b)


def _embedding(ids, table):
    return F.embedding(ids, table)


def _merge_attention_states(out_a, lse_a, out_b, lse_b):
    # What a serving engine writes without a fused kernel: [H, T] lse, [T, H, D] outputs.
    lse = torch.logaddexp(lse_a, lse_b)
    wa, wb = torch.exp(lse_a - lse).t()[..., None], torch.exp(lse_b - lse).t()[..., None]
    return (wa * out_a.float() + wb * out_b.float()).to(out_a.dtype), lse


COMPILED = {fn: maybe_compile(fn)
            for fn in (_rms_norm, _add_rms_norm, _silu_mul, _gelu_mul_packed, _gelu_tanh_mul_packed, _rope_neox, _cross_entropy, _linear, _embedding,
                       _merge_attention_states)}


def peers_of(eager_name, fn, *args):
    """An elementwise op's peers: torch.compile of fn, and on the CPU also fn as written (eager),
    which is what most CPU users run. Each returns its outputs as a list."""
    as_list = lambda out: list(out) if isinstance(out, tuple) else [out]
    peers = [] if on_cuda() else [(eager_name, lambda: as_list(fn(*args)))]
    if COMPILED[fn] is not None:
        peers.append(("compile", lambda: as_list(COMPILED[fn](*args))))
    return peers


def sdpa_peer(backend, q, k, v, post=lambda o: o, **kw):
    def run():
        if backend is None:  # SDPA's own choice, as a model calling it gets
            return [post(F.scaled_dot_product_attention(q, k, v, **kw))]
        with sdpa_kernel(backend):
            return [post(F.scaled_dot_product_attention(q, k, v, **kw))]
    return run


def composite_attention(q, k, v, causal, post=lambda o: o):
    """softmax(q k^T / sqrt(D)) v in f32, for a torch without SDPA (before 2.0); [B, H, S, D], with
    k and v's heads repeated for the query heads they serve."""
    def run():
        group = q.shape[1] // k.shape[1]
        kf, vf = (t.float().repeat_interleave(group, dim=1) for t in (k, v))
        s = q.float() @ kf.transpose(-1, -2) * q.shape[-1] ** -0.5
        if causal:
            sq, sk = s.shape[-2:]
            s.masked_fill_(torch.ones(sq, sk, dtype=torch.bool).triu(sk - sq + 1), float("-inf"))
        return [post((s.softmax(-1) @ vf).to(q.dtype))]
    return run


def attention_peers(q, k, v, causal, post=lambda o: o, gqa=False):
    """SDPA under each backend on the GPU; on the CPU, SDPA's own choice (or the composite)."""
    kw = dict(is_causal=causal, **({"enable_gqa": True} if gqa else {}))
    if on_cuda():
        backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
        order = ("cudnn", "flash") if gqa else ("flash", "cudnn")  # the first checks correctness
        return [(f"sdpa {n}", sdpa_peer(backends[n], q, k, v, post, **kw)) for n in order]
    if hasattr(F, "scaled_dot_product_attention"):
        return [("sdpa", sdpa_peer(None, q, k, v, post, **kw))]
    return [("composite", composite_attention(q, k, v, causal, post))]

# ------------------------------------------------------------------ the cases


def case_rms_norm(ctx, M, N):
    x, w = randn(M, N), 1 + randn(N, scale=0.1)
    out = torch.empty_like(x)
    run = ctx.xhal.op("xhal_rms_norm", x, w, EPS, out)
    # The eager op is the peer everywhere (F.rms_norm is fused on GPUs), the compiled one on the CPU.
    peers = [(RMS_NORM_NAME, lambda: [_rms_norm(x, w)])]
    if not on_cuda() and COMPILED[_rms_norm] is not None:
        peers.append(("compile", lambda: [COMPILED[_rms_norm](x, w)]))
    return run_case(ctx, lambda: (run, [out]), peers, [out],
                    2 * M * N * 2 + N * 2, "GB/s", "copy")


def case_fused_add(ctx, M, N):
    x, res, w = randn(M, N), randn(M, N), 1 + randn(N, scale=0.1)
    out = torch.empty_like(x)

    def prep():
        r = res.clone()  # xhal writes x + res into the residual: a fresh copy per run, untimed
        return ctx.xhal.op("xhal_fused_add_rms_norm", x, r, w, EPS, out), [out, r]
    # read x, read res, write res, write out (+ the weight)
    return run_case(ctx, prep, peers_of("eager", _add_rms_norm, x, res, w), [out],
                    4 * M * N * 2 + N * 2, "GB/s", "copy")


def case_swiglu(ctx, M, N):
    g, u = randn(M, N), randn(M, N)
    out = torch.empty_like(g)
    run = ctx.xhal.op("xhal_swiglu", g, u, out)
    return run_case(ctx, lambda: (run, [out]), peers_of("eager", _silu_mul, g, u), [out],
                    3 * M * N * 2, "GB/s", "copy")


def case_gelu_and_mul_packed(ctx, M, N, tanh):
    x = randn(M, 2 * N, scale=2.0)
    out = torch.empty(M, N, device=DEVICE, dtype=DTYPE)
    run = ctx.xhal.op("xhal_gelu_and_mul_packed", x, out, int(tanh))
    fn = _gelu_tanh_mul_packed if tanh else _gelu_mul_packed
    return run_case(ctx, lambda: (run, [out]), peers_of("eager", fn, x), [out], 3 * M * N * 2, "GB/s", "copy")


def rope_cache(max_pos, rotary_dim, theta=10000.0):
    # xhal's documented layout: row p = [cos(p*f_0..f_{r/2-1}), sin(same)], f_i = theta^(-2i/r),
    # computed in f64 like xhal_rope_cache, stored as f32.
    i = torch.arange(rotary_dim // 2, dtype=torch.float64, device=DEVICE)
    inv_freq = theta ** (-2 * i / rotary_dim)
    angles = torch.arange(max_pos, dtype=torch.float64, device=DEVICE)[:, None] * inv_freq[None, :]
    return torch.cat([angles.cos(), angles.sin()], dim=1).float().contiguous()


def case_rope(ctx, T, Hq=32, Hkv=8, D=128, rotary_dim=128, max_pos=4096):
    q, k = randn(T, Hq, D), randn(T, Hkv, D)
    positions = torch.arange(T, dtype=torch.int64, device=DEVICE) % max_pos
    cache = rope_cache(max_pos, rotary_dim)

    def prep():
        qc, kc = q.clone(), k.clone()  # rope works in place: fresh copies per run, untimed
        return ctx.xhal.op("xhal_rope", qc, kc, positions, cache, 1), [qc, kc]
    # Nothing to poison (in place); a kernel that skipped elements still fails the check.
    return run_case(ctx, prep, peers_of("eager", _rope_neox, q, k, positions, cache), [],
                    2 * (T * Hq * D + T * Hkv * D) * 2, "GB/s", "copy")


def case_attention(ctx, B, H, S, D, causal):
    q, k, v = randn(B, H, S, D), randn(B, H, S, D), randn(B, H, S, D)
    out = torch.empty_like(q)
    # xhal wants [B,S,H,D]; transposed views of torch's [B,H,S,D] tensors are exactly that.
    t = lambda x: x.transpose(1, 2)
    run = ctx.xhal.op("xhal_attention", t(q), t(k), t(v), t(out),
                      ctx.xhal.attention_params(causal), None)
    peers = attention_peers(q, k, v, causal)
    flops = 4 * B * H * S * S * D // (2 if causal else 1)
    return run_case(ctx, lambda: (run, [out]), peers, [out], flops, "TFLOP/s", "gemm")


def sdpa_backward_peers(q, k, v, dout, causal):
    """dq, dk, dv by autograd through SDPA under each backend (GPU) or its own choice (CPU): the
    forward runs once, under the backend, and the backward alone is timed."""
    def peer(backend):
        leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
        if backend is None:
            out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
        else:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
        return lambda: list(torch.autograd.grad(out, leaves, dout, retain_graph=True))
    if on_cuda():
        return [("sdpa flash", peer(SDPBackend.FLASH_ATTENTION)), ("sdpa cudnn", peer(SDPBackend.CUDNN_ATTENTION))]
    return [("sdpa", peer(None))]


def case_attention_backward(ctx, B, H, S, D, causal):
    q, k, v, dout = randn(B, H, S, D), randn(B, H, S, D), randn(B, H, S, D), randn(B, H, S, D)
    out, lse = torch.empty_like(q), torch.empty(B, H, S, device=DEVICE, dtype=torch.float32)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    t = lambda x: x.transpose(1, 2)  # xhal's [B,S,H,D] views of torch's [B,H,S,D] tensors
    params = ctx.xhal.attention_params(causal)
    ctx.xhal.op("xhal_attention", t(q), t(k), t(v), t(out), params, lse)()
    run = ctx.xhal.op("xhal_attention_backward", t(dout), t(q), t(k), t(v), t(out), lse, t(dq), t(dk), t(dv), params)
    flops = 10 * B * H * S * S * D // (2 if causal else 1)  # 2.5 times the forward's
    return run_case(ctx, lambda: (run, [dq, dk, dv]), sdpa_backward_peers(q, k, v, dout, causal), [dq, dk, dv],
                    flops, "TFLOP/s", "gemm")


def case_paged(ctx, B, Hq, Hkv, L, D, block_size=16):
    per_seq = L // block_size
    num_blocks = B * per_seq
    k_cache = randn(num_blocks, block_size, Hkv, D)
    v_cache = randn(num_blocks, block_size, Hkv, D)
    # Shuffled, so no sequence lies contiguously in the cache (as after a while of serving).
    table = torch.randperm(num_blocks, device=DEVICE).view(B, per_seq).to(torch.int32)
    seq_lens = torch.full((B,), L, dtype=torch.int32, device=DEVICE)
    q = randn(B, Hq, D)
    out = torch.empty_like(q)
    run = ctx.xhal.op("xhal_paged_attention", q, k_cache, v_cache, table, seq_lens, out,
                      ctx.xhal.attention_params())

    def dense(cache):  # [B, Hkv, L, D], gathered once, outside timing
        return cache[table.long()].reshape(B, L, Hkv, D).transpose(1, 2).contiguous()
    kd, vd = dense(k_cache), dense(v_cache)
    # The decode token is the last one, so it sees every key: no mask needed.
    peers = attention_peers(q.unsqueeze(2), kd, vd, False, post=lambda o: o.squeeze(2), gqa=True)
    nbytes = 2 * B * L * Hkv * D * 2 + 2 * B * Hq * D * 2  # K and V of the context, q, out
    return run_case(ctx, lambda: (run, [out]), peers, [out], nbytes, "GB/s", "copy")


def case_linear(ctx, M, N, K):
    x, w, b = randn(M, K), randn(N, K, scale=K ** -0.5), randn(N)
    out = torch.empty(M, N, device=DEVICE, dtype=DTYPE)
    run = ctx.xhal.op("xhal_linear", x, w, b, out)
    peer = lambda: [F.linear(x, w, b)]
    return run_case(ctx, lambda: (run, [out]), [("F.linear", peer)], [out],
                    2 * M * N * K, "TFLOP/s", "gemm")


# ------------------------------------------------------------------ gradients against autograd


def autograd_peers(fn, inputs, douts, wrt):
    """The gradients of fn(*inputs) w.r.t. inputs[i] for i in wrt, by torch autograd, eager and (on
    the GPU, and on the CPU where it compiles) torch.compile's: the backward pass alone is timed,
    the forward runs once beforehand and its graph is kept."""
    def peer(f):
        leaves = [t.detach().requires_grad_(i in wrt) for i, t in enumerate(inputs)]
        out = f(*leaves)
        outs = list(out) if isinstance(out, tuple) else [out]
        targets = [leaves[i] for i in wrt]
        return lambda: list(torch.autograd.grad(outs, targets, douts, retain_graph=True))
    peers = [("autograd", peer(fn))]
    if COMPILED[fn] is not None:
        peers.append(("compile", peer(COMPILED[fn])))
    return peers


def case_rms_norm_backward(ctx, M, N):
    x, w, dout = randn(M, N), 1 + randn(N, scale=0.1), randn(M, N)
    dx, dw = torch.empty_like(x), torch.empty_like(w)
    run = ctx.xhal.op("xhal_rms_norm_backward", dout, x, w, EPS, dx, dw)
    # read dout and x, write dx (+ the weight and its gradient)
    return run_case(ctx, lambda: (run, [dx, dw]), autograd_peers(_rms_norm, (x, w), [dout], (0, 1)), [dx, dw],
                    3 * M * N * 2 + 2 * N * 2, "GB/s", "copy")


def case_fused_add_backward(ctx, M, N):
    res, w, dout, dres = randn(M, N), 1 + randn(N, scale=0.1), randn(M, N), randn(M, N)
    dw = torch.empty_like(w)

    def prep():
        # xhal adds into the residual stream's gradient, which is also dx (in place): a fresh copy
        # per run, untimed.
        d = dres.clone()
        return ctx.xhal.op("xhal_fused_add_rms_norm_backward", dout, res, w, EPS, d, d, dw), [d, d, dw]
    # The forward's residual output is x + res: the peer's input x is zero, res the sum, so the
    # gradients of x and res are both xhal's dx.
    zero = torch.zeros_like(res)
    peers = autograd_peers(_add_rms_norm, (zero, res, w), [dout, dres], (0, 1, 2))
    # read dout, residual, dresidual; write dresidual (= dx)
    return run_case(ctx, prep, peers, [dw], 4 * M * N * 2 + 2 * N * 2, "GB/s", "copy")


def case_swiglu_backward(ctx, M, N):
    g, u, dout = randn(M, N), randn(M, N), randn(M, N)
    dg, du = torch.empty_like(g), torch.empty_like(u)
    run = ctx.xhal.op("xhal_swiglu_backward", dout, g, u, dg, du)
    return run_case(ctx, lambda: (run, [dg, du]), autograd_peers(_silu_mul, (g, u), [dout], (0, 1)), [dg, du],
                    5 * M * N * 2, "GB/s", "copy")


def case_rope_backward(ctx, T, Hq=32, Hkv=8, D=128, rotary_dim=128, max_pos=4096):
    dq, dk = randn(T, Hq, D), randn(T, Hkv, D)
    positions = torch.arange(T, dtype=torch.int64, device=DEVICE) % max_pos
    cache = rope_cache(max_pos, rotary_dim)

    def prep():
        qc, kc = dq.clone(), dk.clone()  # in place: fresh copies per run, untimed
        return ctx.xhal.op("xhal_rope_backward", qc, kc, positions, cache, 1), [qc, kc]
    peers = autograd_peers(_rope_neox, (randn(T, Hq, D), randn(T, Hkv, D), positions, cache), [dq, dk], (0, 1))
    return run_case(ctx, prep, peers, [], 2 * (T * Hq * D + T * Hkv * D) * 2, "GB/s", "copy")


def case_cross_entropy(ctx, T, V):
    x, labels = randn(T, V, scale=4.0), torch.randint(0, V, (T,), device=DEVICE)
    loss = torch.empty(T, device=DEVICE, dtype=torch.float32)
    lse = torch.empty_like(loss)
    run = ctx.xhal.op("xhal_cross_entropy", x, labels, loss, lse, -100, 0.0, 0.0)
    peers = [("F.cross_entropy", lambda: [_cross_entropy(x, labels)])]
    if COMPILED[_cross_entropy] is not None:
        peers.append(("compile", lambda: [COMPILED[_cross_entropy](x, labels)]))
    return run_case(ctx, lambda: (run, [loss]), peers, [loss, lse], T * V * 2, "GB/s", "copy")


def case_cross_entropy_backward(ctx, T, V):
    x, labels = randn(T, V, scale=4.0), torch.randint(0, V, (T,), device=DEVICE)
    loss = torch.empty(T, device=DEVICE, dtype=torch.float32)
    lse = torch.empty_like(loss)
    ctx.xhal.op("xhal_cross_entropy", x, labels, loss, lse, -100, 0.0, 0.0)()
    dloss = torch.full((T,), 1.0 / T, device=DEVICE)  # a mean over the tokens: exact in bf16 and f32

    def prep():
        d = x.clone()  # the gradient is written over the logits (in place): a fresh copy per run
        return ctx.xhal.op("xhal_cross_entropy_backward", d, labels, lse, dloss, d, -100, 0.0, 0.0), [d]
    peers = autograd_peers(_cross_entropy, (x, labels), [dloss.to(DTYPE)], (0,))
    # read the logits, write the gradient (+ the per-token values)
    return run_case(ctx, prep, peers, [], 2 * T * V * 2, "GB/s", "copy")


def case_linear_backward(ctx, M, N, K):
    x, w, b, dout = randn(M, K), randn(N, K, scale=K ** -0.5), randn(N), randn(M, N)
    dx, dw, db = torch.empty_like(x), torch.empty_like(w), torch.empty_like(b)
    run = ctx.xhal.op("xhal_linear_backward", dout, x, w, dx, dw, db)
    peers = autograd_peers(_linear, (x, w, b), [dout], (0, 1, 2))
    return run_case(ctx, lambda: (run, [dx, dw, db]), peers, [dx, dw, db], 4 * M * N * K, "TFLOP/s", "gemm")


def case_embedding(ctx, T, V, D):
    ids, table = torch.randint(0, V, (T,), device=DEVICE), randn(V, D)
    out = torch.empty(T, D, device=DEVICE, dtype=DTYPE)
    run = ctx.xhal.op("xhal_embedding", ids, table, out)
    peers = [("F.embedding", lambda: [_embedding(ids, table)])]
    return run_case(ctx, lambda: (run, [out]), peers, [out], 2 * T * D * 2, "GB/s", "copy")


def case_embedding_backward(ctx, T, V, D):
    ids, dout = torch.randint(0, V, (T,), device=DEVICE), randn(T, D)
    dtable = torch.empty(V, D, device=DEVICE, dtype=DTYPE)
    run = ctx.xhal.op("xhal_embedding_backward", ids, dout, dtable, -1)
    peers = autograd_peers(_embedding, (ids, randn(V, D)), [dout], (1,))
    # read dout, write the table's gradient
    return run_case(ctx, lambda: (run, [dtable]), peers, [dtable], (T + V) * D * 2, "GB/s", "copy")


def case_merge_attention_states(ctx, T, H, D):
    out_a, out_b = randn(T, H, D), randn(T, H, D)
    lse_a, lse_b = torch.randn(H, T, device=DEVICE) * 4, torch.randn(H, T, device=DEVICE) * 4
    out, lse = torch.empty_like(out_a), torch.empty_like(lse_a)
    run = ctx.xhal.op("xhal_merge_attention_states", out_a, lse_a, out_b, lse_b, out, lse)
    peers = peers_of("eager", _merge_attention_states, out_a, lse_a, out_b, lse_b)
    # read both parts and their lse, write the merged result and lse
    return run_case(ctx, lambda: (run, [out, lse]), peers, [out, lse], 3 * T * H * (2 * D + 4), "GB/s", "copy")


def case_kv_cache_write(ctx, T, Hkv, D, block_size=16):
    k, v = randn(T, Hkv, D), randn(T, Hkv, D)
    blocks = 2 * T // block_size  # half the cache's slots taken, in a shuffled order
    slots = torch.randperm(blocks * block_size, device=DEVICE)[:T]
    k_cache = torch.zeros(blocks, block_size, Hkv, D, device=DEVICE, dtype=DTYPE)
    v_cache = torch.zeros_like(k_cache)
    run = ctx.xhal.op("xhal_kv_cache_write", k, v, slots, k_cache, v_cache)

    kc, vc = torch.zeros_like(k_cache), torch.zeros_like(v_cache)

    def indexed():  # vLLM's reshape_and_cache as torch indexing writes it
        kc.view(-1, Hkv, D)[slots] = k
        vc.view(-1, Hkv, D)[slots] = v
        return [kc, vc]
    # Caches are read-write: the zeros stay zeros where no token lands, in both.
    return run_case(ctx, lambda: (run, [k_cache, v_cache]), [("index_put", indexed)], [],
                    4 * T * Hkv * D * 2 + 8 * T, "GB/s", "copy")


def case_argmax(ctx, B, V):
    logits = randn(B, V, scale=4.0)
    indices = torch.empty(B, device=DEVICE, dtype=torch.int64)
    values = torch.empty(B, device=DEVICE, dtype=DTYPE)
    run = ctx.xhal.op("xhal_argmax", logits, indices, values)

    def peer():  # greedy decoding as engines write it: the position and the logit
        v, i = torch.max(logits, dim=-1)
        return [i, v]
    return run_case(ctx, lambda: (run, [indices, values]), [("torch.max", peer)], [values],
                    B * V * 2 + B * 10, "GB/s", "copy")


def case_sample(ctx, B, V, top_p):
    """Top-p sampling at temperature 1 against the sort-based filter engines use (sort, softmax,
    cumsum, mask, scatter back, multinomial). The draws differ (different random numbers): the
    check is that every xhal token lies in the nucleus torch computes from the same logits."""
    logits = randn(B, V, scale=4.0)
    tokens = torch.empty(B, device=DEVICE, dtype=torch.int64)
    params = SampleParams(1.0, 0, top_p, 0.0, 1234, 0)
    run = ctx.xhal.op("xhal_sample", logits, tokens, ctypes.pointer(params), None)

    def filtered():
        sorted_logits, order = logits.float().sort(dim=-1, descending=False)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        drop = cumulative <= 1 - top_p
        drop[:, -1] = False
        masked = sorted_logits.masked_fill(drop, float("-inf"))
        return torch.empty_like(masked).scatter_(-1, order, masked)

    def peer():
        return [torch.multinomial(filtered().softmax(dim=-1), 1).squeeze(1)]

    def in_nucleus(outs, refs):
        kept = torch.isfinite(filtered().gather(-1, outs[0].view(B, 1))).float()
        return 0.0, 1.0 - kept.mean().item()
    return run_case(ctx, lambda: (run, [tokens]), [("torch top-p (sort)", peer)], [], B * V * 2, "GB/s", "copy",
                    check=in_nucleus)


def case_top_k(ctx, B, V, k):
    x = randn(B, V, scale=4.0)
    values = torch.empty(B, k, device=DEVICE, dtype=DTYPE)
    indices = torch.empty(B, k, device=DEVICE, dtype=torch.int64)
    run = ctx.xhal.op("xhal_top_k", x, values, indices)

    def peer():
        v, i = torch.topk(x, k, dim=-1)
        return [v, i]

    def same_values(outs, refs):
        """torch.topk orders ties as it likes: the values must match torch's, and each index must
        hold its value (xhal's order among ties is the conformance suite's to check)."""
        err = max((outs[0].float() - refs[0].float()).abs().max().item(),
                  (x.gather(-1, outs[1]).float() - outs[0].float()).abs().max().item())
        return err, err
    return run_case(ctx, lambda: (run, [values, indices]), [("torch.topk", peer)], [values],
                    B * V * 2 + B * k * 10, "GB/s", "copy", check=same_values)


def case_quantize(ctx, M, N):
    """Per-token (a scale a row) dynamic e4m3 quantization as engines write it in eager PyTorch:
    amax over the row, scale = amax / 448, (x / scale) clamped and cast. The codes must match."""
    x = randn(M, N, scale=4.0)
    q = torch.empty(M, N, device=DEVICE, dtype=torch.float8_e4m3fn)
    scale = torch.empty(M, 1, device=DEVICE, dtype=torch.float32)
    run = ctx.xhal.op("xhal_quantize", x, q, scale, 1, 0, 1)

    def peer():
        s = x.abs().amax(dim=-1, keepdim=True).float() / 448.0
        return [(x.float() / s).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), s]

    def same_codes(outs, refs):
        differ = (outs[0].view(torch.uint8) != refs[0].view(torch.uint8)).sum().item()
        err = differ / outs[0].numel() + (outs[1] - refs[1]).abs().max().item()
        return err, err
    return run_case(ctx, lambda: (run, [q, scale]), [("torch eager", peer)], [],
                    M * N * 3 + M * 4, "GB/s", "copy", check=same_codes)


def case_linear_fp8(ctx, M, N, K, per_row):
    """e4m3 x e4m3 -> the bench dtype with per-row (per token / per channel) or per-tensor scales,
    against torch._scaled_mm (cuBLASLt's fp8 GEMM, or torch's own rowwise kernel) on the same codes
    and scales, and F.linear in the bench dtype on their dequantized values (the rate fp8 is to beat)."""
    def quantized(rows):
        v = randn(rows, K)
        s = (v.abs().amax(dim=-1, keepdim=True).float() / 448.0) if per_row else v.abs().amax().float().reshape(1) / 448.0
        return (v.float() / s).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), s
    x, xs = quantized(M)
    w, ws = quantized(N)
    out = torch.empty(M, N, device=DEVICE, dtype=DTYPE)
    run = ctx.xhal.op("xhal_linear_fp8", x, xs, w, ws, None, out)
    x_wide, w_wide = (x.to(DTYPE) * xs.to(DTYPE)), (w.to(DTYPE) * ws.to(DTYPE))
    scale_a = xs if per_row else xs.reshape(())
    scale_b = ws.reshape(1, N).contiguous() if per_row else ws.reshape(())
    peers = [("torch._scaled_mm", lambda: [torch._scaled_mm(x, w.t(), scale_a, scale_b, out_dtype=DTYPE)]),
             (f"F.linear {str(DTYPE).split('.')[-1]}", lambda: [F.linear(x_wide, w_wide)])]
    return run_case(ctx, lambda: (run, [out]), peers, [out], 2 * M * N * K, "TFLOP/s", "gemm")


def case_linear_int8(ctx, M, N, K):
    """int8 x int8 -> the bench dtype with a scale a row of x (per token) and of w (per channel),
    against torch._int_mm (cuBLASLt's int8 GEMM into int32) with the scales applied in eager
    PyTorch, and F.linear in the bench dtype on the dequantized values."""
    def quantized(rows):
        v = randn(rows, K)
        s = v.abs().amax(dim=-1, keepdim=True).float() / 127.0
        return (v.float() / s).round().clamp(-127, 127).to(torch.int8), s
    x, xs = quantized(M)
    w, ws = quantized(N)
    out = torch.empty(M, N, device=DEVICE, dtype=DTYPE)
    run = ctx.xhal.op("xhal_linear_int8", x, xs, w, ws, None, out)
    x_wide, w_wide = x.to(DTYPE) * xs.to(DTYPE), w.to(DTYPE) * ws.to(DTYPE)
    wt, ws_row = w.t(), ws.reshape(1, N)
    peers = [("torch._int_mm + scales", lambda: [(torch._int_mm(x, wt).float() * (xs * ws_row)).to(DTYPE)]),
             (f"F.linear {str(DTYPE).split('.')[-1]}", lambda: [F.linear(x_wide, w_wide)])]
    return run_case(ctx, lambda: (run, [out]), peers, [out], 2 * M * N * K, "TFLOP/s", "gemm")


def case_softmax(ctx, M, N):
    x = randn(M, N, scale=4.0)
    out = torch.empty_like(x)
    run = ctx.xhal.op("xhal_softmax", x, out)
    return run_case(ctx, lambda: (run, [out]), [("torch.softmax", lambda: [torch.softmax(x, dim=-1)])], [out],
                    2 * M * N * x.element_size(), "GB/s", "copy")


def case_binary(ctx, M, N, op, row):
    x = randn(M, N)
    y = randn(N) if row else randn(M, N)
    out = torch.empty_like(x)
    run = ctx.xhal.op(f"xhal_{op}", x, y, out)
    fn = torch.add if op == "add" else torch.mul
    peers = [("torch." + op, lambda: [fn(x, y)])]
    return run_case(ctx, lambda: (run, [out]), peers, [out], (2 * M * N + y.numel()) * x.element_size(), "GB/s",
                    "copy")


def measure_ceilings(ctx):
    src = torch.ones(GiB, dtype=torch.uint8, device=DEVICE)
    dst = torch.empty_like(src)
    ms = ctx.bench.time({"copy": lambda: (lambda: dst.copy_(src))})["copy"]
    ctx.ceilings["copy"] = 2 * GiB / (ms * 1e-3) / 1e9  # bytes read + written
    ctx.ceiling_ms["copy"] = ms
    del src, dst
    n = ctx.gemm_n
    a, b = randn(n, n), randn(n, n)
    ms = ctx.bench.time({"matmul": lambda: (lambda: torch.matmul(a, b))})["matmul"]
    ctx.ceilings["gemm"] = 2 * n ** 3 / (ms * 1e-3) / 1e12
    ctx.ceiling_ms["gemm"] = ms
    return []


# ------------------------------------------------------------------ driver and report


class Context:
    def __init__(self, xhal, bench):
        self.xhal, self.bench = xhal, bench
        self.ceilings, self.ceiling_ms = {}, {}  # "copy": GB/s, "gemm": TFLOP/s
        self.gemm_n = 8192 if on_cuda() else 4096  # the CPU's bf16 matmul runs ~1000x slower
        self.rows, self.failures, self.notes = [], [], []
        self.broken, self.where = False, ""
        self.only = None  # a regex of op names to run (--only)


def section(ctx, op, shape, case, *args):
    """Runs one case; whatever it raises is printed and recorded, and the run goes on."""
    if ctx.only is not None and op != "ceilings" and not re.search(ctx.only, op):
        return
    if ctx.broken:
        ctx.rows.append(dict(op=op, shape=shape, error="skipped: the CUDA context is broken"))
        return
    ctx.where = f"{op} {shape}"
    print(f"[{ctx.where}]", flush=True)
    try:
        for row in case(ctx, *args):
            ctx.rows.append(dict(op=op, shape=shape, **row))
            if not row["ok"]:
                ctx.failures.append(f"{op} {shape} vs {row['peer']}: rel err {row['rel_err']:.3g}"
                                    f" (max abs {row['max_abs']:.3g}), limit {REL_TOL}")
                print(f"  CHECK FAILED: {ctx.failures[-1]}", flush=True)
    except Exception as e:
        traceback.print_exc()
        ctx.rows.append(dict(op=op, shape=shape, error=first_line(e)))
        ctx.failures.append(f"{op} {shape}: {first_line(e)}")
    gc.collect()  # free this case's tensors before the next one allocates
    if not on_cuda():
        return
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except Exception as e:  # a sticky CUDA error (e.g. an illegal address): later cases would
        ctx.broken = True   # only repeat it, so skip them and still print the table
        ctx.failures.append(f"after {op} {shape}: {first_line(e)}")


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def print_table(ctx, device_name):
    cold = "cold L2" if on_cuda() else f"{torch.get_num_threads()} threads, caches flushed"
    print(f"\n{device_name}, torch {torch.__version__}, bf16, median of {ctx.bench.iters} runs,"
          f" {cold}. speedup = peer ms / xhal ms (>1: xhal faster)\n"
          "of ceil = xhal rate / copy bandwidth (GB/s rows) or / matmul rate (TFLOP/s rows)")
    if "copy" in ctx.ceilings:
        print(f"ceiling copy 1 GiB: {ctx.ceilings['copy']:.0f} GB/s"
              f" ({ctx.ceiling_ms['copy']:.3f} ms)", end="")
    if "gemm" in ctx.ceilings:
        print(f"   ceiling bf16 matmul {ctx.gemm_n}^3: {ctx.ceilings['gemm']:.{0 if on_cuda() else 2}f} TFLOP/s"
              f" ({ctx.ceiling_ms['gemm']:.3f} ms)", end="")
    print()
    header = ["op", "shape", "xhal ms", "peer", "peer ms", "speedup", "xhal rate", "of ceil",
              "rel err", ""]
    lines, errors = [header], []
    for r in ctx.rows:
        if "error" in r:
            errors.append(f"{r['op']} {r['shape']}: ERROR {r['error']}")
            continue
        lines.append([r["op"], r["shape"], fmt(r["xhal_ms"], ".4f"), r["peer"],
                      fmt(r["peer_ms"], ".4f"), fmt(r["speedup"], ".2f"),
                      f"{r['xhal_rate']:.{3 if r['xhal_rate'] < 10 else 0}f} {r['unit']}", fmt(r["frac"], ".2f"),
                      fmt(r["rel_err"], ".1e"), "ok" if r["ok"] else "FAIL"])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    right = {2, 4, 5, 6, 7, 8}  # numbers right-aligned
    for line in lines:
        print("  ".join(c.rjust(w) if i in right else c.ljust(w)
                        for i, (c, w) in enumerate(zip(line, widths))).rstrip())
    for text in errors + ctx.notes:
        print(text)
    print(f"{len(ctx.failures)} failure(s)" + (":" if ctx.failures else ""))
    for text in ctx.failures:
        print(f"  {text}")


def case_shapes(d, quick):
    """The sizes each op runs at: the elementwise ops' [M, N], rope's tokens, the attention forward's
    (B, H, S, D, causal) rows and the backward's (B, H, S), paged decode's (B, context) pairs and
    linear's (M, N, K). On the CPU those of xhal-bench's CPU cases (elementwise tensors of 256 MiB,
    far beyond the last-level cache)."""
    if on_cuda():
        S = 1024 if quick else 4096
        # The attention issue's rows: the training shape at D 128, 64 and 256, a batch of shorter
        # sequences, one long causal sequence.
        forward = [(4, 32, S, D, causal) for D in (128, 64, 256) for causal in (True, False)]
        forward += [(16, 16, 1024, 128, causal) for causal in (True, False)] + [(1, 32, 4 * S, 128, True)]
        return dict(elementwise=[(16384 // d, 4096), (65536 // d, 8192)], rope=[16384 // d, 65536 // d],
                    attention=(4, 32, S), attention_forward=forward, paged=[(64, 4096 // d), (1, 131072 // d)],
                    cross_entropy=(8192 // d, 128256), serving_tokens=16384 // d,
                    linear=[(8192 // d, 8192, 8192)])
    return dict(elementwise=[(16384 // d, 8192)], rope=[16384 // d],
                attention=(1, 16, 512 if quick else 2048),
                attention_forward=[(1, 16, 512 if quick else 2048, 128, causal) for causal in (True, False)],
                paged=[(16, 4096 // d)],
                cross_entropy=(1024 // d, 128256), serving_tokens=16384 // d,
                linear=[(4096 // d, 4096, 4096), (1, 28672, 4096)])  # the last: a decode step


def run_cases(ctx, shapes):
    section(ctx, "ceilings", f"copy 1 GiB, matmul {ctx.gemm_n}^3", measure_ceilings)
    for op, case in (("rms_norm", case_rms_norm), ("fused_add_rms_norm", case_fused_add),
                     ("swiglu", case_swiglu)):
        for M, N in shapes["elementwise"]:
            section(ctx, op, f"{M}x{N}", case, M, N)
    for M, N in shapes["elementwise"]:
        for tanh in (False, True):
            section(ctx, "gelu_and_mul_packed", f"{M}x{N} {'tanh' if tanh else 'erf'}", case_gelu_and_mul_packed,
                    M, N, tanh)
    for T in shapes["rope"]:
        section(ctx, "rope_neox", f"T{T} H32/8 D128", case_rope, T)
    for op, case in (("rms_norm_backward", case_rms_norm_backward),
                     ("fused_add_rms_norm_backward", case_fused_add_backward),
                     ("swiglu_backward", case_swiglu_backward)):
        for M, N in shapes["elementwise"]:
            section(ctx, op, f"{M}x{N}", case, M, N)
    for T in shapes["rope"]:
        section(ctx, "rope_neox_backward", f"T{T} H32/8 D128", case_rope_backward, T)
    T, V = shapes["cross_entropy"]
    section(ctx, "embedding", f"T{2 * T} V{V} D4096", case_embedding, 2 * T, V, 4096)
    section(ctx, "embedding_backward", f"T{2 * T} V{V} D4096", case_embedding_backward, 2 * T, V, 4096)
    section(ctx, "cross_entropy", f"T{T} V{V}", case_cross_entropy, T, V)
    section(ctx, "cross_entropy_backward", f"T{T} V{V} in place", case_cross_entropy_backward, T, V)
    for B, H, S, D, causal in shapes["attention_forward"]:
        section(ctx, "attention", f"B{B} H{H} S{S} D{D} {'causal' if causal else 'full'}",
                case_attention, B, H, S, D, causal)
    B, H, S = shapes["attention"]
    for D in (128, 64):
        for causal in (True, False):
            section(ctx, "attention_backward", f"B{B} H{H} S{S} D{D} {'causal' if causal else 'full'}",
                    case_attention_backward, B, H, S, D, causal)
    T = shapes["serving_tokens"]
    section(ctx, "merge_attention_states", f"T{T} H32 D128", case_merge_attention_states, T, 32, 128)
    section(ctx, "kv_cache_write", f"T{T} Hkv8 D128", case_kv_cache_write, T, 8, 128)
    for B in (1, 64):
        section(ctx, "argmax", f"B{B} V128256", case_argmax, B, 128256)
    for B in (1, 64):
        section(ctx, "sample", f"B{B} V128256 top-p 0.9", case_sample, B, 128256, 0.9)
    for B, V, k in ((64, 128256, 50), (16384, 256, 8)):
        section(ctx, "top_k", f"B{B} V{V} k{k}", case_top_k, B, V, k)
    for M, N in shapes["elementwise"]:
        section(ctx, "quantize", f"{M}x{N} per-token e4m3", case_quantize, M, N)
    if DEVICE != "cpu" and torch.cuda.get_device_capability() >= (8, 9):
        for M, N, K in shapes["linear"]:
            for per_row in (True, False):
                section(ctx, "linear_fp8", f"{M}x{N}x{K} e4m3 {'per-row' if per_row else 'per-tensor'}",
                        case_linear_fp8, M, N, K, per_row)
    if DEVICE != "cpu":
        for M, N, K in shapes["linear"]:
            if M > 16:  # torch._int_mm's bound
                section(ctx, "linear_int8", f"{M}x{N}x{K} per-row", case_linear_int8, M, N, K)
    for M, N in ((64, 128256), (16384, 4096)):
        section(ctx, "softmax", f"{M}x{N}", case_softmax, M, N)
    for M, N in shapes["elementwise"]:
        section(ctx, "add", f"{M}x{N}", case_binary, M, N, "add", False)
        section(ctx, "mul", f"{M}x{N} by a row", case_binary, M, N, "mul", True)
    for B, L in shapes["paged"]:  # a batch, and one long sequence whose keys alone fill the GPU
        section(ctx, "paged_attention", f"B{B} H32/8 L{L} D128", case_paged, B, 32, 8, L, 128)
    for M, N, K in shapes["linear"]:
        section(ctx, "linear", f"{M}x{N}x{K}+b", case_linear, M, N, K)
    for M, N, K in shapes["linear"]:
        if M > 1:  # a training step's shapes (a decode step has no backward pass)
            section(ctx, "linear_backward", f"{M}x{N}x{K}+b", case_linear_backward, M, N, K)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    return f"{names[0] if names else 'CPU'} ({len(names)} logical CPUs)"


def main():
    global DEVICE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True,
                    help="path to libxhal.so (libxhal_cuda.so or libxhal_cpu.so beside it)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--quick", action="store_true", help="shapes / 8, 5 timed runs")
    ap.add_argument("--json", metavar="OUT.json", help="also write every row here")
    ap.add_argument("--only", metavar="REGEX", help="run only the ops whose name matches (the ceilings always run)")
    args = ap.parse_args()
    if args.device == "cpu":
        DEVICE = "cpu"
        # Both libraries on the same number of threads: xhal's OpenMP takes OMP_NUM_THREADS or
        # every logical CPU, torch's default is the physical cores.
        threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count())
        torch.set_num_threads(threads)
        device_name = cpu_model()
        about = f"torch {torch.__version__}, {threads} threads each"
    else:
        if not torch.cuda.is_available():
            sys.exit("torch sees no CUDA device")
        torch.cuda.set_device(0)
        device_name = torch.cuda.get_device_name(0)
        about = f"torch {torch.__version__} (CUDA {torch.version.cuda})"
    torch.manual_seed(0)
    xhal = Xhal(args.lib)
    devices = xhal.devices()
    want = DEVICE  # xhal names devices as torch does: "cpu", "cuda:0"
    if want not in devices:
        sys.exit(f"xhal has no {want} (devices: {devices}); is libxhal_{args.device}.so next to "
                 f"{args.lib}? build/bin/xhal-info says why a plugin did not load")
    ctx = Context(xhal, Bench(iters=5 if args.quick else (20 if on_cuda() else 10), warmup=3))
    ctx.only = args.only
    print(f"{device_name}; {about}; xhal devices {devices}", flush=True)
    run_cases(ctx, case_shapes(8 if args.quick else 1, args.quick))

    print_table(ctx, device_name)
    if args.json:
        report = dict(device=device_name, torch=torch.__version__, cuda=torch.version.cuda,
                      threads=None if on_cuda() else torch.get_num_threads(),
                      date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                      command=" ".join(sys.argv), quick=args.quick, iters=ctx.bench.iters,
                      rel_tol=REL_TOL, ceilings=ctx.ceilings, ceiling_ms=ctx.ceiling_ms,
                      rows=ctx.rows, notes=ctx.notes, failures=ctx.failures)
        with open(args.json, "w") as f:
            json.dump(json_safe(report), f, indent=1)
            f.write("\n")
        print(f"wrote {args.json}")
    sys.exit(1 if ctx.failures else 0)


def json_safe(v):
    """NaN and inf are not JSON: they become null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [json_safe(x) for x in v]
    return v


if __name__ == "__main__":
    main()
