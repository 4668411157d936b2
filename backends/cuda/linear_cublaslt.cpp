// linear on CUDA through cuBLASLt, with the bias fused in the epilogue.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/gpu/kernel_registration.hpp"

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
  const DLTensor *x = call->tensors[XHAL_LINEAR_X], *w = call->tensors[XHAL_LINEAR_W];
  const DLTensor *bias = call->tensors[XHAL_LINEAR_BIAS], *out = call->tensors[XHAL_LINEAR_OUT];
  const int64_t M = x->shape[0], K = x->shape[1], N = w->shape[0];
  if (M == 0 || N == 0) return XHAL_OK;
  cudaSetDevice(call->device);
  cublasLtHandle_t handle = handle_for(call->device);
  if (handle == nullptr) return check(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtCreate", msg, len);
  const cudaDataType_t type = cuda_type(call->dtype);
  // Row-major out[M,N] = x[M,K] w[N,K]^T is column-major out^T[N,M] = w (op T of [K,N]) x^T.
  Descriptors d;
  xhal_status s = check(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc", msg, len);
  const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
  if (s == XHAL_OK)
    s = check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose), "TRANSA",
              msg, len);
  if (s == XHAL_OK)
    s = check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none), "TRANSB", msg,
              len);
  if (s == XHAL_OK && bias != nullptr) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const void* bias_ptr = bias->data;
    s = check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
              "EPILOGUE", msg, len);
    if (s == XHAL_OK)
      s = check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof bias_ptr),
                "BIAS_POINTER", msg, len);
  }
  if (s == XHAL_OK) s = check(cublasLtMatrixLayoutCreate(&d.a, type, K, N, w->strides[0]), "layout w", msg, len);
  if (s == XHAL_OK) s = check(cublasLtMatrixLayoutCreate(&d.b, type, K, M, x->strides[0]), "layout x", msg, len);
  if (s == XHAL_OK) s = check(cublasLtMatrixLayoutCreate(&d.c, type, N, M, out->strides[0]), "layout out", msg, len);
  if (s != XHAL_OK) return s;

  static std::mutex cache_mutex;
  static std::map<AlgoKey, cublasLtMatmulAlgo_t> cache;
  const AlgoKey key{call->device,    int(call->dtype), M, N, K, x->strides[0], w->strides[0],
                    out->strides[0], bias != nullptr};
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
  {
    std::lock_guard lock(cache_mutex);
    if (auto it = cache.find(key); it != cache.end()) algo = it->second, found = true;
  }
  if (!found) {
    s = check(cublasLtMatmulPreferenceCreate(&d.pref), "preference", msg, len);
    const size_t workspace = kWorkspace;
    if (s == XHAL_OK)
      s = check(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                     sizeof workspace),
                "workspace pref", msg, len);
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    if (s == XHAL_OK)
      s = check(cublasLtMatmulAlgoGetHeuristic(handle, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &result, &count),
                "heuristic", msg, len);
    if (s == XHAL_OK && count == 0)
      s = check(CUBLAS_STATUS_NOT_SUPPORTED, "no cuBLASLt algorithm for this shape", msg, len);
    if (s != XHAL_OK) return s;
    algo = result.algo;
    std::lock_guard lock(cache_mutex);
    cache[key] = algo;
  }
  void* workspace = nullptr;
  if (const xhal_status refused =
          call->host->scratch_alloc(call->host->ctx, call->device, kWorkspace, call->stream, &workspace, msg, len);
      refused != XHAL_OK) {
    return refused;  // the allocator's message names the request
  }
  const float alpha = 1.0f, beta = 0.0f;
  s = check(cublasLtMatmul(handle, d.op, &alpha, w->data, d.a, x->data, d.b, &beta, out->data, d.c, out->data, d.c,
                           &algo, workspace, kWorkspace, static_cast<cudaStream_t>(call->stream)),
            "cublasLtMatmul", msg, len);
  // The allocator is stream-ordered: the workspace is reused on this stream only after the matmul.
  call->host->scratch_free(call->host->ctx, call->device, workspace);
  return s;
}

// cuBLASLt wants 16-byte aligned operands and leading dimensions for its fast kernels, and needs
// a bias of the output's type with unit stride.
const char* supports(void*, const xhal_op_call* call) {
  const DLTensor* bias = call->tensors[XHAL_LINEAR_BIAS];
  if (bias != nullptr && bias->shape[0] > 1 && bias->strides[0] != 1) return "bias must be contiguous";
  return nullptr;
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  for (xhal_dtype dtype : {XHAL_DTYPE_F32, XHAL_DTYPE_F16, XHAL_DTYPE_BF16}) {
    kernels::register_kernel(host, "cuda.linear_cublaslt", XHAL_OP_LINEAR, dtype, &kernels::guarded<run_linear>,
                             gpu::accuracy_for(dtype), {10, true, supports});
  }
}

}  // namespace xhal::cuda
