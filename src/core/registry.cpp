#include "core/registry.hpp"

#include <algorithm>
#include <array>
#include <mutex>

#include "core/env.hpp"
#include "core/env_warnings.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal {
namespace {

// Set while registry::explain() runs its callable on this thread.
thread_local registry::Explanation* t_explaining = nullptr;

}  // namespace

Registry::Registry() {
  strict_ = env::or_warn(env::Var::strict, env::flag, std::optional<bool>()).value_or(false);
  deterministic_ = env::or_warn(env::Var::deterministic, env::flag, std::optional<bool>()).value_or(false);
  std::vector<Op> ops;
  std::vector<std::string> unknown;
  std::vector<std::string_view> names;
  for (int op = 0; op < kNumOps; ++op) names.push_back(op_name(Op(op)));
  for (const auto& name : env::list(env::Var::force_reference)) {
    const auto op = std::find(names.begin(), names.end(), name);
    if (op == names.end())
      unknown.push_back(name);
    else
      ops.push_back(Op(op - names.begin()));
  }
  if (!unknown.empty()) {
    env::warn_bad_value(env::Var::force_reference, format_text("XHAL_FORCE_REFERENCE names no op '{}'; ops are: {}",
                                                               join_text(unknown, "', '"), join_text(names, ", ")));
  }
  set_force_reference(ops);
  set_disabled_kernels(env::list(env::Var::disable_kernels));
}

size_t Registry::slot(Op op, DeviceType backend, DType dtype) {
  return (static_cast<size_t>(op) * kMaxBackends + static_cast<size_t>(backend)) * kNumKernelDTypes +
         static_cast<size_t>(kernel_dtype_index(int(dtype)));
}

int64_t Registry::add(DeviceType backend, const xhal_kernel_desc& desc) {
  if (desc.op < 0 || desc.op >= XHAL_OP_COUNT || kernel_dtype_index(desc.dtype) < 0 || desc.run == nullptr ||
      desc.name == nullptr) {
    throw Error(Errc::invalid_argument,
                format_text("register_kernel: kernel '{}' has an unknown op or dtype or no run()",
                            desc.name ? desc.name : "(unnamed)"));
  }
  std::unique_lock lock(mutex_);
  auto impl = std::make_shared<Impl>(Impl{next_handle_++, desc.name, desc});
  impl->desc.name = impl->name.c_str();
  impl->disabled = std::find(disabled_.begin(), disabled_.end(), impl->name) != disabled_.end();
  auto& list = table_[slot(Op(desc.op), backend, DType(desc.dtype))];
  list.push_back(impl);
  std::stable_sort(list.begin(), list.end(),
                   [](const auto& a, const auto& b) { return a->desc.priority > b->desc.priority; });
  return impl->handle;
}

void Registry::remove(int64_t handle) {
  std::unique_lock lock(mutex_);
  for (auto& list : table_) {
    std::erase_if(list, [&](const auto& impl) { return impl->handle == handle; });
  }
}

std::vector<registry::KernelInfo> Registry::list() const {
  std::shared_lock lock(mutex_);
  std::vector<registry::KernelInfo> out;
  for (const auto& list : table_) {
    for (const auto& impl : list) {
      const auto& d = impl->desc;
      size_t index = &list - table_.data();
      auto backend = DeviceType(index / kNumKernelDTypes % kMaxBackends);
      out.push_back({Op(d.op), backend, DType(d.dtype), impl->name, d.priority, d.is_reference != 0, d.rtol, d.atol});
    }
  }
  return out;
}

void Registry::set_force_reference(const std::vector<Op>& ops) {
  std::unique_lock lock(mutex_);
  force_reference_.fill(false);
  for (Op op : ops) force_reference_[static_cast<size_t>(op)] = true;
}

void Registry::set_disabled_kernels(const std::vector<std::string>& names) {
  std::unique_lock lock(mutex_);
  disabled_ = names;
  for (auto& list : table_) {
    for (auto& impl : list) {
      impl->disabled = std::find(names.begin(), names.end(), impl->name) != names.end();
    }
  }
}

const char* Registry::refusal(const Impl& impl, const xhal_op_call& call, bool reference_only,
                              bool* refused_better) const {
  if (impl.disabled) return "disabled by XHAL_DISABLE_KERNELS";  // the user's choice: not a fallback
  if (reference_only && !impl.desc.is_reference) return "not the reference kernel (XHAL_FORCE_REFERENCE)";
  if (const char* why = impl.desc.supports ? impl.desc.supports(impl.desc.ctx, &call) : nullptr) {
    *refused_better = true;
    return why;
  }
  if (*refused_better && strict_) return "would be a fallback, refused by XHAL_STRICT";
  return nullptr;
}

std::shared_ptr<const Registry::Impl> Registry::pick(DeviceType backend, const xhal_op_call& call) const {
  const bool reference_only = force_reference_[size_t(call.op)];
  bool refused_better = false;
  for (const auto& impl : table_[slot(Op(call.op), backend, DType(call.dtype))]) {
    if (refusal(*impl, call, reference_only, &refused_better) == nullptr) return impl;
  }
  return nullptr;
}

registry::Explanation Registry::explain_choice(DeviceType backend, const xhal_op_call& call) const {
  const Op op = Op(call.op);
  registry::Explanation ex{op, backend, DType(call.dtype), {}, {}};
  const bool reference_only = force_reference_[static_cast<size_t>(op)];
  bool refused_better = false, taken = false;
  for (const auto& impl : table_[slot(op, backend, DType(call.dtype))]) {
    registry::Candidate c{impl->name, impl->desc.priority, false, {}};
    if (taken) {
      c.reason = "a higher-priority kernel was taken";
    } else if (const char* why = refusal(*impl, call, reference_only, &refused_better)) {
      c.reason = why;
    } else {
      c.taken = taken = true;
    }
    ex.candidates.push_back(std::move(c));
  }
  if (!taken) {
    std::string tried;
    for (const auto& c : ex.candidates) tried += format_text("; {} ({})", c.kernel, c.reason);
    // Name what exists for this op on this backend, or, when it has none, the ops it has.
    std::vector<std::string_view> dtypes, ops;
    for (DType d : kKernelDTypes) {
      if (!table_[slot(op, backend, d)].empty()) dtypes.push_back(dtype_name(d));
    }
    for (int o = 0; o < kNumOps; ++o) {
      for (DType d : kKernelDTypes) {
        if (!table_[slot(Op(o), backend, d)].empty()) {
          ops.push_back(op_name(Op(o)));
          break;
        }
      }
    }
    const std::string_view name = device_type_name(backend);
    ex.error = dtypes.empty()
                   ? format_text("xhal::ops::{}: unsupported on {}: it has no {} kernel; its ops: [{}]", op_name(op),
                                 name, op_name(op), join_text(ops, ", "))
                   : format_text(
                         "xhal::ops::{}: unsupported on {}: no kernel supports this call with dtype "
                         "{}{}; {} has {} kernels for dtypes [{}]",
                         op_name(op), name, dtype_name(DType(call.dtype)),
                         tried.empty() ? "" : ": tried" + tried.substr(1), name, op_name(op), join_text(dtypes, ", "));
  }
  return ex;
}

void Registry::dispatch(DeviceType backend, const xhal_op_call& call, Ran* ran) {
  // The common path picks a kernel without building an explanation (no strings, no allocation);
  // the explanation is built only for explain() or for the error when nothing supports the call.
  // The kernel is held by reference count, not pointer: unregister_kernel may remove it from the
  // table while it runs (the lock is not held during the run).
  std::shared_ptr<const Impl> kernel;
  if (t_explaining == nullptr) {
    std::shared_lock lock(mutex_);
    kernel = pick(backend, call);
  }
  if (kernel == nullptr) {
    registry::Explanation ex;
    {
      std::shared_lock lock(mutex_);
      ex = explain_choice(backend, call);
    }
    if (t_explaining == nullptr) throw Error(Errc::unsupported, ex.error);
    *t_explaining = std::move(ex);
    t_explaining = nullptr;  // only the first op is explained; later ones are skipped
    return;
  }
  run_kernel(kernel->desc, call, ran);
}

void Registry::run_reference(DeviceType backend, const xhal_op_call& call, Ran* ran) {
  std::shared_ptr<const Impl> kernel;
  {
    std::shared_lock lock(mutex_);
    for (const auto& impl : table_[slot(Op(call.op), backend, DType(call.dtype))]) {
      if (impl->desc.is_reference) {
        kernel = impl;
        break;
      }
    }
  }
  if (kernel == nullptr) {
    throw Error(Errc::unsupported,
                format_text("xhal::ops::{}: {} has no reference kernel for dtype {}", op_name(Op(call.op)),
                            device_type_name(backend), dtype_name(DType(call.dtype))));
  }
  run_kernel(kernel->desc, call, ran);
}

void Registry::run_kernel(const xhal_kernel_desc& kernel, const xhal_op_call& call, Ran* ran) {
  if (ran != nullptr) *ran = {kernel.name, kernel.is_reference != 0, kernel.rtol, kernel.atol};
  char message[512] = {};
  xhal_status status = XHAL_OK;
  std::string thrown;
  try {
    status = kernel.run(kernel.ctx, &call, message, sizeof message);
  } catch (const Error&) {
    throw;  // a kernel registered in-process through registry::register_kernel
  } catch (const std::exception& e) {
    // A C++ plugin's exception must not unwind into the caller as something other than an
    // xhal::Error (the kernel broke the C ABI's contract, but the caller still gets an answer).
    status = XHAL_ERR_INTERNAL;
    thrown = format_text("threw {}", e.what());
  } catch (...) {
    status = XHAL_ERR_INTERNAL;
    thrown = "threw an exception of unknown type";
  }
  if (status != XHAL_OK) {
    message[sizeof message - 1] = '\0';
    throw_status(status, format_text("xhal::ops::{}: kernel {} failed: {} (the op's outputs are "
                                     "undefined; its inputs are unchanged unless it updates them "
                                     "in place)",
                                     op_name(Op(call.op)), kernel.name,
                                     !thrown.empty() ? thrown.c_str()
                                     : message[0]    ? message
                                                     : "no message"));
  }
}

namespace registry {

std::string Explanation::str() const {
  std::string out = format_text("{} on {} ({}):", op_name(op), device_type_name(backend), dtype_name(dtype));
  if (candidates.empty()) out += " no kernels registered";
  for (const auto& c : candidates) {
    out += format_text("\n  {} {} (priority {}){}{}", c.taken ? "[taken]  " : "[refused]", c.kernel, c.priority,
                       c.reason.empty() ? "" : ": ", c.reason);
  }
  if (!error.empty()) out += "\n  error: " + error;
  return out;
}

Explanation explain(const std::function<void()>& call) {
  Explanation ex{};
  t_explaining = &ex;
  struct Reset {
    ~Reset() { t_explaining = nullptr; }
  } reset;
  try {
    call();
  } catch (const Error& e) {
    if (ex.candidates.empty() && ex.error.empty()) ex.error = e.what();
  }
  if (t_explaining != nullptr && ex.error.empty()) {
    ex.error = "the callable invoked no xhal op";
  }
  return ex;
}

}  // namespace registry
}  // namespace xhal
