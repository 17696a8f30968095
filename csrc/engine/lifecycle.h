// Lifecycle: the engine's life from start to end — running, shutting down, aborting — as one state machine.
//
// DESIGN. Any thread may ask for a stop (shutdown()) or an abort (a waiter interrupted by a
// signal); the thread that drives (progress.h) acts on both and is the only one that ends the
// engine. The state is an atomic read without a lock; every move goes through move(), which
// checks it against the transitions below. mu_ guards the abort and final statuses.
//
//   kStarting   built; bootstrap (mesh, negotiation, executors) not done.
//                                                        -> kRunning, kEnded (bootstrap failed)
//   kRunning    serving cycles.     -> kDraining (a peer asked to stop), kStopAsked (shutdown()
//                                      here), kAborting, kEnded (an error)
//   kDraining   some peer asked to stop; cycles go on until every rank asks. -> kRunning (no
//               peer asks any more), kStopAsked, kAborting, kEnded
//   kStopAsked  shutdown() asked here; the driving thread has not voted it yet (urgent).
//                                                        -> kStopping, kAborting, kEnded
//   kStopping   this rank votes to stop each cycle; after the grace (since the first vote) it
//               forces the stop.                         -> kAborting, kEnded
//   kAborting   the driving thread ends the engine with the abort's reason at its next look;
//               waits inside collectives give up through abortFlag().          -> kEnded
//   kEnded      every handle failed (or the stop completed). Final.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "common/status.h"

namespace lightcc {

class Lifecycle {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State : uint8_t { kStarting, kRunning, kDraining, kStopAsked, kStopping, kAborting, kEnded };
  static const char* stateName(State s);
  // The transitions listed in the DESIGN block (and staying put); nothing leaves kEnded.
  static bool legalMove(State from, State to);

  State state() const { return state_.load(std::memory_order_acquire); }
  // Enqueue is accepted (from started() until the end).
  bool running() const;
  // This rank asked to stop: its shutdown vote.
  bool stopAsked() const;
  // The driving thread has a stop request to act on at once.
  bool stopUnseen() const { return state() == State::kStopAsked; }
  // Some rank stops: timers run often so a grace can end.
  bool windingDown() const;
  bool aborting() const { return abort_flag_.load(std::memory_order_acquire); }
  // Read by the mesh's waits, so a wait inside a collective gives up on an abort.
  const std::atomic<bool>* abortFlag() const { return &abort_flag_; }

  // Any thread.
  void started();                         // kStarting -> kRunning
  bool requestStop();                     // -> kStopAsked; false when already stopping or ending
  bool requestAbort(const Status& why);   // -> kAborting, the first reason kept; false if not moved
  Status abortStatus() const;             // the abort's reason (OK without one)
  Status finalStatus() const;             // why the engine ended (OK: a shutdown, or not ended)
  // The driving thread.
  // Votes this rank's stop from now on; returns the seconds since its first vote (0 the first time).
  double voteStop(Clock::time_point now);
  void peersStopping(bool pending);       // kRunning <-> kDraining
  void ended(const Status& why);          // -> kEnded; an error becomes finalStatus()

 private:
  bool move(State from, State to);  // the one place the state changes; false if not `from`
  // Moves from whatever the state is to `to` when legal; false when it is not (or already there).
  bool moveFromAny(State to);

  std::atomic<State> state_{State::kStarting};
  std::atomic<bool> abort_flag_{false};
  bool stop_asked_ = false;  // guarded by mu_: an abort after a stop request keeps the vote
  mutable std::mutex mu_;
  Status abort_status_;  // guarded by mu_
  Status final_status_;  // guarded by mu_
  bool voted_ = false;               // the driving thread's: this rank voted to stop
  Clock::time_point stop_voted_at_;  // the driving thread's: when it first did
};

}  // namespace lightcc
