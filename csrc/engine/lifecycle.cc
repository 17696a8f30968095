// Lifecycle: the engine's start-to-end state machine (see lifecycle.h for the states and moves).
#include "engine/lifecycle.h"

#include "common/logging.h"

namespace lightcc {
namespace {
using S = Lifecycle::State;

bool legalImpl(S from, S to) {
  if (from == to) return true;
  switch (from) {
    case S::kStarting: return to == S::kRunning || to == S::kEnded;
    case S::kRunning: return to == S::kDraining || to == S::kStopAsked || to == S::kAborting || to == S::kEnded;
    case S::kDraining: return to == S::kRunning || to == S::kStopAsked || to == S::kAborting || to == S::kEnded;
    case S::kStopAsked: return to == S::kStopping || to == S::kAborting || to == S::kEnded;
    case S::kStopping: return to == S::kAborting || to == S::kEnded;
    case S::kAborting: return to == S::kEnded;
    case S::kEnded: return false;
  }
  return false;
}
}  // namespace

bool Lifecycle::legalMove(State from, State to) { return legalImpl(from, to); }

const char* Lifecycle::stateName(State s) {
  switch (s) {
    case S::kStarting: return "starting";
    case S::kRunning: return "running";
    case S::kDraining: return "draining";
    case S::kStopAsked: return "stop asked";
    case S::kStopping: return "stopping";
    case S::kAborting: return "aborting";
    case S::kEnded: return "ended";
  }
  return "?";
}

bool Lifecycle::move(State from, State to) {
  if (!legalMove(from, to)) {
    LIGHTCC_LOG(kError) << "lifecycle: illegal move " << stateName(from) << " -> " << stateName(to);
    return false;
  }
  return state_.compare_exchange_strong(from, to, std::memory_order_acq_rel);
}

bool Lifecycle::moveFromAny(State to) {
  // Another thread may move between the load and the exchange (an abort during a stop): retry.
  for (State from = state(); from != to && legalMove(from, to); from = state()) {
    if (move(from, to)) return true;
  }
  return false;
}

bool Lifecycle::running() const {
  const State s = state();
  return s != State::kStarting && s != State::kEnded;
}

bool Lifecycle::stopAsked() const {
  const State s = state();
  if (s == State::kStopAsked || s == State::kStopping) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return stop_asked_;
}

bool Lifecycle::windingDown() const {
  const State s = state();
  return s == State::kDraining || s == State::kStopping;
}

void Lifecycle::started() { move(State::kStarting, State::kRunning); }

bool Lifecycle::requestStop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_asked_ = true;
  return moveFromAny(State::kStopAsked);
}

bool Lifecycle::requestAbort(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!moveFromAny(State::kAborting)) return false;
  abort_status_ = why;
  abort_flag_.store(true, std::memory_order_release);
  return true;
}

Status Lifecycle::abortStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return abort_status_;
}

Status Lifecycle::finalStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return final_status_;
}

double Lifecycle::voteStop(Clock::time_point now) {
  move(State::kStopAsked, State::kStopping);
  if (!voted_) {  // an abort may have overtaken the request: the grace still starts here
    voted_ = true;
    stop_voted_at_ = now;
  }
  return std::chrono::duration<double>(now - stop_voted_at_).count();
}

void Lifecycle::peersStopping(bool pending) {
  if (pending) {
    move(State::kRunning, State::kDraining);
  } else {
    move(State::kDraining, State::kRunning);
  }
}

void Lifecycle::ended(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state() == State::kEnded) return;
  if (!why.ok()) final_status_ = why;
  moveFromAny(State::kEnded);
}

}  // namespace lightcc
