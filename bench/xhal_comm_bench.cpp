// xhal-comm-bench: algbw and busbw (the nccl-tests formulas) of every collective per message size,
// on one device per rank, and on cuda the same sizes through raw NCCL calls in the same run (built
// when CMake finds nccl.h), with the ratio. Ranks come from mpirun or RANK / WORLD_SIZE with
// XHAL_STORE (tests/run_ranks.sh). Rank 0 prints one row per op and size.
//   xhal-comm-bench [--device cpu|cuda] [--min-bytes N] [--max-bytes N] [--iters N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "xhal/comm.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/tensor.hpp"

#if defined(XHAL_COMM_BENCH_NCCL)
#include <nccl.h>
#endif

namespace {

using namespace xhal;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string device = "cpu";
  int64_t min_bytes = 8, max_bytes = int64_t(1) << 30;
  int iters = 20;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--device")
      a.device = v;
    else if (k == "--min-bytes")
      a.min_bytes = std::stoll(v);
    else if (k == "--max-bytes")
      a.max_bytes = std::stoll(v);
    else if (k == "--iters")
      a.iters = std::stoi(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

// Seconds per call of `enqueue` (issued `iters` times back to back, then waited for), after
// warm-up; `sync` waits for everything issued on every rank. Rank 0's clock (a collective ends on
// all ranks together, so it is everyone's to within the barrier).
double seconds_per_call(int iters, const std::function<void()>& enqueue, const std::function<void()>& sync) {
  for (int i = 0; i < 3; ++i) enqueue();
  sync();
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) enqueue();
  sync();
  return std::chrono::duration<double>(Clock::now() - start).count() / iters;
}

// nccl-tests: algbw = bytes / time with bytes the size of the whole buffer (all_gather's output,
// reduce_scatter's input); busbw scales it by what each rank's link must carry.
double bus_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter") return double(n - 1) / n;
  return 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const Device kind = Device::parse(args.device);
  const int rank = std::getenv("RANK") ? std::atoi(std::getenv("RANK")) : -1;
  const Device device = kind.type == DeviceType::cpu ? Device::cpu() : Device{kind.type, rank >= 0 ? rank : 0};
  auto comm = comm::Communicator::create(device);
  const int n = comm->size();
  const Stream stream = DeviceManager::instance().current_stream(device);
  auto sync_all = [&] {
    comm->barrier().wait();
    stream.synchronize();
  };

#if defined(XHAL_COMM_BENCH_NCCL)
  // Raw NCCL on the same devices, stream and buffers; its id reaches the ranks through xhal.
  ncclComm_t raw = nullptr;
  if (device.type == DeviceType::cuda) {
    ncclUniqueId id;
    if (comm->rank() == 0) ncclGetUniqueId(&id);
    std::vector<int32_t> words(sizeof id / 4);
    std::memcpy(words.data(), &id, sizeof id);
    Tensor t = Tensor::from_host(words.data(), {int64_t(words.size())}, DType::i32, device);
    comm->broadcast(t, t, 0).wait();
    t.copy_to_host(words.data());
    std::memcpy(&id, words.data(), sizeof id);
    if (ncclCommInitRank(&raw, n, id, comm->rank()) != ncclSuccess) raw = nullptr;
  }
  auto raw_stream = static_cast<cudaStream_t>(stream.native());
#endif

  if (comm->rank() == 0) {
    std::printf("xhal-comm-bench: %d ranks on %s (%s), %d iterations per size\n", n, args.device.c_str(),
                std::string(comm::engine_name(comm->engine())).c_str(), args.iters);
    std::printf("%-15s %12s %10s %10s %10s %10s %10s %8s\n", "op", "bytes", "xhal us", "algbw", "busbw", "raw us",
                "raw busbw", "ratio");
  }
  const int64_t max_elems = args.max_bytes / 4;
  Tensor in = Tensor::empty({max_elems}, DType::f32, device);
  Tensor out = Tensor::empty({max_elems}, DType::f32, device);
  for (const std::string op : {"all_reduce", "all_gather", "reduce_scatter", "broadcast"}) {
    for (int64_t bytes = args.min_bytes; bytes <= args.max_bytes; bytes *= 2) {
      const int64_t total = std::max<int64_t>(bytes / 4 / n * n, n);  // whole buffer, a multiple of n
      const int64_t part = total / n;
      const TensorView src(in.data(), DType::f32, {op == "all_gather" ? part : total}, device);
      const TensorView dst(out.data(), DType::f32, {op == "reduce_scatter" ? part : total}, device);
      std::function<void()> xhal_op = [&] {
        if (op == "all_reduce")
          comm->all_reduce(src, dst);
        else if (op == "all_gather")
          comm->all_gather(src, dst);
        else if (op == "reduce_scatter")
          comm->reduce_scatter(src, dst);
        else
          comm->broadcast(src, dst, 0);
      };
      if (device.type == DeviceType::cpu) {  // MPI ops complete only when waited for
        xhal_op = [&, enqueue = xhal_op] {
          if (op == "all_reduce")
            comm->all_reduce(src, dst).wait();
          else if (op == "all_gather")
            comm->all_gather(src, dst).wait();
          else if (op == "reduce_scatter")
            comm->reduce_scatter(src, dst).wait();
          else
            comm->broadcast(src, dst, 0).wait();
        };
      }
      const double t = seconds_per_call(args.iters, xhal_op, sync_all);
      const double used = double(total) * 4, algbw = used / t / 1e9, busbw = algbw * bus_factor(op, n);
      double raw_t = 0;
#if defined(XHAL_COMM_BENCH_NCCL)
      if (raw != nullptr) {
        raw_t = seconds_per_call(
            args.iters,
            [&] {
              if (op == "all_reduce")
                ncclAllReduce(src.data(), dst.data(), size_t(total), ncclFloat32, ncclSum, raw, raw_stream);
              else if (op == "all_gather")
                ncclAllGather(src.data(), dst.data(), size_t(part), ncclFloat32, raw, raw_stream);
              else if (op == "reduce_scatter")
                ncclReduceScatter(src.data(), dst.data(), size_t(part), ncclFloat32, ncclSum, raw, raw_stream);
              else
                ncclBroadcast(src.data(), dst.data(), size_t(total), ncclFloat32, 0, raw, raw_stream);
            },
            sync_all);
      }
#endif
      if (comm->rank() == 0) {
        if (raw_t > 0) {
          const double raw_bus = used / raw_t / 1e9 * bus_factor(op, n);
          std::printf("%-15s %12lld %10.1f %10.2f %10.2f %10.1f %10.2f %8.3f\n", op.c_str(), (long long)(total * 4),
                      t * 1e6, algbw, busbw, raw_t * 1e6, raw_bus, busbw / raw_bus);
        } else {
          std::printf("%-15s %12lld %10.1f %10.2f %10.2f\n", op.c_str(), (long long)(total * 4), t * 1e6, algbw, busbw);
        }
        std::fflush(stdout);
      }
    }
  }
#if defined(XHAL_COMM_BENCH_NCCL)
  if (raw != nullptr) ncclCommDestroy(raw);
#endif
  comm.reset();
  return 0;
}
