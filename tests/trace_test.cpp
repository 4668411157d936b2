// The op trace (include/xhal/trace.hpp): one Chrome/Perfetto complete event per op call, with the
// kernel, backend, device, dtype, shapes and bytes; nothing after stop_trace(); a file that cannot
// be created is an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Trace, WritesOneEventPerOpCall) {
  const std::string path = (std::filesystem::temp_directory_path() / "xhal_trace_test.json").string();
  Tensor x = Tensor::empty({3, 40}, DType::f32, Device::cpu()), w = Tensor::empty({40}, DType::f32, Device::cpu());
  const Tensor out = Tensor::empty({3, 40}, DType::f32, Device::cpu());
  std::vector<float> ones(120, 1.0f);
  x.copy_from_host(ones.data());
  w.copy_from_host(ones.data());
  start_trace(path);
  EXPECT_TRUE(tracing());
  ops::rms_norm(x, w, 1e-6f, out);
  ops::rms_norm(x, w, 1e-6f, out);
  ops::swiglu(x, x, out);
  stop_trace();
  EXPECT_FALSE(tracing());
  ops::rms_norm(x, w, 1e-6f, out);  // not traced

  const std::vector<std::string> lines = lines_of(path);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines.front(), "[");
  EXPECT_EQ(lines.back(), "]");
  std::vector<std::string> ops_seen;
  for (const std::string& line : lines) {
    if (line.find(R"("cat":"op")") == std::string::npos) continue;
    const size_t name = line.find(R"("name":")") + 8;
    ops_seen.push_back(line.substr(name, line.find('"', name) - name));
    EXPECT_NE(line.find(R"("ph":"X")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("backend":"cpu")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("dtype":"f32")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("kernel":"cpu.)"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("dur":)"), std::string::npos) << line;
  }
  EXPECT_EQ(ops_seen, (std::vector<std::string>{"rms_norm", "rms_norm", "swiglu"}));
  const auto rms = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find(R"("name":"rms_norm")") != std::string::npos;
  });
  ASSERT_NE(rms, lines.end());
  EXPECT_NE(rms->find(R"("shapes":"x[3,40] weight[40] out[3,40]")"), std::string::npos) << *rms;
  EXPECT_NE(rms->find(R"("bytes":1120)"), std::string::npos) << *rms;  // (120 + 40 + 120) * 4
  std::filesystem::remove(path);
}

TEST(Trace, UncreatableFileIsAnError) {
  try {
    start_trace("/nonexistent-directory/trace.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-directory/trace.json"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(tracing());
}

}  // namespace
}  // namespace xhal
