// Faults on the cpu communicators, one scenario per run under mpirun (argv[1]):
//   skip: every rank but 0 skips an all_reduce; rank 0 must get Error(timeout) naming it.
//   kill: rank 1 dies (SIGKILL) instead of joining an all_reduce; rank 0 must get Error(timeout)
//         or Error(comm_error) naming it.
// Rank 0 prints one verdict line that ctest matches; the ranks then leave with _exit, without
// finalising MPI (an abandoned collective could block MPI_Finalize), so mpirun's own exit status
// says nothing here.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "xhal/comm.hpp"
#include "xhal/error.hpp"

int main(int argc, char** argv) {
  using namespace xhal;
  const bool kill = argc > 1 && std::strcmp(argv[1], "kill") == 0;
  comm::Options options;
  options.timeout = std::chrono::milliseconds(1000);
  auto c = comm::Communicator::create(Device::cpu(), options);
  c->barrier().wait();  // everyone is up before the fault
  float value = 1.0f;
  const TensorView v(&value, DType::f32, {1});
  if (c->rank() == 0) {
    const auto start = std::chrono::steady_clock::now();
    try {
      c->all_reduce(v, v).wait();
      std::printf("rank 0: NO ERROR (the all_reduce completed)\n");
    } catch (const Error& e) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      std::printf("rank 0: %s after %lld ms: %s\n", e.code() == Errc::timeout ? "timeout" : e.code() == Errc::comm_error ? "comm_error" : "other error",
                  static_cast<long long>(ms.count()), e.what());
    }
    std::fflush(stdout);
    c->abort();
    _exit(0);
  }
  if (kill && c->rank() == 1) raise(SIGKILL);
  // The others skip the collective and wait for rank 0's verdict to be printed.
  sleep(3);
  _exit(0);
}
