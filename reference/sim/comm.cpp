// sim/comm.cpp: mailboxes and trace recording for SimComm (see comm.h).
#include "comm.h"

#include <stdexcept>

#include "core/interrupt.h"

namespace cplab {

SimComm::SimComm(int cp, Trace* trace) : cp_(cp), trace_(trace) {
  if (cp < 1) throw std::logic_error("SimComm needs cp >= 1");
}

size_t SimComm::pending() const {
  size_t n = 0;
  for (const auto& [key, q] : box_) n += q.size();
  return n;
}

void SimComm::check_rank(int r, const char* what) const {
  if (r < 0 || r >= cp_)
    throw std::logic_error(std::string("SimComm: ") + what + " rank " + std::to_string(r) +
                           " outside [0, " + std::to_string(cp_) + ")");
}

void SimComm::record(EventKind kind, int rank, int peer, const std::string& tensor, const std::string& op,
                     std::int64_t bytes) {
  if (!trace_) return;
  trace_->add(message_event(kind, phase_, step_, rank, peer, tensor, op, bytes));
}

void SimComm::post(int src, int dst, const std::string& tensor, const std::string& op,
                   std::vector<std::byte> bytes) {
  interruption_point();  // every step of every mode passes here (core/interrupt.h)
  check_rank(src, "source");
  check_rank(dst, "destination");
  record(EventKind::send, src, dst, tensor, op, static_cast<std::int64_t>(bytes.size()));
  box_[{src, dst}].push_back(Message{tensor, op, std::move(bytes)});
}

std::vector<std::byte> SimComm::take(int dst, int src, const std::string& tensor, const std::string& op) {
  interruption_point();
  check_rank(src, "source");
  check_rank(dst, "destination");
  auto it = box_.find({src, dst});
  if (it == box_.end() || it->second.empty())
    throw std::logic_error("SimComm: rank " + std::to_string(dst) + " receives '" + tensor + "' from rank " +
                           std::to_string(src) + " but nothing was sent: the schedule would hang");
  Message m = std::move(it->second.front());
  it->second.pop_front();
  if (m.tensor != tensor || m.op != op)
    throw std::logic_error("SimComm: rank " + std::to_string(dst) + " expects " + op + " '" + tensor +
                           "' from rank " + std::to_string(src) + " but the next message is " + m.op +
                           " '" + m.tensor + "'");
  record(EventKind::recv, dst, src, tensor, op, static_cast<std::int64_t>(m.bytes.size()));
  return std::move(m.bytes);
}

}  // namespace cplab
