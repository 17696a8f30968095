// Tests Lifecycle — the engine's running / stopping / aborting / ended states — with real threads.
//
// The cases are the orders the engine meets: a shutdown voted and its grace timed from the first
// vote, peers draining and recovering, an abort that overtakes a stop (the vote is kept), many
// threads aborting at once (one reason wins, the flag the mesh reads is set), and the end, which
// nothing leaves. tests/single/test_cpp_units.py builds and runs it.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "engine/lifecycle.h"

using namespace lightcc;
using lightcc::testing::check;
using S = Lifecycle::State;

namespace {

void testLegalMoves() {
  check(Lifecycle::legalMove(S::kStarting, S::kRunning) && Lifecycle::legalMove(S::kRunning, S::kDraining) &&
            Lifecycle::legalMove(S::kDraining, S::kRunning) && Lifecycle::legalMove(S::kStopAsked, S::kStopping) &&
            Lifecycle::legalMove(S::kStopping, S::kAborting) && Lifecycle::legalMove(S::kAborting, S::kEnded),
        "listed moves are legal");
  check(!Lifecycle::legalMove(S::kStarting, S::kStopAsked) && !Lifecycle::legalMove(S::kStopping, S::kRunning) &&
            !Lifecycle::legalMove(S::kAborting, S::kRunning) && !Lifecycle::legalMove(S::kEnded, S::kRunning) &&
            !Lifecycle::legalMove(S::kStopping, S::kStopAsked),
        "unlisted moves are illegal");
  for (int f = 0; f <= static_cast<int>(S::kEnded); ++f) {
    const S from = static_cast<S>(f);
    check(Lifecycle::legalMove(from, from), std::string("staying in ") + Lifecycle::stateName(from) + " is legal");
    if (from != S::kEnded) check(!Lifecycle::legalMove(S::kEnded, from), "nothing leaves ended");
  }
}

void testShutdown() {
  Lifecycle life;
  check(!life.running(), "not running before started()");
  life.started();
  check(life.running() && !life.stopAsked() && !life.windingDown(), "running");
  check(life.requestStop(), "a stop request moves");
  check(life.stopUnseen() && life.stopAsked() && !life.windingDown(), "stop asked, not yet voted");
  check(!life.requestStop(), "a second request does not move");
  const auto t0 = Lifecycle::Clock::now();
  check(life.voteStop(t0) == 0.0, "the grace starts at the first vote");
  check(life.state() == S::kStopping && !life.stopUnseen() && life.windingDown(), "stopping after the vote");
  const double later = life.voteStop(t0 + std::chrono::seconds(3));
  check(later > 2.9 && later < 3.1, "the grace is timed from the first vote");
  life.ended(Status::OK());
  check(life.state() == S::kEnded && !life.running() && life.finalStatus().ok(), "a shutdown ends OK");
}

void testPeersDraining() {
  Lifecycle life;
  life.started();
  life.peersStopping(true);
  check(life.state() == S::kDraining && life.windingDown() && !life.stopAsked(), "draining while a peer stops");
  life.peersStopping(false);
  check(life.state() == S::kRunning, "back to running when no peer asks");
  life.peersStopping(true);
  life.requestStop();
  life.voteStop(Lifecycle::Clock::now());
  life.peersStopping(false);
  check(life.state() == S::kStopping, "a rank that voted to stop keeps stopping");
}

void testAbortOvertakesStop() {
  Lifecycle life;
  life.started();
  life.requestStop();
  check(life.requestAbort(Status::Cancelled("rank 0 was interrupted")), "an abort overtakes a stop");
  check(life.state() == S::kAborting && life.aborting() && life.abortFlag()->load(), "aborting, flag set");
  check(life.stopAsked(), "the stop vote survives the abort");
  check(!life.requestStop(), "no stop after an abort");
  check(!life.requestAbort(Status::Aborted("second")), "the first abort wins");
  check(life.abortStatus().message() == "rank 0 was interrupted", "its reason is kept");
  life.ended(life.abortStatus());
  check(life.finalStatus().code() == StatusCode::kCancelled, "the end carries the reason");
  life.ended(Status::Internal("later"));
  check(life.finalStatus().code() == StatusCode::kCancelled, "a second end changes nothing");
  check(!life.requestAbort(Status::Aborted("after")), "no abort after the end");
}

void testConcurrentAborts() {
  for (int round = 0; round < 50; ++round) {
    Lifecycle life;
    life.started();
    std::atomic<int> won{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        if (t == 0) life.requestStop();
        if (life.requestAbort(Status::Aborted("thread " + std::to_string(t)))) won.fetch_add(1);
      });
    }
    for (auto& t : threads) t.join();
    if (won.load() != 1 || life.state() != S::kAborting || life.abortStatus().ok()) {
      check(false, "round " + std::to_string(round) + ": one abort wins, with its reason");
      return;
    }
  }
  check(true, "one abort wins in every round");
}

void testBootstrapFailure() {
  Lifecycle life;
  life.ended(Status::PeerFailure("rank 1 never connected"));
  check(life.state() == S::kEnded && !life.running() && !life.finalStatus().ok(), "a failed start ends");
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  std::printf("%s\n", "LegalMoves"); testLegalMoves();
  std::printf("%s\n", "Shutdown"); testShutdown();
  std::printf("%s\n", "PeersDraining"); testPeersDraining();
  std::printf("%s\n", "AbortOvertakesStop"); testAbortOvertakesStop();
  std::printf("%s\n", "ConcurrentAborts"); testConcurrentAborts();
  std::printf("%s\n", "BootstrapFailure"); testBootstrapFailure();
  return testing::summary();
}
