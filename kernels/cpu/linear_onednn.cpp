// linear in bf16 through oneDNN's matmul where it beats the BLAS path (which converts x and w to
// f32 for sgemm): on CPUs with AMX its brgemm kernels multiply bf16 tiles as stored (the 2-vCPU AMX
// Xeon: 4096³ in 106-121 ms against 452-455), and on AMD CPUs with AVX512_BF16 its vdpbf16ps
// kernels do twice the multiply-adds of an f32 FMA at the same rate (the 2-vCPU Zen 4 EPYC: 344 ms
// against 706). On Intel CPUs without AMX those kernels were slower than sgemm (690 ms against
// 452 on the Xeon with AMX set aside), so the kernel stands aside there (docs/journal/kernel-notes.md).
// Registered for bf16 only, above the BLAS kernel and below the few-rows one (decode's rows read w
// once as stored, faster than a GEMM). oneDNN's scratchpad comes from the core's allocator.
#include <oneapi/dnnl/dnnl.hpp>

#include <exception>
#include <string>
#include <unordered_map>

#include "kernel_registration.hpp"
#include "kernels/blas_layout.hpp"
#include "onednn.hpp"
#include "scratch.hpp"
#include "cpu_features.hpp"

namespace xhal::cpu {
namespace {

bool onednn_runs_amx() {
  static const bool amx = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_amx;
  return amx && cpu_has_amx_bf16();
}

// oneDNN multiplies bf16 with vdpbf16ps on a CPU that runs it fast (cpu_has_fast_bf16_dot).
bool onednn_runs_bf16_dot() {
  static const bool dot = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_bf16;
  return dot && cpu_has_fast_bf16_dot();
}

const char* onednn_supports(void*, const xhal_op_call* c) {
  if (!onednn_runs_bf16()) {
    return "neither AMX nor AMD's AVX512_BF16 (or XHAL_CPU_DISABLE names them): the BLAS path is faster";
  }
  const DLTensor *x = c->tensors[XHAL_LINEAR_X], *out = c->tensors[XHAL_LINEAR_OUT];
  if (x->shape[1] == 0) return "K = 0: out is the bias alone";
  if (!kernels::blas_rows_apart(out)) return "rows of out overlap";
  return nullptr;
}

// A 2-d tensor as oneDNN sees it: dims {rows, cols} with the tensor's strides, or transposed.
dnnl::memory::desc desc_of(MatmulOperand m) {
  const int r = m.transposed ? 1 : 0, k = 1 - r;
  return dnnl::memory::desc({m.t->shape[r], m.t->shape[k]}, dnnl::memory::data_type::bf16,
                            dnnl::memory::dims{m.t->strides[r], m.t->strides[k]});
}

template <class E>
struct LinearOnednn {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor *x = c->tensors[XHAL_LINEAR_X], *w = c->tensors[XHAL_LINEAR_W];
    if (x->shape[0] == 0 || w->shape[0] == 0) return XHAL_OK;
    // w [N, K] is the matmul's K x N weights, transposed.
    return onednn_bf16_matmul(c, "linear", {x, false}, {w, true}, c->tensors[XHAL_LINEAR_BIAS],
                              c->tensors[XHAL_LINEAR_OUT], msg, len);
  }
};

}  // namespace

bool onednn_runs_bf16() { return onednn_runs_amx() || onednn_runs_bf16_dot(); }

xhal_status onednn_bf16_matmul(const xhal_op_call* c, const char* op, MatmulOperand src, MatmulOperand weights,
                               const DLTensor* bias, const DLTensor* dst, char* msg, size_t len) {
  try {
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::memory::desc bias_desc =
        bias == nullptr ? dnnl::memory::desc()
                        : dnnl::memory::desc({1, bias->shape[0]}, dnnl::memory::data_type::bf16,
                                             dnnl::memory::dims{bias->shape[0] * bias->strides[0], bias->strides[0]});
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(desc_of(src), desc_of(weights), bias_desc, desc_of({dst, false})), attr, engine);
    Scratch scratch(c, pd.scratchpad_desc().get_size() + 1);
    if (scratch.data() == nullptr) {
      return kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY, "%s: no memory for oneDNN's scratchpad", op);
    }
    dnnl::stream stream(engine);
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), engine, src.t->data)},
        {DNNL_ARG_WEIGHTS, dnnl::memory(pd.weights_desc(), engine, weights.t->data)},
        {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), engine, dst->data)},
        {DNNL_ARG_SCRATCHPAD, dnnl::memory(pd.scratchpad_desc(), engine, scratch.data())}};
    if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_desc, engine, bias->data));
    dnnl::matmul(pd).execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    return kernel_error(msg, len, XHAL_ERR_INTERNAL, "%s: oneDNN's matmul failed: %s", op, e.what());
  } catch (const std::exception& e) {  // nothing may cross the plugin's C boundary
    return kernel_error(msg, len, XHAL_ERR_INTERNAL, "%s: %s", op, e.what());
  }
  return XHAL_OK;
}

std::string onednn_summary() {
  const dnnl::version_t* v = dnnl::version();
  const std::string version =
      "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  return version +
         (onednn_runs_amx()        ? " (bf16 linear on AMX"
          : onednn_runs_bf16_dot() ? " (bf16 linear on AVX512_BF16"
                                   : " (bf16 linear: unused, no AMX or AMD AVX512_BF16") +
         (onednn_runs_vnni() ? "; int8 linear on VNNI)" : "; int8 linear: unused, no VNNI)");
}

XHAL_REGISTER_KERNELS(host) {
  kernels::register_for<LinearOnednn, BF16>(host, "cpu.linear_onednn", XHAL_OP_LINEAR, accuracy_for,
                                            {kFeatureFastPriority, false, onednn_supports});
}

}  // namespace xhal::cpu
