// Collective communication: a Communicator over the ranks of a job, one engine per device type
// (MPI for cpu; NCCL for cuda and RCCL for hip come next), never a home-made transport.
// Every op validates its arguments before anything is enqueued (Error(invalid_argument) naming the
// op and argument) and returns a Work; a collective that does not complete within the timeout
// surfaces as Error(timeout) naming the op and its sequence number. docs/collectives.md has the
// engines, bootstrap, timeouts and abort.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "xhal/device.hpp"
#include "xhal/stream.hpp"
#include "xhal/tensor_view.hpp"

namespace xhal::comm {

enum class ReduceOp : uint8_t { sum, prod, min, max, avg };  // avg: floating-point types only
enum class Engine : uint8_t { mpi, nccl, rccl };
std::string_view reduce_op_name(ReduceOp op);
std::string_view engine_name(Engine engine);

struct Options {
  int rank = -1;  // -1: the RANK variable, else the engine's own (MPI's rank)
  int world_size = -1;  // -1: WORLD_SIZE, else the engine's own
  // How long bootstrap and each Work::wait() without an argument may take.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

namespace detail {
class PendingOp;
}

// The completion of one op. A default-constructed Work is complete.
class Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::PendingOp> pending) : pending_(std::move(pending)) {}
  // True once the op completed (its output is then valid); throws the op's error if it failed.
  bool test();
  // Waits up to `timeout` (the communicator's by default); Error(timeout) naming the op and its
  // sequence number when it did not complete, after which the communicator is unusable (abort()).
  void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

 private:
  std::shared_ptr<detail::PendingOp> pending_;
};

class Communicator {
 public:
  // The communicator of all ranks of the job on `device` (one device per rank). Throws
  // Error(invalid_argument) for a rank or world size that disagrees with the engine's,
  // Error(unsupported) when no engine serves the device type in this build.
  static std::shared_ptr<Communicator> create(const Device& device, const Options& options = {});
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Engine engine() const = 0;
  virtual Device device() const = 0;

  // Element-wise reduction of `in` over all ranks into `out` (same shape; may alias `in`).
  Work all_reduce(const TensorView& in, const TensorView& out, ReduceOp op = ReduceOp::sum,
                  const Stream* stream = nullptr);
  // `out` (size() * in.numel() elements) gets every rank's `in`, in rank order.
  Work all_gather(const TensorView& in, const TensorView& out, const Stream* stream = nullptr);
  // Reduces `in` (size() * out.numel() elements) over all ranks; rank r gets block r in `out`.
  Work reduce_scatter(const TensorView& in, const TensorView& out, ReduceOp op = ReduceOp::sum,
                      const Stream* stream = nullptr);
  // `out` on every rank gets `in` of rank `root` (`in` is read on root only; may alias `out`).
  Work broadcast(const TensorView& in, const TensorView& out, int root, const Stream* stream = nullptr);
  Work send(const TensorView& in, int peer, const Stream* stream = nullptr);
  Work recv(const TensorView& out, int peer, const Stream* stream = nullptr);
  Work barrier();
  // Gives up on every op in flight and makes later calls fail with Error(comm_error); returns
  // without waiting for peers. An abandoned op may still write its output later: keep its buffers
  // alive (docs/collectives.md).
  virtual void abort() = 0;

 protected:
  // What an engine implements: arguments already validated, tensors contiguous and on the
  // communicator's device; `in` and `out` may overlap. `seq` numbers the op.
  enum class Kind : uint8_t { all_reduce, all_gather, reduce_scatter, broadcast, send, recv, barrier };
  struct Call {
    Kind kind;
    const char* op;
    uint64_t seq;
    const TensorView* in;
    const TensorView* out;
    ReduceOp reduce;
    int peer;  // root, or the peer of send/recv
    const Stream* stream;
  };
  virtual std::shared_ptr<detail::PendingOp> run(const Call& call) = 0;
  virtual std::chrono::milliseconds timeout() const = 0;

 private:
  Work submit(Kind kind, const char* op, const TensorView* in, const TensorView* out, ReduceOp reduce, int peer,
              const Stream* stream);
  uint64_t next_seq_ = 0;
};

}  // namespace xhal::comm
