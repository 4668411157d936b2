// xhal_conformance's entry point. `--backend NAME` (repeatable, or comma-separated) runs the suite
// on those backends instead of cpu, cuda, hip and ze: a new plugin, found through XHAL_PLUGIN_PATH,
// shows red or green op by op. After the tests, a table gives each op's result per backend and dtype.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "op_summary.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> names;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--backend" && i + 1 < argc) {
      arg = "--backend=" + std::string(argv[++i]);
    }
    if (arg.rfind("--backend=", 0) == 0) {
      std::string list = arg.substr(std::strlen("--backend="));
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) names.push_back(list.substr(start, comma - start));
        start = comma + 1;
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (!names.empty()) {
    std::vector<xhal::DeviceType> backends;
    for (const std::string& name : names) {
      try {
        backends.push_back(xhal::Device::parse(name).type);
      } catch (const xhal::Error& e) {
        std::fprintf(stderr, "xhal_conformance: --backend %s: %s\n", name.c_str(), e.what());
        return 2;
      }
    }
    xhal::test::set_conformance_backends(backends);
  }
  int count = int(rest.size());
  rest.push_back(nullptr);  // argv[argc]: GoogleTest moves it down as it removes its flags
  ::testing::InitGoogleTest(&count, rest.data());
  ::testing::UnitTest::GetInstance()->listeners().Append(new xhal::test::OpSummary());
  return RUN_ALL_TESTS();
}
