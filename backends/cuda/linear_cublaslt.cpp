#include "linear_cublaslt.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>

#include "backends/gpu/gpu_status.hpp"
#include "kernels/gpu/kernel_registration.hpp"

namespace xhal::cuda {
namespace {

using gpu::last_error;

// cuBLASLt statuses as xhal statuses, the message kept for last_error() as for runtime errors.
xhal_status check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return XHAL_OK;
  gpu::set_last_error(std::string(what) + ": cuBLASLt status " + std::to_string(int(status)));
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
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descriptors() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// The heuristic's choice is cached per problem: asking costs tens of microseconds.
using AlgoKey = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

xhal_status run_linear(const xhal_op_call* call, char* msg, size_t len) {
  const DLTensor *x = call->t[XHAL_SLOT_LINEAR_X], *w = call->t[XHAL_SLOT_LINEAR_W];
  const DLTensor *bias = call->t[XHAL_SLOT_BIAS], *out = call->t[XHAL_SLOT_LINEAR_OUT];
  const int64_t M = x->shape[0], K = x->shape[1], N = w->shape[0];
  if (M == 0 || N == 0) return XHAL_OK;
  auto fail = [&](xhal_status s) {
    std::snprintf(msg, len, "%s", last_error());
    return s;
  };
  cudaSetDevice(call->device_index);
  cublasLtHandle_t handle = handle_for(call->device_index);
  if (handle == nullptr) return fail(check(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtCreate"));
  const cudaDataType_t type = cuda_type(call->dtype);
  // Row-major out[M,N] = x[M,K] w[N,K]^T is column-major out^T[N,M] = w (op T of [K,N]) x^T.
  Descriptors d;
  xhal_status s = check(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
  const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
  if (s == XHAL_OK) s = check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose), "TRANSA");
  if (s == XHAL_OK) s = check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none), "TRANSB");
  if (s == XHAL_OK && bias != nullptr) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const void* bias_ptr = bias->data;
    s = check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue), "EPILOGUE");
    if (s == XHAL_OK) s = check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof bias_ptr), "BIAS_POINTER");
  }
  if (s == XHAL_OK) s = check(cublasLtMatrixLayoutCreate(&d.a, type, K, N, w->strides[0]), "layout w");
  if (s == XHAL_OK) s = check(cublasLtMatrixLayoutCreate(&d.b, type, K, M, x->strides[0]), "layout x");
  if (s == XHAL_OK) s = check(cublasLtMatrixLayoutCreate(&d.c, type, N, M, out->strides[0]), "layout out");
  if (s != XHAL_OK) return fail(s);

  static std::mutex cache_mutex;
  static std::map<AlgoKey, cublasLtMatmulAlgo_t> cache;
  const AlgoKey key{call->device_index, int(call->dtype), M, N, K, x->strides[0], w->strides[0],
                    out->strides[0], bias != nullptr};
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
  {
    std::lock_guard lock(cache_mutex);
    if (auto it = cache.find(key); it != cache.end()) algo = it->second, found = true;
  }
  if (!found) {
    s = check(cublasLtMatmulPreferenceCreate(&d.pref), "preference");
    const size_t workspace = kWorkspace;
    if (s == XHAL_OK) s = check(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace), "workspace pref");
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    if (s == XHAL_OK) s = check(cublasLtMatmulAlgoGetHeuristic(handle, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &result, &count), "heuristic");
    if (s == XHAL_OK && count == 0) s = check(CUBLAS_STATUS_NOT_SUPPORTED, "no cuBLASLt algorithm for this shape");
    if (s != XHAL_OK) return fail(s);
    algo = result.algo;
    std::lock_guard lock(cache_mutex);
    cache[key] = algo;
  }
  void* workspace = nullptr;
  if (call->host->scratch_alloc(call->host->ctx, call->device_index, kWorkspace, call->stream, &workspace) != XHAL_OK) {
    std::snprintf(msg, len, "no memory for the %zu-byte cuBLASLt workspace", kWorkspace);
    return XHAL_ERR_OUT_OF_MEMORY;
  }
  const float alpha = 1.0f, beta = 0.0f;
  s = check(cublasLtMatmul(handle, d.op, &alpha, w->data, d.a, x->data, d.b, &beta, out->data, d.c,
                           out->data, d.c, &algo, workspace, kWorkspace,
                           static_cast<cudaStream_t>(call->stream)),
            "cublasLtMatmul");
  // The allocator is stream-ordered: the workspace is reused on this stream only after the matmul.
  call->host->scratch_free(call->host->ctx, call->device_index, workspace);
  return s == XHAL_OK ? XHAL_OK : fail(s);
}

// cuBLASLt wants 16-byte aligned operands and leading dimensions for its fast kernels, and needs
// a bias of the output's type with unit stride.
const char* supports(const xhal_op_call* call) {
  const DLTensor* bias = call->t[XHAL_SLOT_BIAS];
  if (bias != nullptr && bias->shape[0] > 1 && bias->strides[0] != 1) return "bias must be contiguous";
  return nullptr;
}

}  // namespace

void register_cublaslt_linear(const xhal_host_api* host) {
  for (xhal_dtype dtype : {XHAL_DTYPE_F32, XHAL_DTYPE_F16, XHAL_DTYPE_BF16}) {
    kernels::register_kernel(host, "cuda.linear_cublaslt", XHAL_OP_LINEAR, dtype, &kernels::guarded<run_linear>,
                             gpu::accuracy_for(dtype), {10, true, supports});
  }
}

}  // namespace xhal::cuda
