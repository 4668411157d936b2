// The public registry functions of xhal/registry.hpp, on the runtime's registry.
#include "core/registry.hpp"
#include "core/runtime.hpp"

namespace xhal::registry {

std::vector<KernelInfo> list_kernels() { return Runtime::get().registry().list(); }

int64_t register_kernel(DeviceType backend, const xhal_kernel_desc& desc) {
  return Runtime::get().registry().add(backend, desc);
}
void unregister_kernel(int64_t handle) { Runtime::get().registry().remove(handle); }
void set_strict(bool strict) { Runtime::get().registry().set_strict(strict); }
void set_deterministic(bool deterministic) { Runtime::get().registry().set_deterministic(deterministic); }
bool deterministic() { return Runtime::get().registry().deterministic(); }
void set_force_reference(const std::vector<Op>& ops) { Runtime::get().registry().set_force_reference(ops); }
void set_disabled_kernels(const std::vector<std::string>& names) {
  Runtime::get().registry().set_disabled_kernels(names);
}

}  // namespace xhal::registry
