// The GPU plugins (backends/gpu, shared by cuda and hip) as this machine sees them: every GPU
// plugin this tree built loads; without a device it reports zero devices with the runtime's reason;
// its collectives engine is the vendor's (NCCL, RCCL), and when that library is missing the engine
// says so, naming the library. XHAL_TEST_GPU_PLUGINS lists the plugins built ("cuda,hip").
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/runtime.hpp"
#include "xhal/comm.hpp"
#include "xhal/xhal.hpp"

namespace xhal {
namespace {

struct GpuPlugin {
  std::string backend;  // "cuda" or "hip"
  std::string runtime;  // the name its reasons use
  std::string engine;  // its collectives engine
  std::string library;  // the engine's library
};

std::vector<GpuPlugin> built_plugins() {
  std::vector<GpuPlugin> built;
  std::istringstream list(XHAL_TEST_GPU_PLUGINS);
  for (std::string name; std::getline(list, name, ',');) {
    if (name == "cuda") built.push_back({"cuda", "CUDA", "nccl", "libnccl.so.2"});
    if (name == "hip") built.push_back({"hip", "HIP", "rccl", "librccl.so.1"});
  }
  return built;
}

const BackendInfo* info_of(const std::string& backend) {
  static const std::vector<BackendInfo> all = DeviceManager::instance().backends();
  for (const BackendInfo& b : all) {
    if (b.name == backend) return &b;
  }
  return nullptr;
}

class GpuPlugins : public ::testing::TestWithParam<GpuPlugin> {};

TEST_P(GpuPlugins, LoadsAndExplainsAMissingDevice) {
  const GpuPlugin& p = GetParam();
  const BackendInfo* info = info_of(p.backend);
  ASSERT_NE(info, nullptr) << "the " << p.backend << " plugin was built but not tried";
  ASSERT_TRUE(info->loaded) << info->reason;
  EXPECT_NE(info->version.find(p.runtime + " runtime"), std::string::npos) << info->version;
  if (info->device_count > 0) GTEST_SKIP() << p.backend << " has " << info->device_count << " device(s) here";
  EXPECT_NE(info->reason.find(p.runtime), std::string::npos) << "reason: " << info->reason;
  // What a framework then sees: a clear error naming the device, never a crash.
  const Device device{Device::parse(p.backend + ":0")};
  EXPECT_FALSE(DeviceManager::instance().has_device(device));
  try {
    comm::Communicator::create(device);
    ADD_FAILURE() << "a communicator on an absent device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::backend_unavailable) << e.what();
    EXPECT_NE(std::string(e.what()).find(device.str()), std::string::npos) << e.what();
  }
}

TEST_P(GpuPlugins, CollectivesEngineNamesItsLibrary) {
  const GpuPlugin& p = GetParam();
  const BackendState* backend = Runtime::get().backend(Device::parse(p.backend + ":0").type);
  ASSERT_NE(backend, nullptr);
  const xhal_comm_api* engine = backend->plugin.api.comm;
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(std::string(engine->engine), p.engine);
  void* present = dlopen(p.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (present != nullptr) {
    dlclose(present);
    GTEST_SKIP() << p.library << " is installed here: the missing-library error cannot be seen";
  }
  unsigned char id[XHAL_COMM_ID_BYTES];
  char msg[512] = {};
  EXPECT_EQ(engine->make_id(engine->self, id, msg, sizeof msg), XHAL_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(msg).find(p.library + " cannot be opened"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(Built, GpuPlugins, ::testing::ValuesIn(built_plugins()),
                         [](const auto& info) { return info.param.backend; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GpuPlugins);

}  // namespace
}  // namespace xhal
