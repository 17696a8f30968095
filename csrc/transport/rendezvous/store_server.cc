// Rendezvous store server: bind/listen, then one poll(2) thread serving every client session.
#include "transport/rendezvous/store_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "transport/rendezvous/store_log.h"

namespace lightcc {
namespace rendezvous {
namespace {

constexpr auto kHandshakeTimeout = std::chrono::seconds(30);
// After accept() runs out of descriptors or memory, wait this long before trying again instead of
// spinning on a listening socket that stays readable.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

Status bindAndListen(const std::string& bind_host, int port, UniqueFd* out, int* bound_port) {
  const std::string host = bind_host.empty() ? "0.0.0.0" : bind_host;
  const std::string where = hostPort(host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (gai != 0) {
    return Status::InvalidArgument("cannot resolve the rendezvous bind address '" + host +
                                   "': getaddrinfo: " + ::gai_strerror(gai));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  Status last = Status::SystemError("no usable address for " + where);
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    const std::string address = formatAddress(ai->ai_addr, ai->ai_addrlen);
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                         ai->ai_protocol));
    if (!fd.valid()) {
      last = Status::SystemError(errnoMessage("socket() for the rendezvous store", errno));
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = Status::SystemError(errnoMessage("bind(" + address + ") for the rendezvous store " +
                                                  "(is another job using this port?)",
                                              errno));
      continue;
    }
    if (::listen(fd.get(), SOMAXCONN) != 0) {
      last = Status::SystemError(errnoMessage("listen(" + address + ")", errno));
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
      return Status::SystemError(errnoMessage("getsockname on the rendezvous store", errno));
    }
    *bound_port = bound.ss_family == AF_INET6
                      ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    *out = std::move(fd);
    return Status::OK();
  }
  return last;
}

std::atomic<uint64_t> g_started{0};  // servers this process started (StoreServer::startedCount)

}  // namespace

uint64_t StoreServer::startedCount() { return g_started.load(std::memory_order_relaxed); }

Status StoreServer::start(const std::string& bind_host, int port, const std::string& secret,
                          uint64_t generation, std::unique_ptr<StoreServer>* out) {
  if (secret.empty()) {
    return Status::InvalidArgument("the rendezvous store needs a non-empty job secret " +
                                   std::string("(LIGHTCC_JOB_SECRET)"));
  }
  if (port < 0 || port > 65535) {
    return Status::InvalidArgument("rendezvous store port " + std::to_string(port) +
                                   " is out of range 0..65535");
  }
  UniqueFd listen_fd;
  int bound_port = 0;
  LIGHTCC_RETURN_IF_ERROR(bindAndListen(bind_host, port, &listen_fd, &bound_port));
  UniqueFd wake_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd.valid()) {
    return Status::SystemError(errnoMessage("eventfd for the rendezvous store", errno));
  }
  *out = std::make_unique<StoreServer>(PassKey{}, std::move(listen_fd), std::move(wake_fd),
                                       bound_port, secret, generation);
  g_started.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

StoreServer::StoreServer(PassKey, UniqueFd listen_fd, UniqueFd wake_fd, int port,
                         const std::string& secret, uint64_t generation)
    : listen_fd_(std::move(listen_fd)), wake_fd_(std::move(wake_fd)), port_(port) {
  ctx_.secret = secret;
  ctx_.generation = generation;
  thread_ = std::thread([this] { run(); });
}

StoreServer::~StoreServer() {
  stopping_.store(true);
  const uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_.get(), &one, sizeof(one));
  (void)ignored;  // a full eventfd counter still wakes the thread
  if (thread_.joinable()) thread_.join();
}

int StoreServer::pollTimeoutMs() const {
  Clock::time_point next = Clock::time_point::max();
  for (const auto& entry : sessions_) next = std::min(next, entry.second->nextDeadline());
  if (accept_paused_until_ > Clock::now()) next = std::min(next, accept_paused_until_);
  if (next == Clock::time_point::max()) return -1;
  return Deadline(next).remainingMs();
}

void StoreServer::run() {
  std::vector<pollfd> fds;
  std::vector<StoreSession*> polled;
  while (!stopping_.load()) {
    fds.clear();
    polled.clear();
    fds.push_back({wake_fd_.get(), POLLIN, 0});
    const bool accepting = Clock::now() >= accept_paused_until_;
    fds.push_back({accepting ? listen_fd_.get() : -1, POLLIN, 0});
    for (auto& entry : sessions_) {
      fds.push_back({entry.second->fd(), entry.second->pollEvents(), 0});
      polled.push_back(entry.second.get());
    }
    int ready = ::poll(fds.data(), fds.size(), pollTimeoutMs());
    if (ready < 0 && errno != EINTR) {
      storeLog(errnoMessage("poll failed; the store stops serving", errno));
      return;
    }
    if (stopping_.load()) return;
    if (fds[1].revents & POLLIN) acceptAll();
    for (size_t i = 0; i < polled.size(); ++i) {
      const short revents = fds[i + 2].revents;
      StoreSession* session = polled[i];
      if (revents & (POLLIN | POLLHUP | POLLERR)) session->onReadable(ctx_);
      if ((revents & POLLOUT) && !session->closed()) session->onWritable(ctx_);
      resumeWoken();
    }
    const Clock::time_point now = Clock::now();
    for (auto& entry : sessions_) {
      entry.second->onTimer(ctx_, now);
      resumeWoken();
    }
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      it = it->second->closed() ? sessions_.erase(it) : std::next(it);
    }
  }
}

void StoreServer::resumeWoken() {
  while (!ctx_.woken.empty()) {
    std::vector<uint64_t> woken;
    woken.swap(ctx_.woken);
    for (uint64_t id : woken) {
      auto it = sessions_.find(id);
      if (it != sessions_.end()) it->second->onKeysChanged(ctx_);
    }
  }
}

void StoreServer::acceptAll() {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t length = sizeof(peer);
    int fd = ::accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&peer), &length,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      storeLog(errnoMessage("accept on port " + std::to_string(port_) +
                                " (new clients wait 100 ms; raise the open-file limit if EMFILE)",
                            errno));
      accept_paused_until_ = Clock::now() + kAcceptPause;
      return;
    }
    UniqueFd client(fd);
    int one = 1;
    ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const uint64_t id = next_session_id_++;
    sessions_.emplace(id, std::make_unique<StoreSession>(
                              id, std::move(client),
                              formatAddress(reinterpret_cast<sockaddr*>(&peer), length),
                              Clock::now() + kHandshakeTimeout));
  }
}

}  // namespace rendezvous
}  // namespace lightcc
