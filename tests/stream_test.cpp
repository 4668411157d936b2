// Streams and events (stream.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

TEST(Streams, CurrentStreamIsPerThread) {
  auto& m = DeviceManager::instance();
  const Device cpu = Device::cpu();
  int framework_stream = 0;
  Stream wrapped = m.wrap_stream(cpu, &framework_stream);
  EXPECT_EQ(wrapped.native(), &framework_stream);
  m.set_current_stream(wrapped);
  EXPECT_EQ(m.current_stream(cpu), wrapped);
  std::thread([&] { EXPECT_EQ(m.current_stream(cpu), m.default_stream(cpu)); }).join();
  m.set_current_stream(m.default_stream(cpu));
  EXPECT_EQ(m.current_stream(cpu).native(), nullptr);
}

TEST(Streams, EventsCompleteOnTheCpu) {
  auto& m = DeviceManager::instance();
  Stream s = m.create_stream(Device::cpu());
  Event e = m.create_event(Device::cpu());
  e.record(s);
  e.block(s);
  e.synchronize();
  EXPECT_TRUE(e.query());
  s.synchronize();
  m.synchronize(Device::cpu());
}

}  // namespace
}  // namespace xhal
