// toyaccel's kernels: plain loops over DLTensors (strides in elements, inner stride 1), f32
// arithmetic for every dtype. Each is registered for f32, f16 and bf16 with the accuracy class
// its arithmetic earns; the core validated shapes, dtypes and devices before the call.
#include <cmath>
#include <cstdio>
#include <vector>

#include "toy_accel.hpp"
#include "xhal/half.hpp"

namespace toyaccel {
namespace {

// Loads and stores one element of `dtype` as float.
float load(const void* base, int64_t i, xhal_dtype dtype) {
  switch (dtype) {
    case XHAL_DTYPE_F16: return xhal::f16_to_float(static_cast<const uint16_t*>(base)[i]);
    case XHAL_DTYPE_BF16: return xhal::bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    default: return static_cast<const float*>(base)[i];
  }
}

void store(void* base, int64_t i, xhal_dtype dtype, float value) {
  switch (dtype) {
    case XHAL_DTYPE_F16: static_cast<uint16_t*>(base)[i] = xhal::float_to_f16(value); break;
    case XHAL_DTYPE_BF16: static_cast<uint16_t*>(base)[i] = xhal::float_to_bf16(value); break;
    default: static_cast<float*>(base)[i] = value;
  }
}

void* data(const DLTensor* t) { return static_cast<char*>(t->data) + t->byte_offset; }

int64_t rows(const DLTensor* t) {
  int64_t n = 1;
  for (int d = 0; d + 1 < t->ndim; ++d) n *= t->shape[d];
  return n;
}

// Element offset of row `r` of t[..., N] (the leading dims flattened in row-major order).
int64_t row_offset(const DLTensor* t, int64_t r) {
  int64_t offset = 0;
  for (int d = t->ndim - 2; d >= 0; --d) {
    offset += r % t->shape[d] * t->strides[d];
    r /= t->shape[d];
  }
  return offset;
}

xhal_status rms_norm(void*, const xhal_op_call* c, char*, size_t) {
  const xhal_op_call& call = *c;
  const DLTensor *x = call.tensors[XHAL_RMS_NORM_X], *w = call.tensors[XHAL_RMS_NORM_WEIGHT],
                 *out = call.tensors[XHAL_RMS_NORM_OUT];
  const float eps = static_cast<const xhal_norm_op_params*>(call.params)->eps;
  const int64_t n = x->shape[x->ndim - 1];
  for (int64_t r = 0; r < rows(x); ++r) {
    const int64_t xo = row_offset(x, r), oo = row_offset(out, r);
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += load(data(x), xo + i, call.dtype) * load(data(x), xo + i, call.dtype);
    const float inv = 1.0f / std::sqrt(sum / float(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      store(data(out), oo + i, call.dtype,
            load(data(x), xo + i, call.dtype) * inv * load(data(w), i * w->strides[0], call.dtype));
    }
  }
  return XHAL_OK;
}

xhal_status swiglu(void*, const xhal_op_call* c, char*, size_t) {
  const xhal_op_call& call = *c;
  const DLTensor *gate = call.tensors[XHAL_SWIGLU_GATE], *up = call.tensors[XHAL_SWIGLU_UP],
                 *out = call.tensors[XHAL_SWIGLU_OUT];
  const int64_t n = gate->shape[gate->ndim - 1];
  for (int64_t r = 0; r < rows(gate); ++r) {
    const int64_t go = row_offset(gate, r), uo = row_offset(up, r), oo = row_offset(out, r);
    for (int64_t i = 0; i < n; ++i) {  // out may be gate or up itself: each element is read first
      const float g = load(data(gate), go + i, call.dtype);
      store(data(out), oo + i, call.dtype, g / (1.0f + std::exp(-g)) * load(data(up), uo + i, call.dtype));
    }
  }
  return XHAL_OK;
}

// Rotates the first rotary_dim features of each head of t[T, H, D] in place by its position's row
// of the cos/sin cache ([cos(p f_0 .. p f_{r/2-1}), sin(same)]).
void rotate(const DLTensor* t, const std::vector<int64_t>& positions, const DLTensor* cache, bool neox,
            xhal_dtype dtype) {
  const int64_t rotary = cache->shape[1], half = rotary / 2;
  const float* table = static_cast<const float*>(data(cache));
  for (int64_t s = 0; s < t->shape[0]; ++s) {
    const float* row = table + positions[size_t(s)] * cache->strides[0];
    for (int64_t h = 0; h < t->shape[1]; ++h) {
      const int64_t base = s * t->strides[0] + h * t->strides[1];
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = base + (neox ? i : 2 * i), b = base + (neox ? i + half : 2 * i + 1);
        const float x = load(data(t), a, dtype), y = load(data(t), b, dtype);
        store(data(t), a, dtype, x * row[i] - y * row[half + i]);
        store(data(t), b, dtype, y * row[i] + x * row[half + i]);
      }
    }
  }
}

xhal_status rope(void*, const xhal_op_call* c, char* msg, size_t len) {
  const xhal_op_call& call = *c;
  const DLTensor *positions = call.tensors[XHAL_ROPE_POSITIONS], *cache = call.tensors[XHAL_ROPE_COS_SIN_CACHE];
  const bool neox = static_cast<const xhal_rope_op_params*>(call.params)->style == XHAL_ROPE_NEOX;
  std::vector<int64_t> pos(size_t(positions->shape[0]));
  for (size_t s = 0; s < pos.size(); ++s) {
    const int64_t at = int64_t(s) * positions->strides[0];
    pos[s] = positions->dtype.bits == 64 ? static_cast<const int64_t*>(data(positions))[at]
                                         : static_cast<const int32_t*>(data(positions))[at];
    if (pos[s] < 0 || pos[s] >= cache->shape[0]) {  // data the core cannot check without reading it
      std::snprintf(msg, len, "positions[%zu] = %lld is outside the cache's 0..%lld", s, (long long)pos[s],
                    (long long)cache->shape[0] - 1);
      return XHAL_ERR_INVALID_ARGUMENT;
    }
  }
  rotate(call.tensors[XHAL_ROPE_Q], pos, cache, neox, call.dtype);
  rotate(call.tensors[XHAL_ROPE_K], pos, cache, neox, call.dtype);
  return XHAL_OK;
}

xhal_status linear(void*, const xhal_op_call* c, char*, size_t) {
  const xhal_op_call& call = *c;
  const DLTensor *x = call.tensors[XHAL_LINEAR_X], *w = call.tensors[XHAL_LINEAR_W],
                 *bias = call.tensors[XHAL_LINEAR_BIAS], *out = call.tensors[XHAL_LINEAR_OUT];
  const int64_t M = x->shape[0], K = x->shape[1], N = w->shape[0];
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      float sum = bias != nullptr ? load(data(bias), n * bias->strides[0], call.dtype) : 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        sum += load(data(x), m * x->strides[0] + k, call.dtype) * load(data(w), n * w->strides[0] + k, call.dtype);
      }
      store(data(out), m * out->strides[0] + n, call.dtype, sum);
    }
  }
  return XHAL_OK;
}

void add(const xhal_host_api* host, const char* name, xhal_op op, xhal_kernel_run_fn run) {
  struct Class {
    xhal_dtype dtype;
    double tolerance;  // f32 sums in any order; the 16-bit types round the output
  };
  for (const Class& k : {Class{XHAL_DTYPE_F32, 1e-5}, Class{XHAL_DTYPE_F16, 2e-3}, Class{XHAL_DTYPE_BF16, 1.6e-2}}) {
    xhal_kernel_desc desc{};
    desc.struct_size = sizeof desc;
    desc.name = name;
    desc.op = op;
    desc.dtype = k.dtype;
    desc.is_reference = 1;  // the only kernel of each op here
    desc.rtol = desc.atol = k.tolerance;
    desc.run = run;
    char message[256] = "";
    if (host->register_kernel(host->ctx, &desc, message, sizeof message) != XHAL_OK) {
      host->log(host->ctx, XHAL_LOG_ERROR, message);
    }
  }
}

}  // namespace

void register_kernels(const xhal_host_api* host) {
  add(host, "toyaccel.rms_norm", XHAL_OP_RMS_NORM, rms_norm);
  add(host, "toyaccel.swiglu", XHAL_OP_SWIGLU, swiglu);
  add(host, "toyaccel.rope", XHAL_OP_ROPE, rope);
  add(host, "toyaccel.linear", XHAL_OP_LINEAR, linear);
}

}  // namespace toyaccel
