// The Communicator front end: picks the engine for the device, checks every op's arguments before
// anything is enqueued, numbers the ops, and turns Work::wait into polling with a deadline.
#include <algorithm>
#include <thread>

#include "comm/engines.hpp"
#include "comm/pending_op.hpp"
#include "core/shape_text.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal::comm {
namespace {

[[noreturn]] void bad(const char* op, std::string_view arg, const std::string& what) {
  throw Error(Errc::invalid_argument, format_text("xhal::comm::{}: argument '{}': {}", op, arg, what));
}

void check_tensor(const char* op, std::string_view arg, const TensorView& t, const Communicator& comm) {
  if (t.device() != comm.device()) {
    bad(op, arg,
        format_text("expected a tensor on {} (the communicator's device), got {}", comm.device().str(),
                    t.device().str()));
  }
  if (!t.is_contiguous())
    bad(op, arg, format_text("expected a contiguous tensor, got strides of shape {}", shape_str(t)));
  if (t.numel() > 0 && t.data() == nullptr) bad(op, arg, "expected data for a non-empty tensor, got null");
}

void check_same_dtype(const char* op, const TensorView& in, const TensorView& out) {
  if (in.dtype() != out.dtype()) {
    bad(op, "out", format_text("expected dtype {} (as 'in'), got {}", dtype_name(in.dtype()), dtype_name(out.dtype())));
  }
}

void check_reduce(const char* op, ReduceOp reduce, const TensorView& t) {
  const bool floating = t.dtype() == DType::f32 || t.dtype() == DType::f16 || t.dtype() == DType::bf16;
  const bool integer = t.dtype() == DType::i32 || t.dtype() == DType::i64;
  if (!floating && !integer)
    bad(op, "in", format_text("expected f32, f16, bf16, i32 or i64, got {}", dtype_name(t.dtype())));
  if (reduce == ReduceOp::avg && !floating) {
    bad(op, "op", format_text("avg needs a floating-point dtype, got {}", dtype_name(t.dtype())));
  }
}

void check_numel(const char* op, std::string_view arg, const TensorView& t, int64_t expected, std::string_view why) {
  if (t.numel() != expected) {
    bad(op, arg, format_text("expected {} elements ({}), got {} (shape {})", expected, why, t.numel(), shape_str(t)));
  }
}

void check_rank(const char* op, std::string_view arg, int r, const Communicator& comm, bool not_self) {
  if (r < 0 || r >= comm.size() || (not_self && r == comm.rank())) {
    bad(op, arg,
        format_text("expected a rank in [0, {}){}, got {}", comm.size(),
                    not_self ? format_text(" other than this one ({})", comm.rank()) : "", r));
  }
}

}  // namespace

std::string_view reduce_op_name(ReduceOp op) {
  static constexpr std::string_view kNames[] = {"sum", "prod", "min", "max", "avg"};
  return kNames[static_cast<int>(op)];
}

std::string_view engine_name(Engine engine) {
  static constexpr std::string_view kNames[] = {"mpi", "nccl", "rccl"};
  return kNames[static_cast<int>(engine)];
}

std::shared_ptr<Communicator> Communicator::create(const Device& device, const Options& options) {
  if (options.timeout.count() <= 0) {
    throw Error(Errc::invalid_argument,
                format_text("xhal::comm::Communicator::create: argument 'options.timeout': expected a positive "
                            "duration, got {} ms",
                            options.timeout.count()));
  }
  switch (device.type) {
    case DeviceType::cpu: return create_mpi_communicator(device, options);
    default: return create_device_communicator(device, options);
  }
}

Work Communicator::submit(Kind kind, const char* op, const TensorView* in, const TensorView* out, ReduceOp reduce,
                          int peer, const Stream* stream) {
  if (stream != nullptr && stream->device() != device()) {
    bad(op, "stream", format_text("expected a stream of {}, got one of {}", device().str(), stream->device().str()));
  }
  return Work(run({kind, op, next_seq_++, in, out, reduce, peer, stream}));
}

Work Communicator::all_reduce(const TensorView& in, const TensorView& out, ReduceOp op, const Stream* stream) {
  check_tensor("all_reduce", "in", in, *this);
  check_tensor("all_reduce", "out", out, *this);
  check_same_dtype("all_reduce", in, out);
  check_reduce("all_reduce", op, in);
  check_numel("all_reduce", "out", out, in.numel(), "as many as 'in'");
  return submit(Kind::all_reduce, "all_reduce", &in, &out, op, -1, stream);
}

Work Communicator::all_gather(const TensorView& in, const TensorView& out, const Stream* stream) {
  check_tensor("all_gather", "in", in, *this);
  check_tensor("all_gather", "out", out, *this);
  check_same_dtype("all_gather", in, out);
  check_numel("all_gather", "out", out, in.numel() * size(), "'in' times the world size");
  return submit(Kind::all_gather, "all_gather", &in, &out, ReduceOp::sum, -1, stream);
}

Work Communicator::reduce_scatter(const TensorView& in, const TensorView& out, ReduceOp op, const Stream* stream) {
  check_tensor("reduce_scatter", "in", in, *this);
  check_tensor("reduce_scatter", "out", out, *this);
  check_same_dtype("reduce_scatter", in, out);
  check_reduce("reduce_scatter", op, in);
  check_numel("reduce_scatter", "in", in, out.numel() * size(), "'out' times the world size");
  return submit(Kind::reduce_scatter, "reduce_scatter", &in, &out, op, -1, stream);
}

Work Communicator::broadcast(const TensorView& in, const TensorView& out, int root, const Stream* stream) {
  check_rank("broadcast", "root", root, *this, false);
  check_tensor("broadcast", "in", in, *this);
  check_tensor("broadcast", "out", out, *this);
  check_same_dtype("broadcast", in, out);
  check_numel("broadcast", "out", out, in.numel(), "as many as 'in'");
  return submit(Kind::broadcast, "broadcast", &in, &out, ReduceOp::sum, root, stream);
}

Work Communicator::send(const TensorView& in, int peer, const Stream* stream) {
  check_rank("send", "peer", peer, *this, true);
  check_tensor("send", "in", in, *this);
  return submit(Kind::send, "send", &in, nullptr, ReduceOp::sum, peer, stream);
}

Work Communicator::recv(const TensorView& out, int peer, const Stream* stream) {
  check_rank("recv", "peer", peer, *this, true);
  check_tensor("recv", "out", out, *this);
  return submit(Kind::recv, "recv", nullptr, &out, ReduceOp::sum, peer, stream);
}

Work Communicator::barrier() { return submit(Kind::barrier, "barrier", nullptr, nullptr, ReduceOp::sum, -1, nullptr); }

bool Work::test() { return pending_ == nullptr || pending_->poll(); }

void Work::wait(std::optional<std::chrono::milliseconds> timeout) {
  if (pending_ == nullptr) return;
  const auto limit = timeout.value_or(pending_->timeout());
  const auto deadline = std::chrono::steady_clock::now() + limit;
  // Poll, backing off from busy-waiting to 1 ms naps for long ops.
  auto nap = std::chrono::microseconds(0);
  while (!pending_->poll()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      pending_->timed_out();
      throw Error(Errc::timeout, format_text("xhal::comm: {} did not complete within {} ms (a peer that died or "
                                             "skipped it?); the communicator is aborted",
                                             pending_->what(), limit.count()));
    }
    if (nap.count() > 0) std::this_thread::sleep_for(nap);
    nap = std::min<std::chrono::microseconds>(nap + std::chrono::microseconds(10), std::chrono::milliseconds(1));
  }
}

}  // namespace xhal::comm
