// Faults on a communicator, one scenario per run (argv[1]) on one device type (argv[2]: cpu, the
// default, under mpirun; cuda with one GPU per rank, launched by tests/run_ranks.sh):
//   skip: every rank but 0 skips an all_reduce; rank 0 must get Error(timeout) naming it.
//   kill: rank 1 dies (SIGKILL) instead of joining an all_reduce; rank 0 must get Error(timeout)
//         or Error(comm_error) naming it.
// Rank 0 prints one verdict line that ctest matches, with how long the call took to return its
// Work (a timed-out wait has already aborted the communicator) and the time abort() took; the
// ranks then leave with _exit, without finalising MPI (an abandoned collective could block
// MPI_Finalize), so the launcher's own exit status says nothing here. Fewer devices than ranks:
// "comm on <type> skipped".
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "xhal/comm.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/error.hpp"
#include "xhal/tensor.hpp"

namespace {
long long ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

int main(int argc, char** argv) {
  using namespace xhal;
  const bool kill = argc > 1 && std::strcmp(argv[1], "kill") == 0;
  Device device = Device::parse(argc > 2 ? argv[2] : "cpu");
  if (device.type != DeviceType::cpu) {  // one device per rank
    const char* rank = std::getenv("RANK");
    const char* size = std::getenv("WORLD_SIZE");
    int available = 0;
    for (const Device& d : DeviceManager::instance().devices()) available += d.type == device.type;
    if (rank == nullptr || size == nullptr || available < std::atoi(size)) {
      std::printf("comm on %s skipped: %d device(s) for %s ranks\n", argv[2], available, size ? size : "?");
      return 0;
    }
    device.index = std::atoi(rank);
  }
  // Bootstrap gets the default timeout (starting NCCL can take seconds on a busy machine); the
  // faulted op gets 1 s.
  auto c = comm::Communicator::create(device);
  c->barrier().wait();  // everyone is up before the fault
  Tensor value = Tensor::empty({1}, DType::f32, device);
  const float one = 1.0f;
  value.copy_from_host(&one);
  const TensorView& v = value.view();
  if (c->rank() == 0) {
    const auto start = std::chrono::steady_clock::now();
    long long issued = -1;  // how long the call took to return its Work
    try {
      comm::Work work = c->all_reduce(v, v);
      issued = ms_since(start);
      work.wait(std::chrono::milliseconds(1000));
      std::printf("rank 0: NO ERROR (the all_reduce completed)\n");
    } catch (const Error& e) {
      const long long ms = ms_since(start);
      const auto abort_start = std::chrono::steady_clock::now();
      c->abort();
      std::printf("rank 0: %s after %lld ms: %s; issued in %lld ms; abort returned after %lld ms\n",
                  e.code() == Errc::timeout      ? "timeout"
                  : e.code() == Errc::comm_error ? "comm_error"
                                                 : "other error",
                  ms, e.what(), issued, ms_since(abort_start));
    }
    std::fflush(stdout);
    _exit(0);
  }
  if (kill && c->rank() == 1) raise(SIGKILL);
  // The others skip the collective and wait for rank 0's verdict to be printed.
  sleep(3);
  _exit(0);
}
