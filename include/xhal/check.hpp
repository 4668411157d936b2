// Shadow check: every op also runs on the CPU backend's reference kernel, from copies of its inputs
// taken before the op, and its outputs are compared with the reference's within the accuracy
// classes registered for the two kernels. For finding which op of a run on a new accelerator
// diverges from the CPU, and where. Slow by design (every call copies its tensors to the host and
// waits for the device); off by default. XHAL_CHECK=cpu and XHAL_CHECK_ACTION=log|throw set the
// same from the environment. docs/debugging.md walks through a use.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "xhal/device.hpp"
#include "xhal/dtype.hpp"
#include "xhal/registry.hpp"

namespace xhal {

enum class CheckMode : uint8_t {
  off,
  cpu,  // compare with the CPU backend's reference kernels
};

enum class CheckAction : uint8_t {
  log,  // a divergence is logged as a warning (the default)
  raise,  // a divergence throws xhal::Error(internal) after the op has written its outputs
};

// One checked call.
struct CheckReport {
  Op op;
  std::string kernel;  // the kernel that ran
  std::string reference_kernel;  // the CPU reference it was compared with
  Device device;
  DType dtype;
  std::string shapes;  // every argument, e.g. "x[4,4096] weight[4096] out[4,4096]"
  std::string output;  // the output with the worst error (e.g. "out", "lse", "residual")
  double max_abs_error = 0, max_rel_error = 0;  // over every output element (rel: where ref != 0)
  double atol = 0, rtol = 0;  // allowed: |got - ref| <= atol + rtol * |ref|
  // The largest |got - ref| / (atol + rtol * |ref|): how close the call came to failing (> 1 fails).
  // Unlike the relative error, not inflated by elements whose reference is near zero.
  double max_allowance_used = 0;
  int64_t bad_elements = 0;  // elements beyond the allowance, over every output
  // The first element beyond the allowance, in row-major order of `first_bad_output`'s shape:
  // its flat index and coordinates, the kernel's value and the reference's. Empty when none.
  std::string first_bad_output;
  int64_t first_bad_index = -1;
  std::vector<int64_t> first_bad_coords;
  double first_bad_got = 0, first_bad_expected = 0;
  bool passed() const { return bad_elements == 0; }
  std::string str() const;
};

// Per op, over the calls checked since the start or the last reset.
struct CheckSummaryRow {
  Op op;
  int64_t calls = 0, failed = 0;
  double worst_abs_error = 0, worst_rel_error = 0, worst_allowance_used = 0;
  std::string worst_kernel;  // the kernel of the call that used most of its allowance
};

void set_check_mode(CheckMode mode);
CheckMode check_mode();
void set_check_action(CheckAction action);
CheckAction check_action();
// Called with every report (passed or not) on the thread that made the call; null removes it.
void set_check_listener(std::function<void(const CheckReport&)> listener);

std::vector<CheckSummaryRow> check_summary();
// The summary as a table (what the process prints at exit when any call was checked).
std::string check_summary_table();
void reset_check_summary();

}  // namespace xhal
