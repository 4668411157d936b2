// Collectives on the cpu (MPI engine), run under mpirun with 2, 3 and 4 ranks (and alone for the
// argument checks): every op x dtype x reduction on inputs whose exact answer is known (small
// integers, exact in every dtype), in place and out of place, counts 0, 1 and odd.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "xhal/comm.hpp"
#include "xhal/error.hpp"
#include "xhal/half.hpp"

namespace xhal::comm {
namespace {

Communicator& world() {
  static const std::shared_ptr<Communicator> comm = Communicator::create(Device::cpu());
  return *comm;
}

// A host buffer of `n` elements of `dtype`, read and written as doubles.
struct Buffer {
  DType dtype;
  std::vector<unsigned char> bytes;
  Buffer(DType d, int64_t n) : dtype(d), bytes(size_t(n) * dtype_size(d) + 1) {}  // +1: never empty
  TensorView view(int64_t n) { return TensorView(bytes.data(), dtype, {n}); }
  TensorView view_at(int64_t offset, int64_t n) {
    return TensorView(bytes.data() + size_t(offset) * dtype_size(dtype), dtype, {n});
  }
  void set(int64_t i, double v) {
    unsigned char* p = bytes.data() + size_t(i) * dtype_size(dtype);
    switch (dtype) {
      case DType::f32: *reinterpret_cast<float*>(p) = float(v); break;
      case DType::f16: *reinterpret_cast<uint16_t*>(p) = float_to_f16(float(v)); break;
      case DType::bf16: *reinterpret_cast<uint16_t*>(p) = float_to_bf16(float(v)); break;
      case DType::i32: *reinterpret_cast<int32_t*>(p) = int32_t(v); break;
      default: *reinterpret_cast<int64_t*>(p) = int64_t(v); break;
    }
  }
  double get(int64_t i) const {
    const unsigned char* p = bytes.data() + size_t(i) * dtype_size(dtype);
    switch (dtype) {
      case DType::f32: return *reinterpret_cast<const float*>(p);
      case DType::f16: return f16_to_float(*reinterpret_cast<const uint16_t*>(p));
      case DType::bf16: return bf16_to_float(*reinterpret_cast<const uint16_t*>(p));
      case DType::i32: return *reinterpret_cast<const int32_t*>(p);
      default: return double(*reinterpret_cast<const int64_t*>(p));
    }
  }
};

constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64};
constexpr int64_t kCounts[] = {0, 1, 1013};

// Rank r's element i for each reduction, and the exact reduction over `ranks` ranks.
double input(ReduceOp op, int r, int64_t i) {
  switch (op) {
    case ReduceOp::prod: return 1 + (r + i) % 2;
    case ReduceOp::min:
    case ReduceOp::max: return double((r * 3 + i) % 11) - 5;
    default: return double((r + 1) * (i % 7 + 1));
  }
}
double reduced(ReduceOp op, int ranks, int64_t i) {
  double acc = input(op, 0, i);
  for (int r = 1; r < ranks; ++r) {
    const double v = input(op, r, i);
    acc = op == ReduceOp::prod ? acc * v : op == ReduceOp::min ? std::min(acc, v) : op == ReduceOp::max ? std::max(acc, v) : acc + v;
  }
  return op == ReduceOp::avg ? acc / ranks : acc;
}

bool is_float(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16; }

TEST(Comm, RankAndSize) {
  Communicator& c = world();
  EXPECT_EQ(c.engine(), Engine::mpi);
  EXPECT_GE(c.size(), 1);
  EXPECT_GE(c.rank(), 0);
  EXPECT_LT(c.rank(), c.size());
}

TEST(Comm, AllReduceEveryDtypeOpAndCount) {
  Communicator& c = world();
  for (DType dtype : kDTypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg}) {
      if (op == ReduceOp::avg && !is_float(dtype)) continue;
      for (int64_t n : kCounts) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " " << reduce_op_name(op) << " n " << n
                                          << (in_place ? " in place" : ""));
          Buffer in(dtype, n), out(dtype, n);
          for (int64_t i = 0; i < n; ++i) in.set(i, input(op, c.rank(), i)), out.set(i, -99);
          Buffer& result = in_place ? in : out;
          c.all_reduce(in.view(n), result.view(n), op).wait();
          int wrong = 0;
          for (int64_t i = 0; i < n; ++i) wrong += result.get(i) != reduced(op, c.size(), i);
          EXPECT_EQ(wrong, 0) << "first: got " << (n ? result.get(0) : 0) << " want " << (n ? reduced(op, c.size(), 0) : 0);
        }
      }
    }
  }
}

TEST(Comm, ReduceScatterEveryDtypeAndCount) {
  Communicator& c = world();
  for (DType dtype : kDTypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
      for (int64_t n : kCounts) {
        SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " " << reduce_op_name(op) << " n " << n);
        const int64_t total = n * c.size();
        Buffer in(dtype, total), out(dtype, n);
        for (int64_t j = 0; j < total; ++j) in.set(j, input(op, c.rank(), j));
        c.reduce_scatter(in.view(total), out.view(n), op).wait();
        int wrong = 0;
        for (int64_t i = 0; i < n; ++i) wrong += out.get(i) != reduced(op, c.size(), c.rank() * n + i);
        EXPECT_EQ(wrong, 0);
        // In place: the output is this rank's block of the input.
        for (int64_t j = 0; j < total; ++j) in.set(j, input(op, c.rank(), j));
        c.reduce_scatter(in.view(total), in.view_at(c.rank() * n, n), op).wait();
        wrong = 0;
        for (int64_t i = 0; i < n; ++i) wrong += in.get(c.rank() * n + i) != reduced(op, c.size(), c.rank() * n + i);
        EXPECT_EQ(wrong, 0) << "in place";
      }
    }
  }
}

TEST(Comm, AllGatherBroadcastSendRecv) {
  Communicator& c = world();
  auto value = [](int r, int64_t i) { return double((r + 1) + i % 5); };
  for (DType dtype : kDTypes) {
    for (int64_t n : kCounts) {
      SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " n " << n);
      const int64_t total = n * c.size();
      Buffer in(dtype, n), out(dtype, total);
      for (int64_t i = 0; i < n; ++i) in.set(i, value(c.rank(), i));
      c.all_gather(in.view(n), out.view(total)).wait();
      int wrong = 0;
      for (int64_t j = 0; j < total; ++j) wrong += out.get(j) != value(int(j / std::max<int64_t>(n, 1)), j % std::max<int64_t>(n, 1));
      EXPECT_EQ(wrong, 0) << "all_gather";
      // In place: this rank's input is already its block of the output.
      Buffer both(dtype, total);
      for (int64_t i = 0; i < n; ++i) both.set(c.rank() * n + i, value(c.rank(), i));
      c.all_gather(both.view_at(c.rank() * n, n), both.view(total)).wait();
      wrong = 0;
      for (int64_t j = 0; j < total; ++j) wrong += both.get(j) != value(int(j / std::max<int64_t>(n, 1)), j % std::max<int64_t>(n, 1));
      EXPECT_EQ(wrong, 0) << "all_gather in place";

      for (int root : {0, c.size() - 1}) {
        Buffer b(dtype, n);
        for (int64_t i = 0; i < n; ++i) b.set(i, value(c.rank(), i));
        c.broadcast(b.view(n), b.view(n), root).wait();
        wrong = 0;
        for (int64_t i = 0; i < n; ++i) wrong += b.get(i) != value(root, i);
        EXPECT_EQ(wrong, 0) << "broadcast from " << root;
      }

      if (c.size() > 1) {  // a ring: each rank sends to the next and receives from the previous
        const int next = (c.rank() + 1) % c.size(), prev = (c.rank() + c.size() - 1) % c.size();
        Buffer got(dtype, n);
        Work r = c.recv(got.view(n), prev);
        Work s = c.send(in.view(n), next);
        r.wait();
        s.wait();
        wrong = 0;
        for (int64_t i = 0; i < n; ++i) wrong += got.get(i) != value(prev, i);
        EXPECT_EQ(wrong, 0) << "recv from " << prev;
      }
    }
  }
  c.barrier().wait();
}

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
  expect_invalid([&] { c.all_reduce(TensorView(a.bytes.data(), DType::f32, {8}, Device{DeviceType::cuda, 0}), a.view(8)); },
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

TEST(Comm, NoEngineForOtherDevicesIsUnsupported) {
  try {
    Communicator::create(Device{DeviceType::ze, 0});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::unsupported) << e.what();
  }
}

}  // namespace
}  // namespace xhal::comm
