#!/usr/bin/env python3
"""xhal side by side with PyTorch on one NVIDIA GPU, on the same tensors, in one process.

Run after building xhal with the CUDA backend (needs torch with CUDA, and Triton for torch.compile):

    python3 bench/peers/torch_compare.py --lib build/lib/libxhal.so [--quick] [--json OUT.json]

xhal is loaded with ctypes; torch tensors reach it through DLPack (zero copy) and every op runs on
torch's current stream. For each op and shape the script first checks xhal's output against each
peer's (relative L2 error in f32; NaN never passes; xhal's outputs are poisoned first), then times
xhal and the peers alternately with CUDA events: median of N runs after warm-up, with the L2 cache
flushed before every run. The ceilings (1 GiB device copy, bf16 8192^3 matmul) are measured in the
same run. --quick divides rows / tokens / sequence lengths by 8 (attention: S=1024) and times 5 runs.
Exit status 1 if any check failed or any section raised.
"""
import argparse
import ctypes
import datetime
import gc
import json
import math
import os
import statistics
import sys
import traceback

import torch
import torch.nn.functional as F
import torch.utils.dlpack
from torch.nn.attention import SDPBackend, sdpa_kernel

DEVICE = "cuda:0"
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


_P = ctypes.c_void_p  # DLTensor*, stream, optional tensors (None = NULL)
_PARAMS = ctypes.POINTER(AttentionParams)
_OP_ARGTYPES = {  # each returns xhal_status (an int enum); the native stream is always last
    "xhal_rms_norm": [_P, _P, ctypes.c_float, _P, _P],
    "xhal_fused_add_rms_norm": [_P, _P, _P, ctypes.c_float, _P, _P],
    "xhal_swiglu": [_P, _P, _P, _P],
    "xhal_rope": [_P, _P, _P, _P, ctypes.c_int32, _P],
    "xhal_attention": [_P, _P, _P, _P, _PARAMS, _P, _P],
    "xhal_paged_attention": [_P, _P, _P, _P, _P, _P, _PARAMS, _P],
    "xhal_linear": [_P, _P, _P, _P, _P],
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
        # default stream, which is the same legacy stream on CUDA.
        cargs.append(torch.cuda.current_stream().cuda_stream)
        fn = getattr(self.lib, name)

        def run():
            self.check(fn(*cargs), name)
        run.keep = keep
        return run


# ------------------------------------------------------------------ timing and checking


class Bench:
    def __init__(self, iters, warmup):
        self.iters, self.warmup = iters, warmup
        self.flush_buf = torch.empty(256 << 20, dtype=torch.uint8, device=DEVICE)

    def time(self, cands):
        """cands: {name: prepare}; prepare() does the untimed set-up (clones for in-place ops) and
        returns the callable to time. Candidates alternate within each round, so clock and thermal
        drift hit all of them alike. Returns {name: median ms}."""
        for _ in range(self.warmup):
            for prepare in cands.values():
                prepare()()
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


def run_case(ctx, xhal_prep, peers, poison, work, unit, ceiling):
    """One op at one shape. xhal_prep() -> (run, outs): untimed set-up, the callable, and the
    tensors that hold its results. peers: [(name, fn)], fn() -> list of outputs in the order of
    outs. poison: xhal's pure outputs, filled with NaN before the checking run. Returns rows."""
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
        checked[name] = (fn, compare(outs, refs))
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

# dynamic=False: each shape gets its own specialised kernel, as a user's fixed-shape model would.
@torch.compile(dynamic=False)
def _add_rms_norm(x, res, w):
    r = x + res
    return F.rms_norm(r, (r.shape[-1],), w, EPS), r


@torch.compile(dynamic=False)
def _silu_mul(g, u):
    return F.silu(g) * u


def _neox_rotate(x, cos, sin):
    half = cos.shape[-1]
    x1, x2 = x[..., :half].float(), x[..., half:2 * half].float()
    rest = x[..., 2 * half:].float()  # features past rotary_dim pass through
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1).to(x.dtype)


@torch.compile(dynamic=False)
def _rope_neox(q, k, positions, cache):
    cs = cache[positions]  # [T, rotary_dim] f32: the same cache xhal reads
    half = cache.shape[1] // 2
    cos, sin = cs[:, None, :half], cs[:, None, half:]
    return _neox_rotate(q, cos, sin), _neox_rotate(k, cos, sin)


def sdpa_peer(backend, q, k, v, post=lambda o: o, **kw):
    def run():
        with sdpa_kernel(backend):
            return [post(F.scaled_dot_product_attention(q, k, v, **kw))]
    return run


SDPA_BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}

# ------------------------------------------------------------------ the cases


def case_rms_norm(ctx, M, N):
    x, w = randn(M, N), 1 + randn(N, scale=0.1)
    out = torch.empty_like(x)
    run = ctx.xhal.op("xhal_rms_norm", x, w, EPS, out)
    peer = lambda: [F.rms_norm(x, (N,), w, EPS)]
    return run_case(ctx, lambda: (run, [out]), [("F.rms_norm", peer)], [out],
                    2 * M * N * 2 + N * 2, "GB/s", "copy")


def case_fused_add(ctx, M, N):
    x, res, w = randn(M, N), randn(M, N), 1 + randn(N, scale=0.1)
    out = torch.empty_like(x)

    def prep():
        r = res.clone()  # xhal writes x + res into the residual: a fresh copy per run, untimed
        return ctx.xhal.op("xhal_fused_add_rms_norm", x, r, w, EPS, out), [out, r]
    peer = lambda: list(_add_rms_norm(x, res, w))
    # read x, read res, write res, write out (+ the weight)
    return run_case(ctx, prep, [("compile", peer)], [out],
                    4 * M * N * 2 + N * 2, "GB/s", "copy")


def case_swiglu(ctx, M, N):
    g, u = randn(M, N), randn(M, N)
    out = torch.empty_like(g)
    run = ctx.xhal.op("xhal_swiglu", g, u, out)
    peer = lambda: [_silu_mul(g, u)]
    return run_case(ctx, lambda: (run, [out]), [("compile", peer)], [out],
                    3 * M * N * 2, "GB/s", "copy")


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
    peer = lambda: list(_rope_neox(q, k, positions, cache))
    # Nothing to poison (in place); a kernel that skipped elements still fails the check.
    return run_case(ctx, prep, [("compile", peer)], [],
                    2 * (T * Hq * D + T * Hkv * D) * 2, "GB/s", "copy")


def case_attention(ctx, B, H, S, D, causal):
    q, k, v = randn(B, H, S, D), randn(B, H, S, D), randn(B, H, S, D)
    out = torch.empty_like(q)
    # xhal wants [B,S,H,D]; transposed views of torch's [B,H,S,D] tensors are exactly that.
    t = lambda x: x.transpose(1, 2)
    run = ctx.xhal.op("xhal_attention", t(q), t(k), t(v), t(out),
                      ctx.xhal.attention_params(causal), None)
    peers = [(f"sdpa {n}", sdpa_peer(SDPA_BACKENDS[n], q, k, v, is_causal=causal))
             for n in ("flash", "cudnn")]  # flash first: the reference for correctness
    flops = 4 * B * H * S * S * D // (2 if causal else 1)
    return run_case(ctx, lambda: (run, [out]), peers, [out], flops, "TFLOP/s", "gemm")


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
    peers = [(f"sdpa {n}", sdpa_peer(SDPA_BACKENDS[n], q.unsqueeze(2), kd, vd,
                                     post=lambda o: o.squeeze(2), enable_gqa=True))
             for n in ("cudnn", "flash")]
    nbytes = 2 * B * L * Hkv * D * 2 + 2 * B * Hq * D * 2  # K and V of the context, q, out
    return run_case(ctx, lambda: (run, [out]), peers, [out], nbytes, "GB/s", "copy")


def case_linear(ctx, M, N, K):
    x, w, b = randn(M, K), randn(N, K, scale=K ** -0.5), randn(N)
    out = torch.empty(M, N, device=DEVICE, dtype=DTYPE)
    run = ctx.xhal.op("xhal_linear", x, w, b, out)
    peer = lambda: [F.linear(x, w, b)]
    return run_case(ctx, lambda: (run, [out]), [("F.linear", peer)], [out],
                    2 * M * N * K, "TFLOP/s", "gemm")


def measure_ceilings(ctx):
    src = torch.ones(GiB, dtype=torch.uint8, device=DEVICE)
    dst = torch.empty_like(src)
    ms = ctx.bench.time({"copy": lambda: (lambda: dst.copy_(src))})["copy"]
    ctx.ceilings["copy"] = 2 * GiB / (ms * 1e-3) / 1e9  # bytes read + written
    ctx.ceiling_ms["copy"] = ms
    del src, dst
    n = 8192
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
        self.rows, self.failures, self.notes = [], [], []
        self.broken, self.where = False, ""


def section(ctx, op, shape, case, *args):
    """Runs one case; whatever it raises is printed and recorded, and the run goes on."""
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
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except Exception as e:  # a sticky CUDA error (e.g. an illegal address): later cases would
        ctx.broken = True   # only repeat it, so skip them and still print the table
        ctx.failures.append(f"after {op} {shape}: {first_line(e)}")


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def print_table(ctx, device_name):
    print(f"\n{device_name}, torch {torch.__version__}, bf16, median of {ctx.bench.iters} runs,"
          " cold L2. speedup = peer ms / xhal ms (>1: xhal faster)\n"
          "of ceil = xhal rate / copy bandwidth (GB/s rows) or / matmul rate (TFLOP/s rows)")
    if "copy" in ctx.ceilings:
        print(f"ceiling copy 1 GiB: {ctx.ceilings['copy']:.0f} GB/s"
              f" ({ctx.ceiling_ms['copy']:.3f} ms)", end="")
    if "gemm" in ctx.ceilings:
        print(f"   ceiling bf16 matmul 8192^3: {ctx.ceilings['gemm']:.0f} TFLOP/s"
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
                      f"{r['xhal_rate']:.0f} {r['unit']}", fmt(r["frac"], ".2f"),
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="path to libxhal.so (libxhal_cuda.so beside it)")
    ap.add_argument("--quick", action="store_true", help="shapes / 8, 5 timed runs")
    ap.add_argument("--json", metavar="OUT.json", help="also write every row here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch sees no CUDA device")
    torch.cuda.set_device(0)
    torch.manual_seed(0)
    xhal = Xhal(args.lib)
    devices = xhal.devices()
    if DEVICE not in devices:
        sys.exit(f"xhal has no {DEVICE} (devices: {devices}); is libxhal_cuda.so next to "
                 f"{args.lib}? build/bin/xhal-info says why a plugin did not load")
    ctx = Context(xhal, Bench(iters=5 if args.quick else 20, warmup=3))
    d = 8 if args.quick else 1
    device_name = torch.cuda.get_device_name(0)
    print(f"{device_name}; torch {torch.__version__} (CUDA {torch.version.cuda}); "
          f"xhal devices {devices}", flush=True)

    section(ctx, "ceilings", "copy 1 GiB, matmul 8192^3", measure_ceilings)
    shapes = [(16384 // d, 4096), (65536 // d, 8192)]
    for op, case in (("rms_norm", case_rms_norm), ("fused_add_rms_norm", case_fused_add),
                     ("swiglu", case_swiglu)):
        for M, N in shapes:
            section(ctx, op, f"{M}x{N}", case, M, N)
    for T in (16384 // d, 65536 // d):
        section(ctx, "rope_neox", f"T{T} H32/8 D128", case_rope, T)
    S = 1024 if args.quick else 4096
    for causal in (True, False):
        section(ctx, "attention", f"B4 H32 S{S} D128 {'causal' if causal else 'full'}",
                case_attention, 4, 32, S, 128, causal)
    L = 4096 // d
    section(ctx, "paged_attention", f"B64 H32/8 L{L} D128", case_paged, 64, 32, 8, L, 128)
    M = 8192 // d
    section(ctx, "linear", f"{M}x8192x8192+b", case_linear, M, 8192, 8192)

    print_table(ctx, device_name)
    if args.json:
        report = dict(device=device_name, torch=torch.__version__, cuda=torch.version.cuda,
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
