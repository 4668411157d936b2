// Introspection of the op registry: the one dispatch table keyed by (op, backend, dtype). Each key
// holds kernels with a name, a priority and a supports() predicate; dispatch takes the
// highest-priority kernel that supports the call. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "xhal/device.hpp"
#include "xhal/dtype.hpp"
#include "xhal/plugin.h"

namespace xhal {

// Every op of the op table (xhal/op_table.h), with the same codes.
#define XHAL_CPP_OP_ROW(NAME, name, params) name = XHAL_OP_##NAME,
enum class Op : uint16_t { XHAL_OPS(XHAL_CPP_OP_ROW) };
#undef XHAL_CPP_OP_ROW
inline constexpr int kNumOps = XHAL_OP_COUNT;

std::string_view op_name(Op op);
// Throws Error(invalid_argument) listing the op names.
Op op_from_name(std::string_view name);

namespace registry {

struct KernelInfo {
  Op op;
  DeviceType backend;
  DType dtype;
  std::string name;
  int priority = 0;
  bool is_reference = false;
  double rtol = 0, atol = 0;  // accuracy class vs float64
};

struct Candidate {
  std::string kernel;
  int priority = 0;
  bool taken = false;
  std::string reason;  // why it was refused (empty when taken)
};

struct Explanation {
  Op op;
  DeviceType backend;
  DType dtype;
  std::vector<Candidate> candidates;  // in the order considered (highest priority first)
  std::string error;  // the Error the call would throw, if any
  std::string str() const;
};

std::vector<KernelInfo> list_kernels();

// Runs `call` (a call of one op) in explain mode: arguments are validated and a kernel is chosen,
// but nothing runs. Returns the choice for the first op the callable invokes.
Explanation explain(const std::function<void()>& call);

// Registers a kernel for `backend` (as a plugin would). Returns a handle for unregister_kernel.
int64_t register_kernel(DeviceType backend, const xhal_kernel_desc& desc);
void unregister_kernel(int64_t handle);

// Overrides of XHAL_STRICT, XHAL_DETERMINISTIC, XHAL_FORCE_REFERENCE and XHAL_DISABLE_KERNELS for
// this process. Disabled kernels are never picked (explain() says so); the names apply to kernels
// registered later too, and a name no kernel has changes nothing.
void set_strict(bool strict);
// Deterministic mode: every op then gives bitwise-identical results run to run on the same device
// and inputs; a kernel that cannot (atomics, a timing-dependent split) refuses the call, so the
// next kernel runs, or Error(unsupported) says why none can.
void set_deterministic(bool deterministic);
bool deterministic();
void set_force_reference(const std::vector<Op>& ops);
void set_disabled_kernels(const std::vector<std::string>& names);

}  // namespace registry
}  // namespace xhal
