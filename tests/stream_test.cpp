// Streams and events (stream.hpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <string>
#include <thread>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

// Runs `call`, which must throw an Error of `code` whose message holds each of `parts`.
void expect_error(Errc code, std::initializer_list<const char*> parts, const std::function<void()>& call) {
  try {
    call();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const char* part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

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

TEST(Streams, TimedEventsMeasureTheWorkBetweenThem) {
  auto& m = DeviceManager::instance();
  const Device cpu = Device::cpu();
  Stream s = m.default_stream(cpu);
  Event start = m.create_timed_event(cpu), end = m.create_timed_event(cpu);
  EXPECT_TRUE(start.timed());
  EXPECT_FALSE(m.create_event(cpu).timed());
  start.record(s);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  end.record(s);
  end.synchronize();
  EXPECT_GE(start.elapsed_ms(end), 19.0);
  EXPECT_LE(end.elapsed_ms(start), -19.0);  // the other way round: negative, as the vendors' calls
}

TEST(Streams, ElapsedTimeNeedsTwoRecordedTimedEvents) {
  auto& m = DeviceManager::instance();
  const Device cpu = Device::cpu();
  Event timed = m.create_timed_event(cpu), plain = m.create_event(cpu), unrecorded = m.create_timed_event(cpu);
  timed.record(m.default_stream(cpu));
  expect_error(Errc::invalid_argument, {"Event::elapsed_ms", "the end event", "create_timed_event"},
               [&] { timed.elapsed_ms(plain); });
  expect_error(Errc::invalid_argument, {"Event::elapsed_ms", "the start event", "create_timed_event"},
               [&] { plain.elapsed_ms(timed); });
  expect_error(Errc::invalid_argument, {"event_elapsed_ms", "recorded"}, [&] { timed.elapsed_ms(unrecorded); });
}

}  // namespace
}  // namespace xhal
