#include "op_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "xhal/registry.hpp"

namespace xhal::test {
namespace {

// rms_norm -> RmsNorm
std::string camel_case(std::string_view name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
    } else {
      out += upper ? char(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
  }
  return out;
}

// The op a test of the suite covers, by the longest op name its own name starts with.
std::string op_of(std::string_view test) {
  std::string best = "(several ops)";
  size_t best_length = 0;
  for (int op = 0; op < kNumOps; ++op) {
    const std::string camel = camel_case(op_name(Op(op)));
    if (test.substr(0, camel.size()) == camel && camel.size() > best_length) {
      best = std::string(op_name(Op(op)));
      best_length = camel.size();
    }
  }
  return best;
}

int rank(const std::string& result) {
  return result == "FAIL" ? 3 : result == "unsupported" ? 2 : result == "pass" ? 1 : 0;
}

}  // namespace

void OpSummary::OnTestEnd(const ::testing::TestInfo& info) {
  if (info.value_param() == nullptr) return;
  const std::string name = info.name();  // "RmsNorm/cpu_f32"
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return;
  const std::string column = name.substr(slash + 1);
  const ::testing::TestResult& result = *info.result();
  std::string outcome = "pass";
  if (result.Skipped()) {
    outcome = "skipped";
  } else if (result.Failed()) {
    outcome = "FAIL";
    bool all_unsupported = result.total_part_count() > 0;
    for (int i = 0; i < result.total_part_count(); ++i) {
      const auto& part = result.GetTestPartResult(i);
      if (part.failed() && std::string(part.message()).find("unsupported on ") == std::string::npos) {
        all_unsupported = false;
      }
    }
    if (all_unsupported) outcome = "unsupported";
  }
  columns_.emplace(column, int(columns_.size()));
  std::string& cell = cells_[op_of(name.substr(0, slash))][column];
  if (rank(outcome) > rank(cell)) cell = outcome;
}

void OpSummary::OnTestProgramEnd(const ::testing::UnitTest&) {
  if (cells_.empty()) return;
  std::vector<std::string> columns(columns_.size());
  for (const auto& [column, order] : columns_) columns[size_t(order)] = column;
  std::printf("\nconformance, op by op:\n%-24s", "op");
  for (const std::string& c : columns) std::printf(" %-13s", c.c_str());
  std::printf("\n");
  for (const auto& [op, row] : cells_) {
    std::printf("%-24s", op.c_str());
    for (const std::string& c : columns) {
      const auto it = row.find(c);
      std::printf(" %-13s", it == row.end() ? "-" : it->second.c_str());
    }
    std::printf("\n");
  }
}

}  // namespace xhal::test
