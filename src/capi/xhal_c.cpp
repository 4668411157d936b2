// The C API: each function converts DLTensors to views, calls the C++ API, and turns exceptions
// into a status plus a per-thread message.
#include "xhal/xhal.h"

#include <string>

#include "capi/c_call.hpp"
#include "core/op_table.hpp"
#include "core/text_format.hpp"
#include "xhal/xhal.hpp"

using namespace xhal::capi;  // NOLINT: the helpers every function of this file calls

extern "C" {

const char* xhal_version(void) { return XHAL_VERSION_STRING; }

const char* xhal_last_error(void) { return t_last_error.c_str(); }

xhal_status xhal_device_count(int32_t* count) {
  return guarded([&] {
    out_param(count, "xhal_device_count", "count") = int32_t(xhal::DeviceManager::instance().devices().size());
  });
}

xhal_status xhal_device_name(int32_t index, char* name, size_t len) {
  return guarded([&] {
    auto devices = xhal::DeviceManager::instance().devices();
    if (index < 0 || index >= int32_t(devices.size())) {
      throw xhal::Error(xhal::Errc::invalid_argument, "xhal_device_name: argument 'index': expected 0.." +
                                                          std::to_string(devices.size()) + " (exclusive), got " +
                                                          std::to_string(index));
    }
    copy_name(devices[size_t(index)].str(), name, len, "xhal_device_name");
  });
}

xhal_status xhal_default_device(char* name, size_t len) {
  return guarded(
      [&] { copy_name(xhal::DeviceManager::instance().default_device().str(), name, len, "xhal_default_device"); });
}

xhal_status xhal_memory_status_get(const char* device, xhal_memory_status* out) {
  return guarded([&] {
    xhal_memory_status& status = out_param(out, "xhal_memory_status_get", "out");
    auto s = xhal::DeviceManager::instance().memory_status(xhal::Device::parse(device ? device : ""));
    status = {s.free, s.total, s.allocated, s.reserved, s.peak_allocated, s.num_allocs, s.num_ooms};
  });
}

xhal_status xhal_empty_cache(const char* device) {
  return guarded([&] { xhal::DeviceManager::instance().empty_cache(xhal::Device::parse(device ? device : "")); });
}

xhal_status xhal_synchronize(const char* device) {
  return guarded([&] { xhal::DeviceManager::instance().synchronize(xhal::Device::parse(device ? device : "")); });
}

xhal_attention_params xhal_attention_params_default(void) { return {0.0f, 0, -1, -1, 0.0f}; }

xhal_status xhal_attention(const DLTensor* q, const DLTensor* k, const DLTensor* v, const DLTensor* out,
                           const xhal_attention_params* params, const DLTensor* lse, void* stream) {
  return guarded([&] {
    auto o = view(out, xhal::Op::attention, XHAL_ATTENTION_OUT);
    auto l = optional_view(lse, xhal::Op::attention, XHAL_ATTENTION_LSE);
    auto s = stream_for(o, stream);
    xhal::ops::attention(view(q, xhal::Op::attention, XHAL_ATTENTION_Q), view(k, xhal::Op::attention, XHAL_ATTENTION_K),
                         view(v, xhal::Op::attention, XHAL_ATTENTION_V), o, attention_params(params), ptr(l), ptr(s));
  });
}

xhal_status xhal_attention_varlen(const DLTensor* q, const DLTensor* k, const DLTensor* v, const DLTensor* cu_q,
                                  const DLTensor* cu_k, int64_t max_q, int64_t max_k, const DLTensor* out,
                                  const xhal_attention_params* params, const DLTensor* lse, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::attention_varlen;
    auto o = view(out, op, XHAL_ATTENTION_VARLEN_OUT);
    auto l = optional_view(lse, op, XHAL_ATTENTION_VARLEN_LSE);
    auto s = stream_for(o, stream);
    xhal::ops::attention_varlen(
        view(q, op, XHAL_ATTENTION_VARLEN_Q), view(k, op, XHAL_ATTENTION_VARLEN_K),
        view(v, op, XHAL_ATTENTION_VARLEN_V), view(cu_q, op, XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q),
        view(cu_k, op, XHAL_ATTENTION_VARLEN_CU_SEQLENS_K), max_q, max_k, o, attention_params(params), ptr(l), ptr(s));
  });
}

xhal_status xhal_paged_attention(const DLTensor* q, const DLTensor* k_cache, const DLTensor* v_cache,
                                 const DLTensor* block_table, const DLTensor* seq_lens, const DLTensor* out,
                                 const xhal_attention_params* params, void* stream) {
  return xhal_paged_attention_scaled(q, k_cache, v_cache, block_table, seq_lens, out, params, nullptr, nullptr, stream);
}

xhal_status xhal_paged_prefill(const DLTensor* q, const DLTensor* k_cache, const DLTensor* v_cache,
                               const DLTensor* cu_seqlens_q, const DLTensor* block_table, const DLTensor* seq_lens,
                               int64_t max_seqlen_q, const DLTensor* out, const xhal_attention_params* params,
                               const DLTensor* lse, void* stream) {
  return xhal_paged_prefill_scaled(q, k_cache, v_cache, cu_seqlens_q, block_table, seq_lens, max_seqlen_q, out, params,
                                   lse, nullptr, nullptr, stream);
}

xhal_status xhal_rms_norm(const DLTensor* x, const DLTensor* weight, float eps, const DLTensor* out, void* stream) {
  return guarded([&] {
    auto o = view(out, xhal::Op::rms_norm, XHAL_RMS_NORM_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::rms_norm(view(x, xhal::Op::rms_norm, XHAL_RMS_NORM_X),
                        view(weight, xhal::Op::rms_norm, XHAL_RMS_NORM_WEIGHT), eps, o, ptr(s));
  });
}

xhal_status xhal_fused_add_rms_norm(const DLTensor* x, const DLTensor* residual, const DLTensor* weight, float eps,
                                    const DLTensor* out, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::fused_add_rms_norm;
    auto o = view(out, op, XHAL_FUSED_ADD_RMS_NORM_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::fused_add_rms_norm(view(x, op, XHAL_FUSED_ADD_RMS_NORM_X),
                                  view(residual, op, XHAL_FUSED_ADD_RMS_NORM_RESIDUAL),
                                  view(weight, op, XHAL_FUSED_ADD_RMS_NORM_WEIGHT), eps, o, ptr(s));
  });
}

xhal_status xhal_layer_norm(const DLTensor* x, const DLTensor* weight, const DLTensor* bias, float eps,
                            const DLTensor* out, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::layer_norm;
    auto o = view(out, op, XHAL_LAYER_NORM_OUT);
    auto s = stream_for(o, stream);
    auto bias_view = optional_view(bias, op, XHAL_LAYER_NORM_BIAS);
    xhal::ops::layer_norm(view(x, op, XHAL_LAYER_NORM_X), view(weight, op, XHAL_LAYER_NORM_WEIGHT), ptr(bias_view), eps,
                          o, ptr(s));
  });
}

xhal_status xhal_softmax(const DLTensor* x, const DLTensor* out, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::softmax;
    auto o = view(out, op, XHAL_SOFTMAX_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::softmax(view(x, op, XHAL_SOFTMAX_X), o, ptr(s));
  });
}

namespace {

// add and mul, which share their slots.
xhal_status binary_elementwise(xhal::Op op,
                               void (*fn)(const xhal::TensorView&, const xhal::TensorView&, const xhal::TensorView&,
                                          const xhal::Stream*),
                               const DLTensor* x, const DLTensor* y, const DLTensor* out, void* stream) {
  return guarded([&] {
    auto o = view(out, op, XHAL_ADD_OUT);
    auto s = stream_for(o, stream);
    fn(view(x, op, XHAL_ADD_X), view(y, op, XHAL_ADD_Y), o, ptr(s));
  });
}

}  // namespace

xhal_status xhal_add(const DLTensor* x, const DLTensor* y, const DLTensor* out, void* stream) {
  return binary_elementwise(xhal::Op::add, xhal::ops::add, x, y, out, stream);
}

xhal_status xhal_mul(const DLTensor* x, const DLTensor* y, const DLTensor* out, void* stream) {
  return binary_elementwise(xhal::Op::mul, xhal::ops::mul, x, y, out, stream);
}

xhal_status xhal_swiglu(const DLTensor* gate, const DLTensor* up, const DLTensor* out, void* stream) {
  return guarded([&] {
    auto o = view(out, xhal::Op::swiglu, XHAL_SWIGLU_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::swiglu(view(gate, xhal::Op::swiglu, XHAL_SWIGLU_GATE), view(up, xhal::Op::swiglu, XHAL_SWIGLU_UP), o,
                      ptr(s));
  });
}

xhal_status xhal_swiglu_packed(const DLTensor* x, const DLTensor* out, void* stream) {
  return guarded([&] {
    auto o = view(out, xhal::Op::swiglu_packed, XHAL_SWIGLU_PACKED_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::swiglu_packed(view(x, xhal::Op::swiglu_packed, XHAL_SWIGLU_PACKED_X), o, ptr(s));
  });
}

xhal_status xhal_gelu_and_mul(const DLTensor* gate, const DLTensor* up, const DLTensor* out, int32_t approximation,
                              void* stream) {
  return guarded([&] {
    constexpr auto op = xhal::Op::gelu_and_mul;
    auto o = view(out, op, XHAL_GELU_AND_MUL_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::gelu_and_mul(view(gate, op, XHAL_GELU_AND_MUL_GATE), view(up, op, XHAL_GELU_AND_MUL_UP), o,
                            xhal::ops::GeluApproximation(approximation), ptr(s));
  });
}

xhal_status xhal_gelu_and_mul_packed(const DLTensor* x, const DLTensor* out, int32_t approximation, void* stream) {
  return guarded([&] {
    constexpr auto op = xhal::Op::gelu_and_mul_packed;
    auto o = view(out, op, XHAL_GELU_AND_MUL_PACKED_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::gelu_and_mul_packed(view(x, op, XHAL_GELU_AND_MUL_PACKED_X), o,
                                   xhal::ops::GeluApproximation(approximation), ptr(s));
  });
}

xhal_status xhal_rope(const DLTensor* q, const DLTensor* k, const DLTensor* positions, const DLTensor* cos_sin_cache,
                      int32_t neox, void* stream) {
  return guarded([&] {
    auto qv = view(q, xhal::Op::rope, XHAL_ROPE_Q);
    auto s = stream_for(qv, stream);
    xhal::ops::rope(qv, view(k, xhal::Op::rope, XHAL_ROPE_K), view(positions, xhal::Op::rope, XHAL_ROPE_POSITIONS),
                    view(cos_sin_cache, xhal::Op::rope, XHAL_ROPE_COS_SIN_CACHE),
                    neox ? xhal::RopeStyle::neox : xhal::RopeStyle::gptj, ptr(s));
  });
}

xhal_status xhal_rope_backward(const DLTensor* dq, const DLTensor* dk, const DLTensor* positions,
                               const DLTensor* cos_sin_cache, int32_t neox, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::rope_backward;
    auto qv = view(dq, op, XHAL_ROPE_BACKWARD_DQ);
    auto s = stream_for(qv, stream);
    xhal::ops::rope_backward(qv, view(dk, op, XHAL_ROPE_BACKWARD_DK), view(positions, op, XHAL_ROPE_BACKWARD_POSITIONS),
                             view(cos_sin_cache, op, XHAL_ROPE_BACKWARD_COS_SIN_CACHE),
                             neox ? xhal::RopeStyle::neox : xhal::RopeStyle::gptj, ptr(s));
  });
}

xhal_status xhal_rms_norm_backward(const DLTensor* dout, const DLTensor* x, const DLTensor* weight, float eps,
                                   const DLTensor* dx, const DLTensor* dweight, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::rms_norm_backward;
    auto o = view(dx, op, XHAL_RMS_NORM_BACKWARD_DX);
    auto s = stream_for(o, stream);
    xhal::ops::rms_norm_backward(view(dout, op, XHAL_RMS_NORM_BACKWARD_DOUT), view(x, op, XHAL_RMS_NORM_BACKWARD_X),
                                 view(weight, op, XHAL_RMS_NORM_BACKWARD_WEIGHT), eps, o,
                                 view(dweight, op, XHAL_RMS_NORM_BACKWARD_DWEIGHT), ptr(s));
  });
}

xhal_status xhal_fused_add_rms_norm_backward(const DLTensor* dout, const DLTensor* residual, const DLTensor* weight,
                                             float eps, const DLTensor* dresidual, const DLTensor* dx,
                                             const DLTensor* dweight, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::fused_add_rms_norm_backward;
    auto o = view(dx, op, XHAL_FUSED_ADD_RMS_NORM_BACKWARD_DX);
    auto s = stream_for(o, stream);
    xhal::ops::fused_add_rms_norm_backward(view(dout, op, XHAL_FUSED_ADD_RMS_NORM_BACKWARD_DOUT),
                                           view(residual, op, XHAL_FUSED_ADD_RMS_NORM_BACKWARD_RESIDUAL),
                                           view(weight, op, XHAL_FUSED_ADD_RMS_NORM_BACKWARD_WEIGHT), eps,
                                           view(dresidual, op, XHAL_FUSED_ADD_RMS_NORM_BACKWARD_DRESIDUAL), o,
                                           view(dweight, op, XHAL_FUSED_ADD_RMS_NORM_BACKWARD_DWEIGHT), ptr(s));
  });
}

xhal_status xhal_swiglu_backward(const DLTensor* dout, const DLTensor* gate, const DLTensor* up, const DLTensor* dgate,
                                 const DLTensor* dup, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::swiglu_backward;
    auto o = view(dgate, op, XHAL_SWIGLU_BACKWARD_DGATE);
    auto s = stream_for(o, stream);
    xhal::ops::swiglu_backward(view(dout, op, XHAL_SWIGLU_BACKWARD_DOUT), view(gate, op, XHAL_SWIGLU_BACKWARD_GATE),
                               view(up, op, XHAL_SWIGLU_BACKWARD_UP), o, view(dup, op, XHAL_SWIGLU_BACKWARD_DUP),
                               ptr(s));
  });
}

xhal_status xhal_swiglu_packed_backward(const DLTensor* dout, const DLTensor* x, const DLTensor* dx, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::swiglu_packed_backward;
    auto o = view(dx, op, XHAL_SWIGLU_PACKED_BACKWARD_DX);
    auto s = stream_for(o, stream);
    xhal::ops::swiglu_packed_backward(view(dout, op, XHAL_SWIGLU_PACKED_BACKWARD_DOUT),
                                      view(x, op, XHAL_SWIGLU_PACKED_BACKWARD_X), o, ptr(s));
  });
}

xhal_status xhal_cross_entropy(const DLTensor* logits, const DLTensor* labels, const DLTensor* loss,
                               const DLTensor* lse, int64_t ignore_index, float label_smoothing, float z_loss,
                               void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::cross_entropy;
    auto x = view(logits, op, XHAL_CROSS_ENTROPY_LOGITS);
    auto s = stream_for(x, stream);
    xhal::ops::cross_entropy(x, view(labels, op, XHAL_CROSS_ENTROPY_LABELS), view(loss, op, XHAL_CROSS_ENTROPY_LOSS),
                             view(lse, op, XHAL_CROSS_ENTROPY_LSE), {ignore_index, label_smoothing, z_loss}, ptr(s));
  });
}

xhal_status xhal_cross_entropy_backward(const DLTensor* logits, const DLTensor* labels, const DLTensor* lse,
                                        const DLTensor* dloss, const DLTensor* dlogits, int64_t ignore_index,
                                        float label_smoothing, float z_loss, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::cross_entropy_backward;
    auto x = view(logits, op, XHAL_CROSS_ENTROPY_BACKWARD_LOGITS);
    auto s = stream_for(x, stream);
    xhal::ops::cross_entropy_backward(
        x, view(labels, op, XHAL_CROSS_ENTROPY_BACKWARD_LABELS), view(lse, op, XHAL_CROSS_ENTROPY_BACKWARD_LSE),
        view(dloss, op, XHAL_CROSS_ENTROPY_BACKWARD_DLOSS), view(dlogits, op, XHAL_CROSS_ENTROPY_BACKWARD_DLOGITS),
        {ignore_index, label_smoothing, z_loss}, ptr(s));
  });
}

xhal_status xhal_adamw_step(size_t count, const DLTensor* const* params, const DLTensor* const* grads,
                            const DLTensor* const* exp_avgs, const DLTensor* const* exp_avg_sqs,
                            const DLTensor* const* masters, const DLTensor* lr, const DLTensor* grad_scale,
                            const xhal_adamw_params* hyper, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::adamw_step;
    if (hyper == nullptr) {
      throw xhal::Error(xhal::Errc::invalid_argument,
                        "xhal_adamw_step: argument 'hyper': expected the step's hyperparameters, got NULL");
    }
    const std::vector<xhal::TensorView> p = list_views(count, params, op, XHAL_ADAMW_STEP_PARAM),
                                        g = list_views(count, grads, op, XHAL_ADAMW_STEP_GRAD),
                                        m = list_views(count, exp_avgs, op, XHAL_ADAMW_STEP_EXP_AVG),
                                        v = list_views(count, exp_avg_sqs, op, XHAL_ADAMW_STEP_EXP_AVG_SQ),
                                        w = list_views(count, masters, op, XHAL_ADAMW_STEP_MASTER, true);
    std::vector<xhal::AdamWTensors> tensors;
    for (size_t i = 0; i < count; ++i) tensors.push_back({p[i], g[i], m[i], v[i], w.empty() ? nullptr : &w[i]});
    auto s = stream_for(p.empty() ? xhal::TensorView() : p[0], stream);
    const auto lr_view = optional_view(lr, op, XHAL_ADAMW_STEP_LR);
    const auto scale_view = optional_view(grad_scale, op, XHAL_ADAMW_STEP_GRAD_SCALE);
    const xhal_adamw_params& h = *hyper;
    xhal::ops::adamw_step(tensors, ptr(lr_view), ptr(scale_view),
                          {h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step}, ptr(s));
  });
}

xhal_status xhal_global_grad_norm(size_t count, const DLTensor* const* grads, const DLTensor* norm,
                                  const DLTensor* clip_scale, float max_norm, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::global_grad_norm;
    const std::vector<xhal::TensorView> g = list_views(count, grads, op, XHAL_GLOBAL_GRAD_NORM_GRAD);
    auto s = stream_for(g.empty() ? xhal::TensorView() : g[0], stream);
    const auto clip_view = optional_view(clip_scale, op, XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE);
    xhal::ops::global_grad_norm(g, view(norm, op, XHAL_GLOBAL_GRAD_NORM_NORM), ptr(clip_view), max_norm, ptr(s));
  });
}

xhal_status xhal_attention_backward(const DLTensor* dout, const DLTensor* q, const DLTensor* k, const DLTensor* v,
                                    const DLTensor* out, const DLTensor* lse, const DLTensor* dq, const DLTensor* dk,
                                    const DLTensor* dv, const xhal_attention_params* params, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::attention_backward;
    auto o = view(out, op, XHAL_ATTENTION_BACKWARD_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::attention_backward(view(dout, op, XHAL_ATTENTION_BACKWARD_DOUT), view(q, op, XHAL_ATTENTION_BACKWARD_Q),
                                  view(k, op, XHAL_ATTENTION_BACKWARD_K), view(v, op, XHAL_ATTENTION_BACKWARD_V), o,
                                  view(lse, op, XHAL_ATTENTION_BACKWARD_LSE), view(dq, op, XHAL_ATTENTION_BACKWARD_DQ),
                                  view(dk, op, XHAL_ATTENTION_BACKWARD_DK), view(dv, op, XHAL_ATTENTION_BACKWARD_DV),
                                  attention_params(params), ptr(s));
  });
}

xhal_status xhal_attention_varlen_backward(const DLTensor* dout, const DLTensor* q, const DLTensor* k,
                                           const DLTensor* v, const DLTensor* cu_seqlens_q,
                                           const DLTensor* cu_seqlens_k, int64_t max_seqlen_q, int64_t max_seqlen_k,
                                           const DLTensor* out, const DLTensor* lse, const DLTensor* dq,
                                           const DLTensor* dk, const DLTensor* dv, const xhal_attention_params* params,
                                           void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::attention_varlen_backward;
    auto o = view(out, op, XHAL_ATTENTION_VARLEN_BACKWARD_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::attention_varlen_backward(
        view(dout, op, XHAL_ATTENTION_VARLEN_BACKWARD_DOUT), view(q, op, XHAL_ATTENTION_VARLEN_BACKWARD_Q),
        view(k, op, XHAL_ATTENTION_VARLEN_BACKWARD_K), view(v, op, XHAL_ATTENTION_VARLEN_BACKWARD_V),
        view(cu_seqlens_q, op, XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_Q),
        view(cu_seqlens_k, op, XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_K), max_seqlen_q, max_seqlen_k, o,
        view(lse, op, XHAL_ATTENTION_VARLEN_BACKWARD_LSE), view(dq, op, XHAL_ATTENTION_VARLEN_BACKWARD_DQ),
        view(dk, op, XHAL_ATTENTION_VARLEN_BACKWARD_DK), view(dv, op, XHAL_ATTENTION_VARLEN_BACKWARD_DV),
        attention_params(params), ptr(s));
  });
}

xhal_status xhal_linear_backward(const DLTensor* dout, const DLTensor* x, const DLTensor* w, const DLTensor* dx,
                                 const DLTensor* dw, const DLTensor* dbias, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::linear_backward;
    auto d = view(dout, op, XHAL_LINEAR_BACKWARD_DOUT);
    auto s = stream_for(d, stream);
    auto dx_view = optional_view(dx, op, XHAL_LINEAR_BACKWARD_DX);
    auto dw_view = optional_view(dw, op, XHAL_LINEAR_BACKWARD_DW);
    auto dbias_view = optional_view(dbias, op, XHAL_LINEAR_BACKWARD_DBIAS);
    xhal::ops::linear_backward(d, view(x, op, XHAL_LINEAR_BACKWARD_X), view(w, op, XHAL_LINEAR_BACKWARD_W),
                               ptr(dx_view), ptr(dw_view), ptr(dbias_view), ptr(s));
  });
}

xhal_status xhal_embedding(const DLTensor* ids, const DLTensor* table, const DLTensor* out, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::embedding;
    auto o = view(out, op, XHAL_EMBEDDING_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::embedding(view(ids, op, XHAL_EMBEDDING_IDS), view(table, op, XHAL_EMBEDDING_TABLE), o, ptr(s));
  });
}

xhal_status xhal_merge_attention_states(const DLTensor* out_a, const DLTensor* lse_a, const DLTensor* out_b,
                                        const DLTensor* lse_b, const DLTensor* out, const DLTensor* lse, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::merge_attention_states;
    auto o = view(out, op, XHAL_MERGE_ATTENTION_STATES_OUT);
    auto s = stream_for(o, stream);
    auto lse_view = optional_view(lse, op, XHAL_MERGE_ATTENTION_STATES_LSE);
    xhal::ops::merge_attention_states(view(out_a, op, XHAL_MERGE_ATTENTION_STATES_OUT_A),
                                      view(lse_a, op, XHAL_MERGE_ATTENTION_STATES_LSE_A),
                                      view(out_b, op, XHAL_MERGE_ATTENTION_STATES_OUT_B),
                                      view(lse_b, op, XHAL_MERGE_ATTENTION_STATES_LSE_B), o, ptr(lse_view), ptr(s));
  });
}

xhal_status xhal_kv_cache_write(const DLTensor* k, const DLTensor* v, const DLTensor* slot_mapping,
                                const DLTensor* k_cache, const DLTensor* v_cache, void* stream) {
  return xhal_kv_cache_write_scaled(k, v, slot_mapping, k_cache, v_cache, nullptr, nullptr, stream);
}

xhal_status xhal_argmax(const DLTensor* logits, const DLTensor* indices, const DLTensor* values, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::argmax;
    auto l = view(logits, op, XHAL_ARGMAX_LOGITS);
    auto s = stream_for(l, stream);
    auto values_view = optional_view(values, op, XHAL_ARGMAX_VALUES);
    xhal::ops::argmax(l, view(indices, op, XHAL_ARGMAX_INDICES), ptr(values_view), ptr(s));
  });
}

xhal_status xhal_top_k(const DLTensor* x, const DLTensor* values, const DLTensor* indices, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::top_k;
    auto xv = view(x, op, XHAL_TOP_K_X);
    auto s = stream_for(xv, stream);
    xhal::ops::top_k(xv, view(values, op, XHAL_TOP_K_VALUES), view(indices, op, XHAL_TOP_K_INDICES), ptr(s));
  });
}

xhal_status xhal_sample(const DLTensor* logits, const DLTensor* tokens, const xhal_sample_params* params,
                        const xhal_sample_rows* rows, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::sample;
    auto l = view(logits, op, XHAL_SAMPLE_LOGITS);
    auto s = stream_for(l, stream);
    xhal::ops::SampleParams p;
    if (params != nullptr) {
      p = {params->temperature, params->top_k, params->top_p, params->min_p, params->seed, params->step};
    }
    const xhal_sample_rows none{};
    const xhal_sample_rows& r = rows != nullptr ? *rows : none;
    auto temperature = optional_view(r.temperature, op, XHAL_SAMPLE_TEMPERATURE);
    auto top_k = optional_view(r.top_k, op, XHAL_SAMPLE_TOP_K);
    auto top_p = optional_view(r.top_p, op, XHAL_SAMPLE_TOP_P);
    auto min_p = optional_view(r.min_p, op, XHAL_SAMPLE_MIN_P);
    auto seeds = optional_view(r.seeds, op, XHAL_SAMPLE_SEEDS);
    auto steps = optional_view(r.steps, op, XHAL_SAMPLE_STEPS);
    xhal::ops::sample(l, view(tokens, op, XHAL_SAMPLE_TOKENS), p,
                      {ptr(temperature), ptr(top_k), ptr(top_p), ptr(min_p), ptr(seeds), ptr(steps)}, ptr(s));
  });
}

xhal_status xhal_embedding_backward(const DLTensor* ids, const DLTensor* dout, const DLTensor* dtable,
                                    int64_t padding_idx, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::embedding_backward;
    auto d = view(dtable, op, XHAL_EMBEDDING_BACKWARD_DTABLE);
    auto s = stream_for(d, stream);
    xhal::ops::embedding_backward(view(ids, op, XHAL_EMBEDDING_BACKWARD_IDS),
                                  view(dout, op, XHAL_EMBEDDING_BACKWARD_DOUT), d, padding_idx, ptr(s));
  });
}

void xhal_set_deterministic(int32_t on) { xhal::registry::set_deterministic(on != 0); }

namespace {

void fill_rope_cache(int64_t max_pos, int64_t rotary_dim, double theta, const xhal::ops::RopeScaling& scaling,
                     const DLTensor* out, const char* api) {
  auto o = view(out, "rope_cache", "out");
  if (o.dtype() != xhal::DType::f32 || o.ndim() != 2 || o.size(0) != max_pos || o.size(1) != rotary_dim ||
      !o.is_contiguous()) {
    throw xhal::Error(
        xhal::Errc::invalid_argument,
        xhal::format_text("{}: argument 'out': expected a contiguous f32 tensor of shape [max_pos, rotary_dim]", api));
  }
  if (o.numel() > 0 && o.data() == nullptr) {
    throw xhal::Error(xhal::Errc::invalid_argument,
                      xhal::format_text("{}: argument 'out': expected data for a non-empty tensor, got NULL", api));
  }
  xhal::copy(o, xhal::ops::rope_cache(max_pos, rotary_dim, theta, scaling, o.device()));
}

}  // namespace

xhal_status xhal_rope_cache(int64_t max_pos, int64_t rotary_dim, double theta, const DLTensor* out) {
  return guarded([&] { fill_rope_cache(max_pos, rotary_dim, theta, {}, out, "xhal_rope_cache"); });
}

xhal_status xhal_rope_cache_scaled(int64_t max_pos, int64_t rotary_dim, double theta, const xhal_rope_scaling* scaling,
                                   const DLTensor* out) {
  return guarded([&] {
    if (scaling == nullptr) {
      throw xhal::Error(xhal::Errc::invalid_argument,
                        "xhal_rope_cache_scaled: argument 'scaling': expected a xhal_rope_scaling, got NULL");
    }
    if (scaling->type < 0 || scaling->type > 3) {
      throw xhal::Error(
          xhal::Errc::invalid_argument,
          xhal::format_text("xhal_rope_cache_scaled: argument 'scaling.type': expected 0 (none), 1 (linear), "
                            "2 (llama3) or 3 (yarn), got {}",
                            scaling->type));
    }
    xhal::ops::RopeScaling s;
    s.type = xhal::ops::RopeScaling::Type(scaling->type);
    s.factor = scaling->factor;
    s.original_max_position = scaling->original_max_position_embeddings;
    s.low_freq_factor = scaling->low_freq_factor;
    s.high_freq_factor = scaling->high_freq_factor;
    s.beta_fast = scaling->beta_fast;
    s.beta_slow = scaling->beta_slow;
    s.attention_factor = scaling->attention_factor;
    fill_rope_cache(max_pos, rotary_dim, theta, s, out, "xhal_rope_cache_scaled");
  });
}

xhal_status xhal_linear(const DLTensor* x, const DLTensor* w, const DLTensor* bias, const DLTensor* out, void* stream) {
  return guarded([&] {
    auto o = view(out, xhal::Op::linear, XHAL_LINEAR_OUT);
    auto b = optional_view(bias, xhal::Op::linear, XHAL_LINEAR_BIAS);
    auto s = stream_for(o, stream);
    xhal::ops::linear(view(x, xhal::Op::linear, XHAL_LINEAR_X), view(w, xhal::Op::linear, XHAL_LINEAR_W), ptr(b), o,
                      ptr(s));
  });
}

}  // extern "C"
