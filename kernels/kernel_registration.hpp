// Registering kernels with the core, shared by every backend's kernels: one descriptor per
// (op, dtype), filled the same way everywhere.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <new>
#include <vector>

#include "xhal/plugin.h"

// Functions the host code of every backend and the GPU kernels both call.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define XHAL_HOST_DEVICE __host__ __device__
#else
#define XHAL_HOST_DEVICE
#endif

namespace xhal::kernels {

// Accuracy class vs float64: |out - exact| <= atol + rtol * |exact|.
struct Accuracy {
  double rtol, atol;
};

struct KernelTraits {
  int priority = 0;
  bool is_reference = false;
  xhal_kernel_supports_fn supports = nullptr;
};

// A kernel's body: the call, and the buffer for its message. In-tree kernels keep no context of
// their own; guarded() gives them the ABI's signature.
using RunFn = xhal_status (*)(const xhal_op_call*, char*, size_t);

// The call's parameter struct, as the op table declares it for the op.
template <class Params>
const Params& op_params(const xhal_op_call* c) {
  return *static_cast<const Params*>(c->params);
}

// The tensor at `slot`, or null when the op has no such slot or the tensor is absent: a kernel
// serving several ops reads the slots of one of them through it.
inline const DLTensor* tensor_at(const xhal_op_call* c, int slot) {
  return slot < int(c->num_tensors) ? c->tensors[slot] : nullptr;
}

// A list op's call (op_table.h XHAL_OP_LISTS): its entries and entry i's tensor of a slot.
struct ListCall {
  const xhal_op_call* call;
  int first, stride;  // the op's XHAL_<OP>_LIST_FIRST and _STRIDE

  int64_t entries() const { return (int64_t(call->num_tensors) - first) / stride; }
  const DLTensor* tensor(int slot, int64_t entry) const { return call->tensors[XHAL_LIST_SLOT(slot, entry, stride)]; }
  // The entry's rank-1 length (its tensor of `slot`).
  int64_t length(int slot, int64_t entry) const { return tensor(slot, entry)->shape[0]; }
};

// Whether the caller asked for bitwise-reproducible results (XHAL_CALL_DETERMINISTIC).
inline bool deterministic(const xhal_op_call* c) {
  return c->struct_size >= offsetof(xhal_op_call, flags) + sizeof c->flags && (c->flags & XHAL_CALL_DETERMINISTIC);
}

// Writes a printf-style message for the core and returns `status`.
inline xhal_status kernel_error(char* msg, size_t len, xhal_status status, const char* format, ...)
    __attribute__((format(printf, 4, 5)));
inline xhal_status kernel_error(char* msg, size_t len, xhal_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(msg, len, format, args);
  va_end(args);
  return status;
}

// Run behind the plugin's C boundary, which no exception may cross: host memory running out is the
// op's out_of_memory, anything else its internal error, each with the exception's message. Every
// kernel a plugin registers goes through it.
template <RunFn Run>
xhal_status guarded(void*, const xhal_op_call* call, char* msg, size_t len) noexcept {
  try {
    return Run(call, msg, len);
  } catch (const std::bad_alloc&) {
    return kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY, "host memory exhausted");
  } catch (const std::exception& e) {
    return kernel_error(msg, len, XHAL_ERR_INTERNAL, "%s", e.what());
  } catch (...) {
    return kernel_error(msg, len, XHAL_ERR_INTERNAL, "an exception of unknown type");
  }
}

inline void register_kernel(const xhal_host_api* host, const char* name, xhal_op op, xhal_dtype dtype,
                            xhal_kernel_run_fn run, Accuracy accuracy, KernelTraits traits) {
  xhal_kernel_desc desc{};
  desc.struct_size = sizeof desc;
  desc.name = name;
  desc.op = op;
  desc.dtype = dtype;
  desc.priority = traits.priority;
  desc.is_reference = traits.is_reference ? 1 : 0;
  desc.rtol = accuracy.rtol;
  desc.atol = accuracy.atol;
  desc.supports = traits.supports;
  desc.run = run;
  char message[256] = "";
  if (host->register_kernel(host->ctx, &desc, message, sizeof message) != XHAL_OK && host->log != nullptr) {
    host->log(host->ctx, XHAL_LOG_WARN, message);
  }
}

// Registers Kernel<E>::run for each element type E (each with E::kDType and E's accuracy class
// from `accuracy_for`) with the same traits.
template <template <class> class Kernel, class... Elements>
void register_for(const xhal_host_api* host, const char* name, xhal_op op, Accuracy (*accuracy_for)(xhal_dtype),
                  KernelTraits traits) {
  (register_kernel(host, name, op, Elements::kDType, &guarded<&Kernel<Elements>::run>, accuracy_for(Elements::kDType),
                   traits),
   ...);
}

// The registration functions of one plugin's kernel files. Each file adds its own with
// XHAL_REGISTER_KERNELS, so a new kernel file is built and registered without editing a list; the
// plugin's init calls register_kernel_files once. (Plugins are built with hidden visibility: each
// has its own list.)
using RegisterFn = void (*)(const xhal_host_api* host);
inline std::vector<RegisterFn>& kernel_files() {
  static std::vector<RegisterFn> files;
  return files;
}
struct KernelFile {
  explicit KernelFile(RegisterFn fn) { kernel_files().push_back(fn); }
};
inline void register_kernel_files(const xhal_host_api* host) {
  for (RegisterFn fn : kernel_files()) fn(host);
}

}  // namespace xhal::kernels

// This file's registration function, run by its plugin's init:
//   XHAL_REGISTER_KERNELS(host) { register_float_kernels<...>(host, ...); }
#define XHAL_REGISTER_KERNELS(host)                                                         \
  static void xhal_register_this_file(const xhal_host_api* host);                           \
  static const ::xhal::kernels::KernelFile xhal_this_kernel_file(&xhal_register_this_file); \
  static void xhal_register_this_file(const xhal_host_api* host)
