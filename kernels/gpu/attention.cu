// attention and attention_varlen on the GPU through the generic kernel (attention_generic.cuh).
#include "attention_generic.cuh"

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

// Strides of q, k, v, out, lse with a batch dim (dense) or without (varlen: batch stride 0).
struct AttnLayout {
  int64_t q[3], k[3], v[3], o[3];  // batch, seq, head strides
  int64_t lse[3];                  // batch, head, row strides
  int64_t Hq, group, D, Dv;
};

inline AttnLayout layout_of(const xhal_op_call* c, bool batched) {
  AttnLayout a{};
  auto fill = [&](int64_t* out, const DLTensor* t) {
    const int off = batched ? 1 : 0;
    out[0] = batched ? t->strides[0] : 0;
    out[1] = t->strides[off];
    out[2] = t->strides[off + 1];
  };
  fill(a.q, c->t[XHAL_SLOT_Q]);
  fill(a.k, c->t[XHAL_SLOT_K]);
  fill(a.v, c->t[XHAL_SLOT_V]);
  fill(a.o, c->t[XHAL_SLOT_OUT]);
  if (const DLTensor* lse = c->t[XHAL_SLOT_LSE]) {
    if (batched) {
      a.lse[0] = lse->strides[0], a.lse[1] = lse->strides[1], a.lse[2] = lse->strides[2];
    } else {
      a.lse[0] = 0, a.lse[1] = lse->strides[0], a.lse[2] = lse->strides[1];
    }
  }
  const DLTensor* q = c->t[XHAL_SLOT_Q];
  a.Hq = q->shape[q->ndim - 2];
  a.group = a.Hq / c->t[XHAL_SLOT_K]->shape[q->ndim - 2];
  a.D = q->shape[q->ndim - 1];
  a.Dv = c->t[XHAL_SLOT_V]->shape[q->ndim - 1];
  return a;
}

// Sequence b: query rows [q_begin, q_begin + Sq), keys [k_begin, k_begin + Sk). For dense
// attention every sequence has the same lengths; for varlen they come from cu_seqlens.
struct Sequences {
  const int32_t* cu_q;  // nullptr: dense
  const int32_t* cu_k;
  int64_t batch, Sq, Sk;
  __device__ void span(int64_t b, int64_t* q_begin, int64_t* sq, int64_t* k_begin, int64_t* sk) const {
    if (cu_q == nullptr) {
      *q_begin = 0, *sq = Sq, *k_begin = 0, *sk = Sk;
    } else {
      *q_begin = cu_q[b], *sq = cu_q[b + 1] - cu_q[b], *k_begin = cu_k[b], *sk = cu_k[b + 1] - cu_k[b];
    }
  }
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
xhal_status launch_generic(const xhal_op_call* c, bool batched, Sequences seqs, int64_t max_rows,
                           char* msg, size_t len) {
  using T = typename E::T;
  const AttnLayout a = layout_of(c, batched);
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
    const DLTensor* q = c->t[XHAL_SLOT_Q];
    const Sequences seqs{nullptr, nullptr, q->shape[0], q->shape[1], c->t[XHAL_SLOT_K]->shape[1]};
    return launch_generic<E>(c, true, seqs, q->shape[1], msg, len);
  }
};

// cu_seqlens stay on the device: sequences longer than max_seqlen_q are cut at it, and offsets
// are trusted (docs/ops.md).
template <class E>
struct GenericAttentionVarlen {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const Sequences seqs{static_cast<const int32_t*>(c->t[XHAL_SLOT_CU_SEQLENS_Q]->data),
                         static_cast<const int32_t*>(c->t[XHAL_SLOT_CU_SEQLENS_K]->data),
                         c->t[XHAL_SLOT_CU_SEQLENS_Q]->shape[0] - 1, 0, 0};
    return launch_generic<E>(c, false, seqs, c->params.max_seqlen_q, msg, len);
  }
};

}  // namespace

void register_attention_kernels(const xhal_host_api* host) {
  const kernels::KernelTraits generic{0, true, generic_supports};
  register_float_kernels<GenericAttention>(host, XHAL_GPU_BACKEND ".attention_generic",
                                           XHAL_OP_ATTENTION, generic);
  register_float_kernels<GenericAttentionVarlen>(host, XHAL_GPU_BACKEND ".attention_varlen_generic",
                                                 XHAL_OP_ATTENTION_VARLEN, generic);
}

}  // namespace xhal::gpu
