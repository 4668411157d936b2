// One op in flight on an engine, behind xhal::comm::Work.
#pragma once

#include <chrono>
#include <string>

#include "xhal/comm.hpp"

namespace xhal::comm::detail {

class PendingOp {
 public:
  // what: the op and its sequence number ("all_reduce #3"), for errors.
  PendingOp(std::string what, std::chrono::milliseconds timeout) : what_(std::move(what)), timeout_(timeout) {}
  virtual ~PendingOp() = default;
  // True once complete (finishing touches done); throws Error when the op failed.
  virtual bool poll() = 0;
  // Called when a wait gave up on the op: the engine stops trusting the communicator.
  virtual void timed_out() = 0;
  const std::string& what() const { return what_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::string what_;
  std::chrono::milliseconds timeout_;
};

}  // namespace xhal::comm::detail
