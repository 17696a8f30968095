// Socket helpers: addresses, non-blocking TCP sockets, and resumable exact-length I/O.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace harp {

union SockAddr {
  sockaddr sa;
  sockaddr_in sin;
  sockaddr_in6 sin6;
};

socklen_t harpAddrLen(const SockAddr& a);
std::string harpAddrToString(const SockAddr& a);

// Creates a non-blocking, close-on-exec TCP socket with TCP_NODELAY for the address family.
int harpTcpSocket(int family, std::string* err);

// Result of one resumable I/O step on a non-blocking socket.
enum class IoStep { kDone, kAgain, kClosed, kError };

// Writes buf[*done .. len) as far as possible, advancing *done. *err = errno on kError.
IoStep harpWriteSome(int fd, const uint8_t* buf, size_t len, size_t* done, int* err);
// Reads into buf[*done .. len) as far as possible. kClosed on orderly EOF before len.
IoStep harpReadSome(int fd, uint8_t* buf, size_t len, size_t* done, int* err);

// True when the connected socket's peer address belongs to this network namespace (loopback or
// one of our own interfaces): the kernel then delivers locally and copies every byte anyway.
bool harpPeerIsLocal(int fd);

// 16 random bytes from getrandom(2) (falls back to /dev/urandom).
bool harpRandomBytes(void* out, size_t len);

double harpNowSeconds();

}  // namespace harp
