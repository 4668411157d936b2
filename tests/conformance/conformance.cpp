#include "conformance.hpp"

#include <fmt/format.h>

namespace xhal::test {

std::string backend_status(DeviceType type) {
  auto& manager = DeviceManager::instance();
  if (manager.has_device({type, 0})) return "";
  for (const auto& b : manager.backends()) {
    if (b.name == device_type_name(type)) return b.reason.empty() ? "no device" : b.reason;
  }
  return fmt::format("no libxhal_{}.so plugin in this build", device_type_name(type));
}

void Conformance::SetUp() {
  const DeviceType type = std::get<0>(GetParam());
  if (std::string why = backend_status(type); !why.empty()) {
    GTEST_SKIP() << "backend " << device_type_name(type) << " skipped: " << why;
  }
  device_ = {type, 0};
  seed_ = fresh_seed();
  rng_.seed(seed_);
  ::testing::Test::RecordProperty("seed", std::to_string(seed_));
  std::printf("[   SEED   ] %llu\n", static_cast<unsigned long long>(seed_));
}

std::string param_name(const ::testing::TestParamInfo<Conformance::ParamType>& info) {
  return fmt::format("{}_{}", device_type_name(std::get<0>(info.param)), dtype_name(std::get<1>(info.param)));
}

namespace {
std::vector<DeviceType> g_backends{DeviceType::cpu, DeviceType::cuda, DeviceType::hip, DeviceType::ze};
}  // namespace

void set_conformance_backends(std::vector<DeviceType> backends) { g_backends = std::move(backends); }

// GoogleTest evaluates the generator when it registers the tests (in InitGoogleTest), after main
// has read --backend.
INSTANTIATE_TEST_SUITE_P(Backends, Conformance,
                         ::testing::Combine(::testing::ValuesIn(g_backends),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)),
                         param_name);

}  // namespace xhal::test
