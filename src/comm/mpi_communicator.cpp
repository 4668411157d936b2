// The MPI engine (cpu devices), built as libxhal_mpi.so: nonblocking MPI collectives on a duplicate of MPI_COMM_WORLD,
// polled by Work. f16/bf16 reductions use user-defined MPI ops (f32 arithmetic, rounded per
// step); avg is a sum divided by the world size when the op completes. MPI is initialised on the
// first communicator (unless the application did) and finalised at exit.
// The C API only: OpenMPI would otherwise pull in its deprecated C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

#include "comm/bootstrap.hpp"
#include "comm/engines.hpp"
#include "comm/pending_op.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"
#include "xhal/half.hpp"

namespace xhal::comm {
namespace {

// MPI is initialised for MPI_THREAD_SERIALIZED: every MPI call goes through this lock.
std::mutex& mpi_lock() {
  static std::mutex lock;
  return lock;
}

[[noreturn]] void mpi_failed(const std::string& what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw Error(Errc::comm_error, format_text("xhal::comm (mpi): {}: {}", what, std::string(text, size_t(len))));
}

void check(int code, const std::string& what) {
  if (code != MPI_SUCCESS) mpi_failed(what, code);
}

// Initialises MPI once; finalises it at exit when xhal initialised it.
void ensure_mpi() {
  static const bool ready = [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
      });
    }
    return true;
  }();
  (void)ready;
}

// Element-wise reductions of 16-bit floats for MPI_Op_create: f32 arithmetic, rounded back.
template <float (*Load)(uint16_t), uint16_t (*Store)(float), class F>
void reduce16(void* in, void* inout, int* len, F f) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Store(f(Load(a[i]), Load(b[i])));
}
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
struct Half16Ops {
  static void sum(void* in, void* io, int* n, MPI_Datatype*) {
    reduce16<Load, Store>(in, io, n, [](float x, float y) { return x + y; });
  }
  static void prod(void* in, void* io, int* n, MPI_Datatype*) {
    reduce16<Load, Store>(in, io, n, [](float x, float y) { return x * y; });
  }
  static void min(void* in, void* io, int* n, MPI_Datatype*) {
    reduce16<Load, Store>(in, io, n, [](float x, float y) { return y < x ? y : x; });
  }
  static void max(void* in, void* io, int* n, MPI_Datatype*) {
    reduce16<Load, Store>(in, io, n, [](float x, float y) { return y > x ? y : x; });
  }
};

// The MPI op for a reduction of `dtype` (avg reduces as sum).
MPI_Op mpi_op(ReduceOp op, DType dtype) {
  const int which = op == ReduceOp::avg ? 0 : static_cast<int>(op);  // sum prod min max
  if (dtype != DType::f16 && dtype != DType::bf16) {
    static constexpr std::array kBuiltin = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    return kBuiltin[size_t(which)];
  }
  static const auto ops = [] {
    using F16 = Half16Ops<f16_to_float, float_to_f16>;
    using B16 = Half16Ops<bf16_to_float, float_to_bf16>;
    std::array<std::array<MPI_Op, 4>, 2> made{};
    MPI_User_function* f16[] = {F16::sum, F16::prod, F16::min, F16::max};
    MPI_User_function* b16[] = {B16::sum, B16::prod, B16::min, B16::max};
    for (int i = 0; i < 4; ++i) {
      MPI_Op_create(f16[i], 1, &made[0][size_t(i)]);
      MPI_Op_create(b16[i], 1, &made[1][size_t(i)]);
    }
    return made;
  }();
  return ops[dtype == DType::bf16 ? 1 : 0][size_t(which)];
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return MPI_FLOAT;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::f16:
    case DType::bf16: return MPI_UINT16_T;  // reductions go through the user-defined ops
    default: return MPI_BYTE;
  }
}

// Divides n elements of a floating-point dtype by `by` (avg after a sum).
void divide(void* data, int64_t n, DType dtype, int by) {
  if (dtype == DType::f32) {
    auto* f = static_cast<float*>(data);
    for (int64_t i = 0; i < n; ++i) f[i] /= float(by);
    return;
  }
  auto* h = static_cast<uint16_t*>(data);
  for (int64_t i = 0; i < n; ++i) {
    h[i] = dtype == DType::bf16 ? float_to_bf16(bf16_to_float(h[i]) / float(by))
                                : float_to_f16(f16_to_float(h[i]) / float(by));
  }
}

class MpiCommunicator;

class MpiPending final : public detail::PendingOp {
 public:
  MpiPending(std::string what, std::chrono::milliseconds timeout, std::shared_ptr<std::atomic<bool>> aborted)
      : PendingOp(std::move(what), timeout), aborted_(std::move(aborted)) {}
  std::vector<MPI_Request> requests;
  std::vector<unsigned char> staging;  // an input copy when input and output overlap
  std::function<void()> finish;  // runs once, after the requests completed

  bool poll() override {
    if (done_) return true;
    if (*aborted_)
      throw Error(Errc::comm_error, format_text("xhal::comm (mpi): {}: the communicator was aborted", what()));
    int flag = 0;
    {
      std::lock_guard lock(mpi_lock());
      check(MPI_Testall(int(requests.size()), requests.data(), &flag, MPI_STATUSES_IGNORE), what());
    }
    if (!flag) return false;
    if (finish) finish();
    done_ = true;
    return true;
  }
  void timed_out() override { *aborted_ = true; }

 private:
  std::shared_ptr<std::atomic<bool>> aborted_;
  bool done_ = false;
};

bool overlap(const TensorView* a, const TensorView* b) {
  if (a == nullptr || b == nullptr || a->numel() == 0 || b->numel() == 0) return false;
  const auto* a0 = static_cast<const unsigned char*>(a->data());
  const auto* b0 = static_cast<const unsigned char*>(b->data());
  return a0 < b0 + b->nbytes() && b0 < a0 + a->nbytes();
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(const Device& device, const Options& options) : device_(device), timeout_(options.timeout) {
    ensure_mpi();
    std::lock_guard lock(mpi_lock());
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Engine engine() const override { return Engine::mpi; }
  Device device() const override { return device_; }
  void abort() override { *aborted_ = true; }  // pending requests are abandoned, never waited for

 protected:
  std::chrono::milliseconds timeout() const override { return timeout_; }

  std::shared_ptr<detail::PendingOp> run(const Call& c) override {
    const std::string what = format_text("{} #{}", c.op, c.seq);
    if (*aborted_)
      throw Error(Errc::comm_error, format_text("xhal::comm (mpi): {}: the communicator was aborted", what));
    auto p = std::make_shared<MpiPending>(what, timeout_, aborted_);
    const TensorView* in = c.in;
    const TensorView* out = c.out;
    for (const TensorView* t : {in, out}) {
      if (t != nullptr && t->numel() * int64_t(size_) > INT_MAX) {
        throw Error(Errc::invalid_argument, format_text("xhal::comm::{}: more than 2^31 - 1 elements per call on the "
                                                        "MPI engine ({} x {} ranks)",
                                                        c.op, t->numel(), size_));
      }
    }
    const DType dtype = (in != nullptr ? in : out) != nullptr ? (in != nullptr ? in : out)->dtype() : DType::f32;
    const MPI_Datatype type = mpi_type(dtype);
    const void* src = in != nullptr ? in->data() : nullptr;
    if (overlap(in, out) && !(c.kind == Kind::all_reduce && in->data() == out->data())) {
      // A copy of the input, so no MPI call reads memory it also writes.
      p->staging.assign(static_cast<const unsigned char*>(in->data()),
                        static_cast<const unsigned char*>(in->data()) + in->nbytes());
      src = p->staging.data();
    }
    MPI_Request r = MPI_REQUEST_NULL;
    std::lock_guard lock(mpi_lock());
    switch (c.kind) {
      case Kind::all_reduce: {
        const int n = int(out->numel());
        check(MPI_Iallreduce(in->data() == out->data() ? MPI_IN_PLACE : src, out->data(), n, type,
                             mpi_op(c.reduce, dtype), comm_, &r),
              what);
        if (c.reduce == ReduceOp::avg)
          p->finish = [out = *out, n, dtype, size = size_] { divide(out.data(), n, dtype, size); };
        break;
      }
      case Kind::all_gather:
        check(MPI_Iallgather(src, int(in->numel()), type, out->data(), int(in->numel()), type, comm_, &r), what);
        break;
      case Kind::reduce_scatter: {
        const int n = int(out->numel());
        check(MPI_Ireduce_scatter_block(src, out->data(), n, type, mpi_op(c.reduce, dtype), comm_, &r), what);
        if (c.reduce == ReduceOp::avg)
          p->finish = [out = *out, n, dtype, size = size_] { divide(out.data(), n, dtype, size); };
        break;
      }
      case Kind::broadcast:
        // The root's input reaches its own output by a copy, then MPI sends the output.
        if (rank_ == c.peer && in->data() != out->data()) std::memmove(out->data(), src, in->nbytes());
        check(MPI_Ibcast(out->data(), int(out->numel()), type, c.peer, comm_, &r), what);
        break;
      case Kind::send: check(MPI_Isend(src, int(in->numel()), type, c.peer, kTag, comm_, &r), what); break;
      case Kind::recv: check(MPI_Irecv(out->data(), int(out->numel()), type, c.peer, kTag, comm_, &r), what); break;
      case Kind::barrier: check(MPI_Ibarrier(comm_, &r), what); break;
    }
    p->requests.push_back(r);
    return p;
  }

 private:
  static constexpr int kTag = 7;
  Device device_;
  std::chrono::milliseconds timeout_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::shared_ptr<std::atomic<bool>> aborted_ = std::make_shared<std::atomic<bool>>(false);
};

// RANK / WORLD_SIZE (or the options) must agree with MPI's view of the job.
void check_bootstrap(const Options& options, int rank, int size) {
  auto expect = [](const char* name, int given, int actual) {
    if (given >= 0 && given != actual) {
      throw Error(Errc::invalid_argument,
                  format_text("xhal::comm::Communicator::create: {} is {} but MPI says {} (launch with mpirun -np "
                              "and leave RANK/WORLD_SIZE unset, or make them agree)",
                              name, given, actual));
    }
  };
  const RankAndSize requested = requested_rank_and_size(options);
  expect("the rank", requested.rank, rank);
  expect("the world size", requested.size, size);
}

std::shared_ptr<Communicator> create(const Device& device, const Options& options) {
  auto comm = std::make_shared<MpiCommunicator>(device, options);
  check_bootstrap(options, comm->rank(), comm->size());
  return comm;
}

}  // namespace
}  // namespace xhal::comm

// The module's one entry point, found by libxhal with dlsym.
extern "C" __attribute__((visibility("default"))) const xhal::comm::MpiEngine* xhal_mpi_engine(void) {
  static const xhal::comm::MpiEngine engine{&xhal::comm::create};
  return &engine;
}
