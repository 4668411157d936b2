#include "cublaslt_matmul.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

namespace xhal::cuda {
namespace {

// cuBLASLt statuses as xhal statuses, with "<what>: cuBLASLt status <n>" written to msg.
xhal_status check(cublasStatus_t status, const char* what, char* msg, size_t len) {
  if (status == CUBLAS_STATUS_SUCCESS) return XHAL_OK;
  std::snprintf(msg, len, "%s: cuBLASLt status %d", what, int(status));
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED: return XHAL_ERR_OUT_OF_MEMORY;
    case CUBLAS_STATUS_INVALID_VALUE: return XHAL_ERR_INVALID_ARGUMENT;
    case CUBLAS_STATUS_NOT_SUPPORTED: return XHAL_ERR_UNSUPPORTED;
    default: return XHAL_ERR_DEVICE;
  }
}

constexpr size_t kWorkspace = size_t(32) << 20;

// One cuBLASLt handle per device, created on first use.
cublasLtHandle_t handle_for(int device) {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard lock(mutex);
  auto& h = handles[device];
  if (h == nullptr && cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) h = nullptr;
  return h;
}

cudaDataType_t cuda_type(xhal_dtype dtype) {
  return dtype == XHAL_DTYPE_F32 ? CUDA_R_32F : dtype == XHAL_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

// RAII for the cuBLASLt descriptors of one call.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descriptors() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

template <class V>
xhal_status set(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attribute, const V& value, const char* what,
                char* msg, size_t len) {
  return check(cublasLtMatmulDescSetAttribute(op, attribute, &value, sizeof value), what, msg, len);
}

// The largest power of two up to 256 that divides p's address: what the heuristic may assume.
uint32_t alignment_of(const void* p) {
  uint32_t a = 256;
  while (a > 1 && reinterpret_cast<uintptr_t>(p) % a != 0) a /= 2;
  return a;
}

// A problem, its plan (descriptors and the heuristic's choice) cached per thread under it; the
// operands' alignments included: an algorithm chosen for aligned operands may not run on others.
using AlgoKey = std::tuple<int, int, int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, bool,
                           uint32_t, uint32_t, uint32_t, int, int, int, int, int>;

}  // namespace

namespace {

// A problem's descriptors and chosen algorithm, built once per thread (descriptors hold the
// per-call pointers, so threads do not share them; building them and asking the heuristic cost
// tens of microseconds, more than a decode step's small GEMMs take on the GPU).
struct Plan {
  Descriptors d;
  cublasLtMatmulAlgo_t algo{};
};

xhal_status build_plan(cublasLtHandle_t handle, const Matmul& mm, cudaDataType_t a_type, cudaDataType_t b_type,
                       cudaDataType_t d_type, uint32_t align_a, uint32_t align_b, uint32_t align_d, Plan& plan,
                       char* msg, size_t len) {
  Descriptors& d = plan.d;
  const bool integer = mm.compute == CUBLAS_COMPUTE_32I;
  xhal_status s =
      check(cublasLtMatmulDescCreate(&d.op, mm.compute, integer ? CUDA_R_32I : CUDA_R_32F), "matmul desc", msg, len);
  if (s == XHAL_OK) s = set(d.op, CUBLASLT_MATMUL_DESC_TRANSA, mm.trans_a, "TRANSA", msg, len);
  if (s == XHAL_OK) s = set(d.op, CUBLASLT_MATMUL_DESC_TRANSB, mm.trans_b, "TRANSB", msg, len);
  if (s == XHAL_OK && mm.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    s = set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, mm.epilogue, "EPILOGUE", msg, len);
    if (s == XHAL_OK) s = set(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, mm.bias, "BIAS_POINTER", msg, len);
  }
  if (s == XHAL_OK && mm.a_scale != nullptr) {
    s = set(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, mm.a_scale, "A_SCALE_POINTER", msg, len);
    // The mode only where it is not the default scalar one (older cuBLASLt has no such attribute).
    if (s == XHAL_OK && mm.a_scale_mode != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F)
      s = set(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, int32_t(mm.a_scale_mode), "A_SCALE_MODE", msg, len);
  }
  if (s == XHAL_OK && mm.b_scale != nullptr) {
    s = set(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, mm.b_scale, "B_SCALE_POINTER", msg, len);
    if (s == XHAL_OK && mm.b_scale_mode != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F)
      s = set(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, int32_t(mm.b_scale_mode), "B_SCALE_MODE", msg, len);
  }
  // Stored shapes: op N keeps [rows, cols] = [m, k] for A and [k, n] for B; op T swaps them.
  const bool ta = mm.trans_a != CUBLAS_OP_N, tb = mm.trans_b != CUBLAS_OP_N;
  if (s == XHAL_OK)
    s = check(cublasLtMatrixLayoutCreate(&d.a, a_type, ta ? mm.k : mm.m, ta ? mm.m : mm.k, mm.lda), "layout A", msg,
              len);
  if (s == XHAL_OK)
    s = check(cublasLtMatrixLayoutCreate(&d.b, b_type, tb ? mm.n : mm.k, tb ? mm.k : mm.n, mm.ldb), "layout B", msg,
              len);
  if (s == XHAL_OK) s = check(cublasLtMatrixLayoutCreate(&d.d, d_type, mm.m, mm.n, mm.ldd), "layout D", msg, len);
  if (s == XHAL_OK) s = check(cublasLtMatmulPreferenceCreate(&d.pref), "preference", msg, len);
  const size_t workspace = kWorkspace;
  if (s == XHAL_OK)
    s = check(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                   sizeof workspace),
              "workspace pref", msg, len);
  for (const auto& [attribute, bytes] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a},
                                         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
                                         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d},
                                         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d}}) {
    if (s == XHAL_OK)
      s = check(cublasLtMatmulPreferenceSetAttribute(d.pref, attribute, &bytes, sizeof bytes), "alignment pref", msg,
                len);
  }
  // A split reduction (split-K) adds its partial sums in f32: the in-place and output-type schemes
  // add them in the output's dtype, which for f16 and bf16 loses the f32 accumulation's accuracy
  // (dbias over 1000 rows was off by 0.026 in f16).
  const uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  if (s == XHAL_OK)
    s = check(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions,
                                                   sizeof reductions),
              "reduction scheme pref", msg, len);
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  if (s == XHAL_OK)
    s = check(cublasLtMatmulAlgoGetHeuristic(handle, d.op, d.a, d.b, d.d, d.d, d.pref, 1, &result, &count), "heuristic",
              msg, len);
  if (s == XHAL_OK && count == 0)
    s = check(CUBLAS_STATUS_NOT_SUPPORTED, "no cuBLASLt algorithm for this shape", msg, len);
  if (s == XHAL_OK) plan.algo = result.algo;
  return s;
}

}  // namespace

xhal_status run_matmul(const xhal_op_call* call, const Matmul& mm, char* msg, size_t len) {
  if (cudaSetDevice(call->device) != cudaSuccess) {
    std::snprintf(msg, len, "cannot make device %d current", int(call->device));
    return XHAL_ERR_DEVICE;
  }
  cublasLtHandle_t handle = handle_for(call->device);
  if (handle == nullptr) return check(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtCreate", msg, len);
  const cudaDataType_t type = cuda_type(call->dtype);
  const cudaDataType_t a_type = mm.a_type == Matmul::kCallType ? type : mm.a_type;
  const cudaDataType_t b_type = mm.b_type == Matmul::kCallType ? type : mm.b_type;
  const cudaDataType_t d_type = mm.d_type == Matmul::kCallType ? type : mm.d_type;
  const uint32_t align_a = alignment_of(mm.a), align_b = alignment_of(mm.b), align_d = alignment_of(mm.d);
  const AlgoKey key{call->device,
                    int(call->dtype),
                    int(mm.trans_a),
                    int(mm.trans_b),
                    mm.m,
                    mm.n,
                    mm.k,
                    mm.lda,
                    mm.ldb,
                    mm.ldd,
                    int(mm.epilogue),
                    mm.bias != nullptr,
                    align_a,
                    align_b,
                    align_d,
                    int(a_type),
                    int(b_type),
                    int(d_type) * 64 + int(mm.compute),
                    mm.a_scale != nullptr ? int(mm.a_scale_mode) : -1,
                    mm.b_scale != nullptr ? int(mm.b_scale_mode) : -1};
  thread_local std::map<AlgoKey, std::unique_ptr<Plan>> plans;
  auto found = plans.find(key);
  if (found == plans.end()) {
    auto plan = std::make_unique<Plan>();
    if (const xhal_status s =
            build_plan(handle, mm, a_type, b_type, d_type, align_a, align_b, align_d, *plan, msg, len);
        s != XHAL_OK) {
      return s;
    }
    found = plans.emplace(key, std::move(plan)).first;
  }
  Plan& plan = *found->second;
  // This call's pointers (the key fixes which ones the descriptor holds).
  xhal_status s = XHAL_OK;
  if (mm.epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    s = set(plan.d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, mm.bias, "BIAS_POINTER", msg, len);
  if (s == XHAL_OK && mm.a_scale != nullptr)
    s = set(plan.d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, mm.a_scale, "A_SCALE_POINTER", msg, len);
  if (s == XHAL_OK && mm.b_scale != nullptr)
    s = set(plan.d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, mm.b_scale, "B_SCALE_POINTER", msg, len);
  if (s != XHAL_OK) return s;
  void* workspace = nullptr;
  if (const xhal_status refused =
          call->host->scratch_alloc(call->host->ctx, call->device, kWorkspace, call->stream, &workspace, msg, len);
      refused != XHAL_OK) {
    return refused;  // the allocator's message names the request
  }
  const bool integer = mm.compute == CUBLAS_COMPUTE_32I;
  const float alpha = 1.0f, beta = 0.0f;
  const int32_t alpha_i = 1, beta_i = 0;
  s = check(cublasLtMatmul(handle, plan.d.op, integer ? static_cast<const void*>(&alpha_i) : &alpha, mm.a, plan.d.a,
                           mm.b, plan.d.b, integer ? static_cast<const void*>(&beta_i) : &beta, mm.d, plan.d.d, mm.d,
                           plan.d.d, &plan.algo, workspace, kWorkspace, static_cast<cudaStream_t>(call->stream)),
            "cublasLtMatmul", msg, len);
  // The allocator is stream-ordered: the workspace is reused on this stream only after the matmul.
  call->host->scratch_free(call->host->ctx, call->device, workspace);
  return s;
}

}  // namespace xhal::cuda
