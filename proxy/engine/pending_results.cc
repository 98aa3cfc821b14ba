// PendingResults: the entries' bookkeeping under one lock; the records outside it.
#include "proxy/engine/pending_results.h"

namespace gdrproxy::proxy {

uint32_t PendingResults::take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.empty()) {
    calls_.emplace_back();
    states_.push_back(State::kTaken);
    return static_cast<uint32_t>(calls_.size() - 1);
  }
  const uint32_t index = free_.back();
  free_.pop_back();
  states_[index] = State::kTaken;
  return index;
}

PendingResults::Call& PendingResults::at(uint32_t index) {
  std::lock_guard<std::mutex> lock(mu_);  // the deque's map may be growing meanwhile
  return calls_[index];
}

void PendingResults::publish(uint32_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  states_[index] = State::kWaiting;
}

PendingResults::Call* PendingResults::claim(uint32_t index, uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= states_.size() || states_[index] != State::kWaiting ||
      calls_[index].record.seq != seq)
    return nullptr;
  states_[index] = State::kClaimed;
  return &calls_[index];
}

void PendingResults::release(uint32_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  states_[index] = State::kFree;
  free_.push_back(index);
}

std::vector<PendingResults::Waiting> PendingResults::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Waiting> w;
  for (uint32_t i = 0; i < states_.size(); ++i)
    if (states_[i] == State::kWaiting) w.push_back({i, calls_[i].tid, calls_[i].record.seq});
  return w;
}

}  // namespace gdrproxy::proxy
