// Collectives on the cpu (MPI engine), run under mpirun with 2, 3 and 4 ranks (and alone): the
// cases of comm_cases.hpp with counts 0, 1 and odd, argument errors, bootstrap mismatch, a wait
// that times out, abort.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "comm_cases.hpp"
#include "xhal/comm.hpp"
#include "xhal/error.hpp"

namespace xhal::comm {
namespace {

Communicator& world() {
  static const std::shared_ptr<Communicator> comm = Communicator::create(Device::cpu());
  return *comm;
}

// A small host buffer for the argument and fault checks.
struct Buffer {
  DType dtype;
  std::vector<unsigned char> bytes;
  Buffer(DType d, int64_t n) : dtype(d), bytes(size_t(n) * dtype_size(d)) {}
  TensorView view(int64_t n) { return TensorView(bytes.data(), dtype, {n}); }
};

constexpr int64_t kOdd = 1013;

TEST(Comm, RankAndSize) {
  Communicator& c = world();
  EXPECT_EQ(c.engine(), Engine::mpi);
  EXPECT_GE(c.size(), 1);
  EXPECT_GE(c.rank(), 0);
  EXPECT_LT(c.rank(), c.size());
}

TEST(Comm, AllReduceEveryDtypeOpAndCount) { test::all_reduce_cases(world(), {0, 1, kOdd}); }
TEST(Comm, ReduceScatterEveryDtypeAndCount) { test::reduce_scatter_cases(world(), {0, 1, kOdd}); }
TEST(Comm, AllGatherBroadcastSendRecv) { test::gather_broadcast_ring_cases(world(), {0, 1, kOdd}); }

// Argument errors are reported before anything is enqueued (so the ranks stay in step).
TEST(Comm, BadArgumentsAreInvalidArgument) {
  Communicator& c = world();
  Buffer a(DType::f32, 8), b(DType::f32, 8);
  Buffer h(DType::bf16, 8), i(DType::i32, 8);
  auto expect_invalid = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_invalid([&] { c.all_reduce(a.view(8), b.view(7)); }, "argument 'out'");
  expect_invalid([&] { c.all_reduce(a.view(8), h.view(8)); }, "expected dtype f32");
  expect_invalid([&] { c.all_reduce(i.view(8), i.view(8), ReduceOp::avg); }, "avg needs a floating-point");
  expect_invalid([&] { c.all_gather(a.view(8), b.view(8 * c.size() + 1)); }, "world size");
  expect_invalid([&] { c.reduce_scatter(a.view(8), b.view(3)); }, "argument 'in'");
  expect_invalid([&] { c.broadcast(a.view(8), b.view(8), c.size()); }, "argument 'root'");
  expect_invalid([&] { c.send(a.view(8), c.rank()); }, "argument 'peer'");
  expect_invalid([&] { c.recv(a.view(8), -1); }, "argument 'peer'");
  expect_invalid([&] { c.all_reduce(TensorView(a.bytes.data(), DType::f32, {4}, {2}), a.view(4)); }, "contiguous");
  expect_invalid(
      [&] {
        c.all_reduce(TensorView(a.bytes.data(), DType::f32, {8}, Device{DeviceType::cuda, 0}), a.view(8));
      },
      "communicator's device");
}

// A peer that never sends: the wait gives up within its timeout, names the op and its sequence
// number, and leaves the communicator aborted. (The message is sent afterwards, so nothing stays
// pending at exit.)
TEST(Comm, WaitTimesOutNamingTheOpAndAborts) {
  Communicator& c = world();
  if (c.size() < 2) GTEST_SKIP() << "needs a peer";
  auto late = Communicator::create(Device::cpu());
  // Outlives the test: the abandoned receive still lands here when the late message arrives.
  static Buffer buf(DType::f32, 4);
  if (c.rank() == 0) {
    Work w = late->recv(buf.view(4), 1);
    const auto start = std::chrono::steady_clock::now();
    try {
      w.wait(std::chrono::milliseconds(100));
      ADD_FAILURE() << "nothing was sent: the wait must time out";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::timeout) << e.what();
      EXPECT_NE(std::string(e.what()).find("recv #0"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    try {
      late->barrier();
      ADD_FAILURE() << "an aborted communicator must refuse new ops";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::comm_error) << e.what();
    }
  }
  c.barrier().wait();
  if (c.rank() == 1) late->send(buf.view(4), 0).wait();
}

TEST(Comm, AbortReturnsAndRefusesLaterOps) {
  auto comm = Communicator::create(Device::cpu());
  comm->abort();
  try {
    comm->barrier();
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::comm_error) << e.what();
  }
}

TEST(Comm, MismatchedRankOrSizeFailsAtCreate) {
  Options o;
  o.world_size = world().size() + 1;
  try {
    Communicator::create(Device::cpu(), o);
    ADD_FAILURE() << "a wrong world size must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("world size"), std::string::npos) << e.what();
  }
}

TEST(Comm, DeviceWithoutBackendIsBackendUnavailable) {
  try {
    Communicator::create(Device{DeviceType::ze, 0});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::backend_unavailable) << e.what();
  }
}

}  // namespace
}  // namespace xhal::comm
