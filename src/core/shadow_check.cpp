#include "core/shadow_check.hpp"

#include <cstdio>
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

#include "core/env.hpp"
#include "core/instrumentation.hpp"
#include "core/logging.hpp"
#include "core/op_table.hpp"
#include "core/registry.hpp"
#include "core/runtime.hpp"
#include "core/text_format.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/error.hpp"
#include "xhal/fp8.hpp"
#include "xhal/half.hpp"
#include "xhal/tensor.hpp"
#include "xhal/tensor_view.hpp"

namespace xhal {
namespace {

std::atomic<CheckAction> g_action{CheckAction::log};

// The process-wide summary and listener.
struct Book {
  std::mutex mutex;
  std::array<CheckSummaryRow, kNumOps> rows{};
  std::function<void(const CheckReport&)> listener;
  bool print_at_exit = false;
};
Book& book() {
  static Book* b = new Book;  // never destroyed: the exit handler reads it
  return *b;
}

void print_summary_at_exit() {
  const std::string table = check_summary_table();
  if (!table.empty()) std::fputs(table.c_str(), stderr);
}

void record(const CheckReport& report) {
  Book& b = book();
  std::function<void(const CheckReport&)> listener;
  {
    std::lock_guard lock(b.mutex);
    CheckSummaryRow& row = b.rows[size_t(report.op)];
    row.op = report.op;
    ++row.calls;
    if (!report.passed()) ++row.failed;
    if (row.calls == 1 || report.max_allowance_used > row.worst_allowance_used) {
      row.worst_allowance_used = report.max_allowance_used;
      row.worst_kernel = report.kernel;
    }
    row.worst_abs_error = std::max(row.worst_abs_error, report.max_abs_error);
    row.worst_rel_error = std::max(row.worst_rel_error, report.max_rel_error);
    if (!b.print_at_exit) {
      b.print_at_exit = true;
      std::atexit(print_summary_at_exit);
    }
    listener = b.listener;
  }
  if (listener) listener(report);
}

// A tensor of the call copied to the host with its layout: the span of memory its elements cover
// (strides kept), and a DLTensor over the copy for the CPU reference.
struct HostTensor {
  TensorView device_view;
  std::vector<std::byte> bytes;
  DLTensor dl{};

  // Elements from the first to the last one the view addresses (strides are not negative: the
  // ops' argument checks accept no others).
  static int64_t extent(const TensorView& v) {
    if (v.numel() == 0) return 0;
    int64_t last = 0;
    for (int d = 0; d < v.ndim(); ++d) last += (v.size(d) - 1) * v.stride(d);
    return last + 1;
  }

  // Copies the device memory behind the view into `bytes` (the device must be idle).
  void fetch() {
    const int64_t n = extent(device_view);
    bytes.resize(size_t(n) * dtype_size(device_view.dtype()));
    if (n == 0) return;
    if (device_view.device().type == DeviceType::cpu) {
      std::memcpy(bytes.data(), device_view.data(), bytes.size());
    } else {
      copy(TensorView(bytes.data(), device_view.dtype(), {n}),
           TensorView(device_view.data(), device_view.dtype(), {n}, device_view.device()));
    }
  }

  static HostTensor snapshot(const DLTensor& original) {
    HostTensor h;
    h.device_view = TensorView::from_dlpack(original);
    h.fetch();
    h.dl = original;  // shape and strides: the call's own arrays, alive until the call returns
    h.dl.data = h.bytes.data();
    h.dl.byte_offset = 0;
    h.dl.device = {kDLCPU, 0};
    return h;
  }

  double value(int64_t offset) const {
    const std::byte* p = bytes.data() + size_t(offset) * dtype_size(device_view.dtype());
    switch (device_view.dtype()) {
      case DType::f32: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case DType::f16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return f16_to_float(v);
      }
      case DType::bf16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return bf16_to_float(v);
      }
      case DType::i32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case DType::i64: {
        int64_t v;
        std::memcpy(&v, p, 8);
        return double(v);
      }
      case DType::f64: {
        double v;
        std::memcpy(&v, p, 8);
        return v;
      }
      case DType::f8_e4m3: return f8_e4m3_to_float(uint8_t(*p));
      case DType::f8_e5m2: return f8_e5m2_to_float(uint8_t(*p));
      case DType::i8: return double(int8_t(*p));
    }
    return 0;
  }
};

// Compares `got` with `expected` (the same view's copies) element by element in row-major order,
// folding the result into `report`.
void compare_output(std::string_view name, const HostTensor& got, const HostTensor& expected, CheckReport& report) {
  const TensorView& v = got.device_view;
  const int ndim = v.ndim();
  std::vector<int64_t> index(size_t(ndim), 0);
  const int64_t numel = v.numel();
  for (int64_t flat = 0; flat < numel; ++flat) {
    int64_t offset = 0;
    for (int d = 0; d < ndim; ++d) offset += index[size_t(d)] * v.stride(d);
    const double g = got.value(offset), e = expected.value(offset);
    // Equal values (infinities of one sign included) and two NaNs agree; one NaN does not.
    const bool agree_exactly = g == e || (std::isnan(g) && std::isnan(e));
    const double abs_error = agree_exactly                    ? 0.0
                             : std::isnan(g) || std::isnan(e) ? std::numeric_limits<double>::infinity()
                                                              : std::abs(g - e);
    if (abs_error > report.max_abs_error) {
      report.max_abs_error = abs_error;
      report.output = name;
    }
    if (e != 0 && std::isfinite(e)) report.max_rel_error = std::max(report.max_rel_error, abs_error / std::abs(e));
    const double allowance = report.atol + report.rtol * (std::isfinite(e) ? std::abs(e) : 0.0);
    report.max_allowance_used =
        std::max(report.max_allowance_used, abs_error == 0  ? 0.0
                                            : allowance > 0 ? abs_error / allowance
                                                            : std::numeric_limits<double>::infinity());
    if (!(abs_error <= allowance)) {
      if (report.bad_elements++ == 0) {
        report.first_bad_output = name;
        report.first_bad_index = flat;
        report.first_bad_coords = index;
        report.first_bad_got = g, report.first_bad_expected = e;
      }
    }
    for (int d = ndim - 1; d >= 0; --d) {  // next row-major index
      if (++index[size_t(d)] < v.size(d)) break;
      index[size_t(d)] = 0;
    }
  }
}

}  // namespace

void read_check_env() {
  static std::once_flag once;
  std::call_once(once, [] {  // an exception (a bad value) leaves it unread, to throw again
    const CheckMode mode =
        env::choice(env::Var::check, {{"off", CheckMode::off}, {"cpu", CheckMode::cpu}}, CheckMode::off);
    const CheckAction action = env::choice(
        env::Var::check_action, {{"log", CheckAction::log}, {"throw", CheckAction::raise}}, CheckAction::log);
    g_action.store(action);
    instrumentation::set(instrumentation::kCheck, mode != CheckMode::off);
  });
}

void run_checked(const xhal_op_call& call, Device device, const std::function<void(Registry::Ran*)>& dispatch) {
  const Op op = Op(call.op);
  DeviceManager& dm = DeviceManager::instance();
  const BackendState* cpu = Runtime::get().backend(DeviceType::cpu);
  dm.synchronize(device);  // the inputs' producers have finished
  std::vector<std::optional<HostTensor>> expected(call.num_tensors);
  for (uint32_t s = 0; s < call.num_tensors; ++s) {
    if (call.tensors[s] != nullptr) expected[s] = HostTensor::snapshot(*call.tensors[s]);
  }

  Registry::Ran ran;
  dispatch(&ran);
  // Nothing ran (explain mode), or the CPU's reference kernel itself ran: nothing to compare.
  if (ran.kernel.empty() || (device.type == DeviceType::cpu && ran.is_reference) || cpu == nullptr) return;

  dm.synchronize(device);
  xhal_op_call reference = call;
  reference.device = 0;
  reference.stream = nullptr;
  reference.host = &cpu->plugin.context->host;
  std::vector<const DLTensor*> reference_tensors(call.num_tensors);
  for (uint32_t s = 0; s < call.num_tensors; ++s) {
    if (expected[s]) reference_tensors[s] = &expected[s]->dl;
  }
  reference.tensors = reference_tensors.data();
  Registry::Ran ref_ran;
  try {
    Runtime::get().registry().run_reference(DeviceType::cpu, reference, &ref_ran);
  } catch (const Error& e) {
    log(LogLevel::warn, "shadow check of {} (kernel {}) skipped: the CPU reference failed: {}", op_name(op), ran.kernel,
        e.what());
    return;
  }

  CheckReport report;
  report.op = op, report.kernel = ran.kernel, report.reference_kernel = ref_ran.kernel;
  report.device = device, report.dtype = DType(call.dtype), report.shapes = describe_shapes(call);
  report.atol = ran.atol + ref_ran.atol;
  report.rtol = ran.rtol + ref_ran.rtol;
  for (uint32_t i = 0; i < call.num_tensors; ++i) {
    if (call.tensors[i] == nullptr || !call_tensor(op, i).slot->written()) continue;
    HostTensor got;
    got.device_view = TensorView::from_dlpack(*call.tensors[i]);
    got.fetch();
    compare_output(call_tensor_name(call, i), got, *expected[i], report);
  }
  record(report);
  if (report.passed()) {
    log(LogLevel::debug, "shadow check: {}", report.str());
    return;
  }
  if (g_action.load() == CheckAction::raise) throw Error(Errc::internal, "shadow check: " + report.str());
  log(LogLevel::warn, "shadow check: {}", report.str());
}

std::string CheckReport::str() const {
  std::string s = format_text(
      "{} on {} ({}), kernel {} vs {}: {}; max abs error {:.3g}, max rel error {:.3g}, "
      "{:.2f} of the allowance used",
      op_name(op), device.str(), dtype_name(dtype), kernel, reference_kernel, shapes, max_abs_error, max_rel_error,
      max_allowance_used);
  if (!output.empty()) s += format_text(" (in {})", output);
  if (passed()) return s + format_text("; within atol {:.3g} + rtol {:.3g}", atol, rtol);
  return s + format_text(
                 "; DIVERGES: {} elements beyond atol {:.3g} + rtol {:.3g}, first {}[{}] (flat index {}): "
                 "got {:.7g}, reference {:.7g}",
                 bad_elements, atol, rtol, first_bad_output, join_text(first_bad_coords, ","), first_bad_index,
                 first_bad_got, first_bad_expected);
}

void set_check_mode(CheckMode mode) {
  read_check_env();
  instrumentation::set(instrumentation::kCheck, mode != CheckMode::off);
}
CheckMode check_mode() {
  read_check_env();
  return instrumentation::g_flags.load() & instrumentation::kCheck ? CheckMode::cpu : CheckMode::off;
}
void set_check_action(CheckAction action) {
  read_check_env();
  g_action.store(action);
}
CheckAction check_action() {
  read_check_env();
  return g_action.load();
}

void set_check_listener(std::function<void(const CheckReport&)> listener) {
  std::lock_guard lock(book().mutex);
  book().listener = std::move(listener);
}

std::vector<CheckSummaryRow> check_summary() {
  std::lock_guard lock(book().mutex);
  std::vector<CheckSummaryRow> rows;
  for (const CheckSummaryRow& row : book().rows) {
    if (row.calls > 0) rows.push_back(row);
  }
  return rows;
}

std::string check_summary_table() {
  const std::vector<CheckSummaryRow> rows = check_summary();
  if (rows.empty()) return {};
  std::string out = format_text(
      "xhal shadow check (XHAL_CHECK=cpu): {} ops checked\n{:<20} {:>8} {:>8} {:>12} {:>12} {:>10}  {}\n", rows.size(),
      "op", "calls", "failed", "worst abs", "worst rel", "allowance", "kernel (most of its allowance used)");
  for (const CheckSummaryRow& r : rows) {
    out += format_text("{:<20} {:>8} {:>8} {:>12.3g} {:>12.3g} {:>10.2f}  {}\n", op_name(r.op), r.calls, r.failed,
                       r.worst_abs_error, r.worst_rel_error, r.worst_allowance_used, r.worst_kernel);
  }
  return out;
}

void reset_check_summary() {
  std::lock_guard lock(book().mutex);
  book().rows = {};
}

}  // namespace xhal
