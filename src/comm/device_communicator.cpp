// Communicators of accelerator devices: the backend plugin's collectives (xhal_comm_api: NCCL for
// cuda, RCCL for hip). Rank 0 makes the engine's id, bootstrap.cpp hands it to every rank; ops are
// enqueued on the caller's stream (else the device's current one) and a Work is an event recorded
// after the op, polled together with the engine's asynchronous error.
#include "core/text_format.hpp"

#include <mutex>
#include <vector>

#include "comm/bootstrap.hpp"
#include "comm/engines.hpp"
#include "comm/pending_op.hpp"
#include "core/runtime.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/error.hpp"

namespace xhal::comm {
namespace {

class DeviceCommunicator;

class DevicePending final : public detail::PendingOp {
 public:
  DevicePending(std::string what, std::chrono::milliseconds timeout, std::shared_ptr<DeviceCommunicator> comm,
                void* event)
      : PendingOp(std::move(what), timeout), comm_(std::move(comm)), event_(event) {}
  ~DevicePending() override;
  void* event() const { return event_; }
  bool poll() override;
  void timed_out() override;

 private:
  std::shared_ptr<DeviceCommunicator> comm_;
  void* event_;
  bool done_ = false;
};

class DeviceCommunicator final : public Communicator, public std::enable_shared_from_this<DeviceCommunicator> {
 public:
  DeviceCommunicator(const Device& device, const Options& options)
      : device_(device), timeout_(options.timeout), api_(Runtime::get().api(device)) {
    engine_ = api_.comm;
    if (engine_ == nullptr) {
      throw Error(Errc::unsupported, format_text("{}: the {} backend has no collectives engine", kWho, device.str()));
    }
    const RankAndSize who = resolve_rank_and_size(options);
    rank_ = who.rank, size_ = who.size;
    std::vector<unsigned char> id(XHAL_COMM_ID_BYTES);
    char msg[512] = {};
    if (rank_ == 0) throw_if(engine_->make_id(engine_->self, id.data(), msg, sizeof msg), msg);
    share_from_rank0(id, who, timeout_);
    throw_if(engine_->create(engine_->self, device.index, id.data(), rank_, size_, int64_t(timeout_.count()), &comm_,
                             msg, sizeof msg),
             msg);
    void* scratch = nullptr;
    plugin_call<&xhal_plugin_api::mem_alloc>(api_, "allocating the barrier's scratch", device.index, sizeof(float),
                                             &scratch);
    scratch_ = scratch;
  }
  ~DeviceCommunicator() override {
    if (comm_ != nullptr) (aborted_ ? engine_->abort : engine_->destroy)(comm_);
    if (scratch_ != nullptr) plugin_call_unchecked<&xhal_plugin_api::mem_release>(api_, device_.index, scratch_);
    for (void* event : spare_events_)
      plugin_call_unchecked<&xhal_plugin_api::event_destroy>(api_, device_.index, event);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Engine engine() const override { return device_.type == DeviceType::hip ? Engine::rccl : Engine::nccl; }
  Device device() const override { return device_; }
  void abort() override {
    if (!aborted_.exchange(true) && comm_ != nullptr) {
      engine_->abort(comm_);
      comm_ = nullptr;
    }
  }

  // The engine's asynchronous error, as Error(comm_error) naming `what`.
  void check_health(const std::string& what) {
    if (aborted_)
      throw Error(Errc::comm_error, format_text("xhal::comm ({}): {}: the communicator was aborted", name(), what));
    char msg[512] = {};
    if (engine_->check(comm_, msg, sizeof msg) != XHAL_OK) {
      abort();
      throw Error(Errc::comm_error,
                  format_text("xhal::comm ({}): {}: {}; the communicator is aborted", name(), what, msg));
    }
  }
  const xhal_plugin_api& api() const { return api_; }

  // Completion events are reused: creating one per op cost about a tenth of a small all_reduce.
  void* take_event() {
    {
      std::lock_guard lock(events_mutex_);
      if (!spare_events_.empty()) {
        void* event = spare_events_.back();
        spare_events_.pop_back();
        return event;
      }
    }
    void* event = nullptr;
    plugin_call<&xhal_plugin_api::event_create>(api_, "creating a completion event", device_.index, &event);
    return event;
  }
  void give_back_event(void* event) {
    std::lock_guard lock(events_mutex_);
    spare_events_.push_back(event);
  }

 protected:
  std::chrono::milliseconds timeout() const override { return timeout_; }

  std::shared_ptr<detail::PendingOp> run(const Call& c) override {
    const std::string what = format_text("{} #{}", c.op, c.seq);
    check_health(what);
    check_in_place(c);
    void* stream =
        c.stream != nullptr ? c.stream->native() : DeviceManager::instance().current_stream(device_).native();
    const TensorView* t = c.in != nullptr ? c.in : c.out;
    const auto reduce = static_cast<xhal_reduce>(c.reduce);
    // The vendor call: which op, its buffers, and its count (per rank for the gathers).
    xhal_comm_op op = XHAL_COMM_ALL_REDUCE;
    const void* in = c.in != nullptr ? c.in->data() : nullptr;
    void* out = c.out != nullptr ? c.out->data() : nullptr;
    size_t count = c.out != nullptr ? size_t(c.out->numel()) : 0;
    xhal_dtype type = t != nullptr ? static_cast<xhal_dtype>(t->dtype()) : XHAL_DTYPE_F32;
    switch (c.kind) {
      case Kind::all_reduce: op = XHAL_COMM_ALL_REDUCE; break;
      case Kind::all_gather: op = XHAL_COMM_ALL_GATHER, count = size_t(c.in->numel()); break;
      case Kind::reduce_scatter: op = XHAL_COMM_REDUCE_SCATTER; break;
      case Kind::broadcast: op = XHAL_COMM_BROADCAST; break;
      case Kind::send: op = XHAL_COMM_SEND, count = size_t(c.in->numel()); break;
      case Kind::recv: op = XHAL_COMM_RECV; break;
      case Kind::barrier:  // an all_reduce of one float of scratch
        in = out = scratch_, count = 1, type = XHAL_DTYPE_F32;
        break;
    }
    char msg[512] = {};
    const xhal_status s = engine_->enqueue(comm_, op, in, out, count, type, reduce, c.peer, stream, msg, sizeof msg);
    if (s != XHAL_OK) throw Error(Errc::comm_error, format_text("xhal::comm ({}): {}: {}", name(), what, msg));
    auto pending = std::make_shared<DevicePending>(what, timeout_, shared_from_this(), take_event());
    plugin_call<&xhal_plugin_api::event_record>(api_, "recording a completion event", device_.index, pending->event(),
                                                stream);
    return pending;
  }

 private:
  static constexpr const char* kWho = "xhal::comm::Communicator::create";
  std::string name() const { return std::string(engine_name(engine())); }
  [[noreturn]] void fail(xhal_status s, const char* msg) const {
    throw Error(s == XHAL_ERR_UNSUPPORTED ? Errc::unsupported
                : s == XHAL_ERR_TIMEOUT   ? Errc::timeout
                                          : Errc::comm_error,
                format_text("{} ({} on {}): {}", kWho, engine_->engine, device_.str(), msg));
  }
  void throw_if(xhal_status s, const char* msg) const {
    if (s != XHAL_OK) fail(s, msg);
  }
  // The vendor libraries define in place only as out == in (all_reduce, broadcast) or one's block
  // of the other (all_gather, reduce_scatter); any other overlap is refused.
  void check_in_place(const Call& c) const {
    if (c.in == nullptr || c.out == nullptr || c.in->numel() == 0 || c.out->numel() == 0) return;
    const auto* in = static_cast<const unsigned char*>(c.in->data());
    const auto* out = static_cast<const unsigned char*>(c.out->data());
    if (!(in < out + c.out->nbytes() && out < in + c.in->nbytes())) return;
    bool allowed = in == out;
    if (c.kind == Kind::all_gather) allowed = in == out + size_t(rank_) * c.in->nbytes();
    if (c.kind == Kind::reduce_scatter) allowed = out == in + size_t(rank_) * c.out->nbytes();
    if (!allowed) {
      throw Error(Errc::invalid_argument,
                  format_text("xhal::comm::{}: argument 'out': overlaps 'in' other than in place ({})", c.op,
                              c.kind == Kind::all_gather       ? "'in' must be this rank's block of 'out'"
                              : c.kind == Kind::reduce_scatter ? "'out' must be this rank's block of 'in'"
                                                               : "'out' must be 'in'"));
    }
  }

  Device device_;
  std::chrono::milliseconds timeout_;
  const xhal_plugin_api& api_;
  const xhal_comm_api* engine_ = nullptr;
  void* comm_ = nullptr;
  void* scratch_ = nullptr;
  int rank_ = 0, size_ = 1;
  std::atomic<bool> aborted_{false};
  std::mutex events_mutex_;
  std::vector<void*> spare_events_;
};

DevicePending::~DevicePending() { comm_->give_back_event(event_); }

bool DevicePending::poll() {
  if (done_) return true;
  comm_->check_health(what());
  PluginMessage message;
  const xhal_status s =
      plugin_status<&xhal_plugin_api::event_query>(comm_->api(), message, comm_->device().index, event_);
  if (s == XHAL_NOT_READY) return false;
  if (s != XHAL_OK) throw_plugin_failure(s, "waiting for a collective", message);
  done_ = true;
  return true;
}

void DevicePending::timed_out() { comm_->abort(); }

}  // namespace

std::shared_ptr<Communicator> create_device_communicator(const Device& device, const Options& options) {
  return std::make_shared<DeviceCommunicator>(device, options);
}

}  // namespace xhal::comm
