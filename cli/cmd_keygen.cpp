// `memwatch keygen DIR [--force]`: CurveZMQ keys for a daemon and the nodes that report to it.
// DIR (made with mode 0700) gets the daemon's pair (server.key, server.pub) and a client pair
// (client.key, client.pub), each key as Z85 text; the secret keys are mode 0600.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>

#include "args.hpp"
#include "memwatch/protocol/curve_keys.hpp"

namespace memwatch::cli {

namespace {

namespace fs = std::filesystem;

struct KeyPair {
  char public_z85[41];
  char secret_z85[41];
};

KeyPair make_pair() {
  KeyPair pair{};
  if (zmq_curve_keypair(pair.public_z85, pair.secret_z85) != 0)
    throw std::runtime_error(std::string("cannot make a CURVE key pair: ") + zmq_strerror(errno));
  return pair;
}

// The folder, made private when we make it; a folder already there keeps its mode (the secret
// files are private themselves).
void make_folder(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir.string() + " is not a folder");
    return;
  }
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  if (chmod(dir.c_str(), 0700) != 0)
    throw std::runtime_error("cannot make " + dir.string() + " private (mode 0700)");
}

void write_key(const fs::path& file, const char* z85, mode_t mode) {
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  // The mode before the key goes in: a file replaced with --force may have been readable.
  bool ok = fd >= 0 && fchmod(fd, mode) == 0;
  const std::string text = std::string(z85) + "\n";
  ok = ok && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  if (fd >= 0) ok = close(fd) == 0 && ok;
  if (!ok) throw std::runtime_error("cannot write " + file.string() + ": " + std::strerror(saved));
}

constexpr Option kOptions[] = {
    {"force", "", "replace keys DIR holds already (nodes holding the old ones are then refused)"},
};

}  // namespace

std::string help_keygen() {
  return usage_text("keygen", {"DIR [--force]",
                               "Makes CurveZMQ keys in DIR (mode 0700): the daemon's pair "
                               "(server.key, server.pub) and a client pair for the nodes "
                               "(client.key, client.pub), secret keys mode 0600.",
                               kOptions});
}

int cmd_keygen(std::span<char* const> argv) {
  const Args args(argv, kOptions);
  if (args.positional().size() != 1) throw UsageError("expected one folder: keygen DIR [--force]");
  if (zmq_has("curve") == 0)
    throw std::runtime_error("this libzmq was built without CURVE (libsodium): no keys to make");
  const fs::path dir = args.positional()[0];
  const std::string_view names[] = {protocol::kServerSecretFile, protocol::kServerPublicFile,
                                    protocol::kClientSecretFile, protocol::kClientPublicFile};
  if (!args.flag("force")) {
    for (std::string_view name : names) {
      std::error_code ec;
      if (fs::exists(dir / name, ec) || fs::is_symlink(dir / name, ec))
        throw std::runtime_error((dir / name).string() +
                                 " exists: keys are not overwritten (--force replaces them; "
                                 "nodes holding the old keys are then refused)");
    }
  }
  make_folder(dir);
  const KeyPair server = make_pair();
  const KeyPair client = make_pair();
  write_key(dir / protocol::kServerSecretFile, server.secret_z85, 0600);
  write_key(dir / protocol::kServerPublicFile, server.public_z85, 0644);
  write_key(dir / protocol::kClientSecretFile, client.secret_z85, 0600);
  write_key(dir / protocol::kClientPublicFile, client.public_z85, 0644);
  std::printf(
      "CurveZMQ keys in %s:\n"
      "  the daemon:  memwatchd --curve-keys %s   (reads server.key, client.pub, clients/*.pub)\n"
      "  each node:   a copy of server.pub, client.key and client.pub in a private folder,\n"
      "               named by MEMWATCH_CURVE_KEYS (the shim) or --curve-keys (memwatch status)\n",
      dir.c_str(), dir.c_str());
  return 0;
}

}  // namespace memwatch::cli
