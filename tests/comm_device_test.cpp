// Collectives on accelerators (NCCL for cuda), one process per device: rank r uses device r of
// XHAL_TEST_COMM_DEVICE (default cuda). Launched by tests/run_ranks.sh (RANK, WORLD_SIZE and a fresh
// XHAL_STORE per run) or under mpirun. Skipped, by name, when the machine has fewer devices than
// ranks.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "comm_cases.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/error.hpp"

namespace xhal::comm {
namespace {

std::shared_ptr<Communicator> g_comm;
std::string g_skip;

class CommDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!g_comm) GTEST_SKIP() << g_skip;
  }
};

TEST_F(CommDevice, AllReduce) { test::all_reduce_cases(*g_comm, {1, 1013, 1 << 20}); }
TEST_F(CommDevice, ReduceScatter) { test::reduce_scatter_cases(*g_comm, {1, 1013, 1 << 18}); }
TEST_F(CommDevice, AllGatherBroadcastSendRecv) { test::gather_broadcast_ring_cases(*g_comm, {1, 1013, 1 << 18}); }

}  // namespace
}  // namespace xhal::comm

int main(int argc, char** argv) {
  using namespace xhal;
  ::testing::InitGoogleTest(&argc, argv);
  const char* type = std::getenv("XHAL_TEST_COMM_DEVICE");
  const char* rank = std::getenv("RANK");
  const char* size = std::getenv("WORLD_SIZE");
  const int r = rank ? std::atoi(rank) : 0, n = size ? std::atoi(size) : 1;
  const Device kind = Device::parse(type ? type : "cuda");
  int available = 0;
  for (const Device& d : DeviceManager::instance().devices()) available += d.type == kind.type;
  if (const char* expect = std::getenv("XHAL_TEST_COMM_EXPECT"); expect && std::string(expect) == "timeout") {
    // A bootstrap that cannot complete (a rank missing, a store nobody writes) must fail as a
    // timeout within the bound, never hang.
    if (available == 0) {
      std::printf("comm on %s skipped: no device\n", std::string(device_type_name(kind.type)).c_str());
      return 0;
    }
    comm::Options options;
    options.timeout = std::chrono::milliseconds(3000);
    const auto start = std::chrono::steady_clock::now();
    try {
      comm::Communicator::create(Device{kind.type, r % available}, options);
      std::printf("NO ERROR: create succeeded\n");
      return 1;
    } catch (const Error& e) {
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
      std::printf("create failed after %lld ms with %s: %s\n", static_cast<long long>(ms),
                  e.code() == Errc::timeout ? "timeout" : "another error", e.what());
      return e.code() == Errc::timeout && ms < 20000 ? 0 : 1;
    }
  }
  if (available < n) {
    comm::g_skip = "comm on " + std::string(device_type_name(kind.type)) + " skipped: " + std::to_string(available) +
                   " device(s) for " + std::to_string(n) + " ranks";
  } else {
    comm::g_comm = comm::Communicator::create(Device{kind.type, r});
  }
  const int status = RUN_ALL_TESTS();
  comm::g_comm.reset();  // before static destruction takes the backend down (docs/collectives.md)
  return status;
}
