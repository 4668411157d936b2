// Device names and aliases (device.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

TEST(Device, ParsesNamesAndAliases) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda:1"), (Device{DeviceType::cuda, 1}));
  EXPECT_EQ(Device::parse("nvidia"), (Device{DeviceType::cuda, 0}));
  EXPECT_EQ(Device::parse("dcu:3"), (Device{DeviceType::hip, 3}));
  EXPECT_EQ(Device::parse("HYGON"), (Device{DeviceType::hip, 0}));
  EXPECT_EQ(Device::parse("level_zero:2"), (Device{DeviceType::ze, 2}));
  EXPECT_EQ((Device{DeviceType::hip, 2}).str(), "hip:2");
  EXPECT_EQ(Device::cpu().str(), "cpu");
  for (const char* bad : {"tpu", "cuda:", "cuda:-1", "cuda:x", ""}) {
    try {
      Device::parse(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("device '"), std::string::npos) << e.what();
    }
  }
}

TEST(Device, UnknownNameListsTheInstalledBackends) {
  try {
    Device::parse("ascend:0");
    ADD_FAILURE() << "ascend:0 parsed without an npu plugin";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("installed backends: cpu"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("npu (ascend"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xhal
