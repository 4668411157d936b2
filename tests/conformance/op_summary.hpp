// A GoogleTest listener that prints, after the conformance suite, one row per op of the op table
// and one column per (backend, dtype): pass, FAIL, unsupported (the backend has no kernel for it)
// or skipped. A test belongs to the op whose CamelCase name is its longest prefix.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace xhal::test {

class OpSummary : public ::testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const ::testing::TestInfo& info) override;
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override;

 private:
  // cells_[op][column]: the worst result seen (FAIL > unsupported > pass > skipped).
  std::map<std::string, std::map<std::string, std::string>> cells_;
  std::map<std::string, int> columns_;  // column -> order of first appearance
};

}  // namespace xhal::test
