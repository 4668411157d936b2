// attention and attention_varlen on the GPU: the tensor-core flash kernel (flash_attention.cuh)
// for f16/bf16 with the head dims and alignment it supports, the generic kernel
// (attention_generic.cuh) for everything else.
#include "attention_generic.cuh"
#include "flash_attention.cuh"


namespace xhal::gpu {
namespace {

template <class T>
struct DenseKeys {
  const T* k;
  const T* v;
  int64_t k_seq_stride, v_seq_stride;  // per key
  __device__ const T* key(int64_t j) const { return k + j * k_seq_stride; }
  __device__ const T* value(int64_t j) const { return v + j * v_seq_stride; }
};

// One warp per (sequence, query head, row); rows index up to max_rows per sequence.
template <class E>
__global__ void __launch_bounds__(kGenericWarps * kWarpSize)
    generic_attention_kernel(const typename E::T* q, const typename E::T* k, const typename E::T* v,
                             typename E::T* out, float* lse, AttnLayout a, Sequences seqs,
                             int64_t max_rows, Mask mask) {
  extern __shared__ float q_shared[];
  const int warp = threadIdx.x / kWarpSize;
  const int64_t tasks = seqs.batch * a.Hq * max_rows;
  for (int64_t task = int64_t(blockIdx.x) * kGenericWarps + warp; task < tasks;
       task += int64_t(gridDim.x) * kGenericWarps) {
    const int64_t i = task % max_rows, h = task / max_rows % a.Hq, b = task / max_rows / a.Hq;
    int64_t q0, Sq, k0, Sk;
    seqs.span(b, &q0, &Sq, &k0, &Sk);
    if (i >= Sq) continue;
    int64_t lo, hi;
    mask.visible(i, Sq, Sk, &lo, &hi);
    const int64_t hk = h / a.group;
    DenseKeys<typename E::T> src{k + b * a.k[0] + k0 * a.k[1] + hk * a.k[2],
                                 v + b * a.v[0] + k0 * a.v[1] + hk * a.v[2], a.k[1], a.v[1]};
    const int64_t row = q0 + i;
    attend_row<E>(q + b * a.q[0] + row * a.q[1] + h * a.q[2], a.D, a.Dv, lo, hi, mask, src,
                  out + b * a.o[0] + row * a.o[1] + h * a.o[2],
                  lse ? lse + b * a.lse[0] + h * a.lse[1] + row * a.lse[2] : nullptr,
                  q_shared + warp * a.D);
  }
}

template <class E>
xhal_status launch_generic(const xhal_op_call* c, const AttnProblem& problem, char* msg, size_t len) {
  using T = typename E::T;
  const Sequences& seqs = problem.seqs;
  const int64_t max_rows = problem.max_rows;
  const AttnLayout a = layout_of(c, problem.batched);
  const int64_t tasks = seqs.batch * a.Hq * max_rows;
  if (tasks == 0) return XHAL_OK;
  const size_t shared = size_t(kGenericWarps) * a.D * sizeof(float);
  if (shared > 48 * 1024) {
    gpuFuncSetAttribute(reinterpret_cast<const void*>(generic_attention_kernel<E>),
                        gpuFuncAttributeMaxDynamicSharedMemorySize, int(shared));
  }
  const DLTensor* lse = c->t[XHAL_SLOT_LSE];
  generic_attention_kernel<E><<<grid_for(tasks, kGenericWarps, int64_t(1) << 20),
                                kGenericWarps * kWarpSize, shared,
                                static_cast<gpuStream_t>(c->stream)>>>(
      static_cast<const T*>(c->t[XHAL_SLOT_Q]->data), static_cast<const T*>(c->t[XHAL_SLOT_K]->data),
      static_cast<const T*>(c->t[XHAL_SLOT_V]->data), static_cast<T*>(c->t[XHAL_SLOT_OUT]->data),
      lse ? static_cast<float*>(lse->data) : nullptr, a, seqs, max_rows, Mask::from(c->params));
  return launch_status(msg, len, "generic attention");
}

template <class E>
struct GenericAttention {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return launch_generic<E>(c, dense_problem(c), msg, len);
  }
};

// cu_seqlens stay on the device: sequences longer than max_seqlen_q are cut at it, and offsets
// are trusted (docs/ops.md).
template <class E>
struct GenericAttentionVarlen {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return launch_generic<E>(c, varlen_problem(c), msg, len);
  }
};

#if !defined(__HIPCC__)
// The flash kernel's conditions: 16-bit types (it is only registered for them), D == Dv in
// {64, 80, 96, 128, 256}, 16-byte aligned q/k/v rows and 4-byte aligned output pairs.
inline const char* flash_supports(const xhal_op_call* c) {
  const DLTensor *q = c->t[XHAL_SLOT_Q], *k = c->t[XHAL_SLOT_K], *v = c->t[XHAL_SLOT_V];
  const DLTensor* out = c->t[XHAL_SLOT_OUT];
  const int64_t D = q->shape[q->ndim - 1];
  if (v->shape[v->ndim - 1] != D) return "value head dim differs from the query head dim";
  if (D != 64 && D != 80 && D != 96 && D != 128 && D != 256) return "head dim not in {64, 80, 96, 128, 256}";
  for (const DLTensor* t : {q, k, v}) {
    if (reinterpret_cast<uintptr_t>(t->data) % 16 != 0) return "q/k/v not 16-byte aligned";
    if (t->strides[t->ndim - 3] > (int64_t(1) << 24)) return "sequence stride above 2^24 elements";
    if (t->shape[t->ndim - 3] >= (int64_t(1) << 31)) return "more than 2^31 tokens";
    for (int d = 0; d + 1 < t->ndim; ++d) {
      if ((t->strides[d] * 2) % 16 != 0) return "q/k/v strides not multiples of 8 elements";
    }
  }
  if (reinterpret_cast<uintptr_t>(out->data) % 4 != 0) return "out not 4-byte aligned";
  for (int d = 0; d + 1 < out->ndim; ++d) {
    if (out->strides[d] % 2 != 0) return "out strides not even";
  }
  return nullptr;
}

template <class E, class Tile>
void launch_flash_tile(const xhal_op_call* c, const AttnLayout& a, const Sequences& seqs,
                       int64_t max_rows) {
  using T = typename E::T;
  const int64_t m_tiles = (max_rows + Tile::kBlockM - 1) / Tile::kBlockM;
  const dim3 grid(unsigned(m_tiles), unsigned(a.Hq), unsigned(seqs.batch));
  const DLTensor* lse = c->t[XHAL_SLOT_LSE];
  // Once per tile shape, for both kernels (they share one function-pointer type, so `go` below is
  // a single instantiation): above 48 KiB of shared memory needs opting in.
  static const bool shared_raised = [] {
    for (const void* k : {reinterpret_cast<const void*>(flash_attention_kernel<E, Tile, true>),
                          reinterpret_cast<const void*>(flash_attention_kernel<E, Tile, false>)}) {
      gpuFuncSetAttribute(k, gpuFuncAttributeMaxDynamicSharedMemorySize, int(Tile::kSharedBytes));
    }
    return true;
  }();
  (void)shared_raised;
  auto go = [&](auto kernel) {
    kernel<<<grid, Tile::kThreads, Tile::kSharedBytes, static_cast<gpuStream_t>(c->stream)>>>(
        static_cast<const T*>(c->t[XHAL_SLOT_Q]->data), static_cast<const T*>(c->t[XHAL_SLOT_K]->data),
        static_cast<const T*>(c->t[XHAL_SLOT_V]->data), static_cast<T*>(c->t[XHAL_SLOT_OUT]->data),
        lse ? static_cast<float*>(lse->data) : nullptr, a, seqs, Mask::from(c->params), m_tiles);
  };
  if (c->params.softcap > 0.0f) go(flash_attention_kernel<E, Tile, true>);
  else go(flash_attention_kernel<E, Tile, false>);
}

template <class E>
xhal_status launch_flash(const xhal_op_call* c, const AttnProblem& problem, char* msg, size_t len) {
  const Sequences& seqs = problem.seqs;
  const int64_t max_rows = problem.max_rows;
  const AttnLayout a = layout_of(c, problem.batched);
  if (seqs.batch * a.Hq * max_rows == 0) return XHAL_OK;
  switch (a.D) {
    // 128-row blocks (two row tiles per warp, or eight warps) halve the K/V traffic per row;
    // 256 keeps 64 rows to stay within the registers.
    case 64: launch_flash_tile<E, FlashTile<64, 64, 2>>(c, a, seqs, max_rows); break;
    case 80: launch_flash_tile<E, FlashTile<80, 64, 2>>(c, a, seqs, max_rows); break;
    case 96: launch_flash_tile<E, FlashTile<96, 32, 2>>(c, a, seqs, max_rows); break;
    case 128: launch_flash_tile<E, FlashTile<128, 32, 2>>(c, a, seqs, max_rows); break;
    default: launch_flash_tile<E, FlashTile<256, 32, 1>>(c, a, seqs, max_rows); break;
  }
  return launch_status(msg, len, "flash attention");
}

template <class E>
struct FlashAttention {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return launch_flash<E>(c, dense_problem(c), msg, len);
  }
};

template <class E>
struct FlashAttentionVarlen {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return launch_flash<E>(c, varlen_problem(c), msg, len);
  }
};
#endif

}  // namespace

void register_attention_kernels(const xhal_host_api* host) {
  const kernels::KernelTraits generic{0, true, generic_supports};
  register_float_kernels<GenericAttention>(host, XHAL_GPU_BACKEND ".attention_generic",
                                           XHAL_OP_ATTENTION, generic);
  register_float_kernels<GenericAttentionVarlen>(host, XHAL_GPU_BACKEND ".attention_varlen_generic",
                                                 XHAL_OP_ATTENTION_VARLEN, generic);
#if !defined(__HIPCC__)
  const kernels::KernelTraits flash{10, false, flash_supports};
  register_half_kernels<FlashAttention>(host, "cuda.flash_attention_mma", XHAL_OP_ATTENTION, flash);
  register_half_kernels<FlashAttentionVarlen>(host, "cuda.flash_attention_varlen_mma",
                                              XHAL_OP_ATTENTION_VARLEN, flash);
#endif
}

}  // namespace xhal::gpu
