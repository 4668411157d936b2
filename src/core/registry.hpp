// The op registry: one dispatch table indexed by (op, backend, dtype), each entry holding kernels
// sorted by priority. Dispatch reads the table under a shared lock; registration takes it
// exclusively. The public introspection API is in include/xhal/registry.hpp.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "xhal/device.hpp"
#include "xhal/plugin.h"
#include "xhal/registry.hpp"

namespace xhal {

// Owned by the Runtime (Runtime::get().registry()); the plugins reach it through their host
// context.
class Registry {
 public:
  Registry();

  int64_t add(DeviceType backend, const xhal_kernel_desc& desc);
  void remove(int64_t handle);
  std::vector<registry::KernelInfo> list() const;

  // What a dispatch ran (for the shadow check and the trace; filled only when asked for).
  struct Ran {
    std::string kernel;  // empty when nothing ran (explain mode)
    bool is_reference = false;
    double rtol = 0, atol = 0;
  };

  // Picks the kernel for `call` on `backend` and runs it (or, in explain mode, records the choice).
  // Throws Error(unsupported) when no kernel supports the call, naming what exists.
  void dispatch(DeviceType backend, const xhal_op_call& call, Ran* ran = nullptr);
  // Runs `backend`'s reference kernel for the call's op and dtype, whatever the priorities and
  // the XHAL_DISABLE_KERNELS/XHAL_FORCE_REFERENCE settings. Throws Error(unsupported) when there is
  // none.
  void run_reference(DeviceType backend, const xhal_op_call& call, Ran* ran);

  void set_strict(bool strict) { strict_ = strict; }
  void set_deterministic(bool deterministic) { deterministic_ = deterministic; }
  bool deterministic() const { return deterministic_; }
  void set_force_reference(const std::vector<Op>& ops);
  void set_disabled_kernels(const std::vector<std::string>& names);

 private:
  struct Impl {
    int64_t handle;
    std::string name;
    xhal_kernel_desc desc;  // desc.name points at `name`
    bool disabled = false;  // named in XHAL_DISABLE_KERNELS
  };
  static size_t slot(Op op, DeviceType backend, DType dtype);
  // Why `impl` is refused for `call`, or nullptr when it may run; `refused_better` records that a
  // higher-priority kernel refused (which XHAL_STRICT turns into a refusal of the rest).
  const char* refusal(const Impl& impl, const xhal_op_call& call, bool reference_only, bool* refused_better) const;
  std::shared_ptr<const Impl> pick(DeviceType backend, const xhal_op_call& call) const;
  registry::Explanation explain_choice(DeviceType backend, const xhal_op_call& call) const;
  static void run_kernel(const xhal_kernel_desc& kernel, const xhal_op_call& call, Ran* ran);

  mutable std::shared_mutex mutex_;
  std::array<std::vector<std::shared_ptr<Impl>>, kNumOps * kMaxBackends * kNumKernelDTypes> table_;
  int64_t next_handle_ = 1;
  std::atomic<bool> strict_{false};
  std::atomic<bool> deterministic_{false};
  std::array<bool, kNumOps> force_reference_{};
  std::vector<std::string> disabled_;
};

}  // namespace xhal
