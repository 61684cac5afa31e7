// The CurveZMQ key folder that `memwatch keygen DIR` makes and every side reads: the daemon's
// pair (server.key, server.pub), one client pair (client.key, client.pub), and more client
// public keys under clients/*.pub. Each file is one key as 40 characters of Z85 (RFC 32).
// POSIX reads only, no iostreams: the shim reads these too.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace memwatch::protocol {

using CurveKey = std::array<std::uint8_t, 32>;

inline constexpr std::string_view kServerSecretFile = "server.key";
inline constexpr std::string_view kServerPublicFile = "server.pub";
inline constexpr std::string_view kClientSecretFile = "client.key";
inline constexpr std::string_view kClientPublicFile = "client.pub";
inline constexpr std::string_view kMoreClientsDir = "clients";
inline constexpr std::size_t kZ85KeyChars = 40;

// Decodes a key's 40 Z85 characters; false for any other text.
inline bool z85_decode_key(std::string_view text, CurveKey& key) {
  constexpr std::string_view alphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (text.size() != kZ85KeyChars) return false;
  for (std::size_t group = 0; group < kZ85KeyChars / 5; ++group) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < 5; ++i) {
      const std::size_t digit = alphabet.find(text[group * 5 + i]);
      if (digit == std::string_view::npos) return false;
      value = value * 85 + digit;
    }
    if (value > 0xffffffffu) return false;  // five characters may spell more than four bytes
    for (std::size_t i = 0; i < 4; ++i)
      key[group * 4 + i] = static_cast<std::uint8_t>(value >> (24 - 8 * i));
  }
  return true;
}

// Reads one key file (whitespace around the key allowed). On failure says why in `error`,
// naming the file.
inline bool read_curve_key(const std::string& path, CurveKey& key, std::string& error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  char text[128];
  std::size_t size = 0;
  ssize_t n = 0;
  while (size < sizeof text && (n = read(fd, text + size, sizeof text - size)) > 0)
    size += static_cast<std::size_t>(n);
  const int read_errno = errno;
  close(fd);
  if (n < 0) {
    error = "cannot read " + path + ": " + std::strerror(read_errno);
    return false;
  }
  constexpr std::string_view space = " \t\r\n";
  std::string_view body(text, size);
  while (!body.empty() && space.find(body.front()) != std::string_view::npos) body.remove_prefix(1);
  while (!body.empty() && space.find(body.back()) != std::string_view::npos) body.remove_suffix(1);
  if (size == sizeof text || !z85_decode_key(body, key)) {
    error = path +
            " is not a CURVE key (expected 40 characters of Z85, as `memwatch keygen` "
            "writes them)";
    return false;
  }
  return true;
}

// What a client (a shim, the CLI) needs from the folder.
struct CurveClientKeys {
  CurveKey server_public;
  CurveKey client_public;
  CurveKey client_secret;
};

inline bool read_client_keys(const std::string& dir, CurveClientKeys& keys, std::string& error) {
  const std::string base = dir.ends_with('/') ? dir : dir + "/";
  return read_curve_key(base + std::string(kServerPublicFile), keys.server_public, error) &&
         read_curve_key(base + std::string(kClientPublicFile), keys.client_public, error) &&
         read_curve_key(base + std::string(kClientSecretFile), keys.client_secret, error);
}

}  // namespace memwatch::protocol
