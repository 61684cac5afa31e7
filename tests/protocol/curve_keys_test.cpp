// The key files: Z85 decodes as RFC 32 says, and every file that is not one key is refused with
// its path named.
#include "memwatch/protocol/curve_keys.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "process.hpp"

using namespace memwatch::protocol;

namespace {

// RFC 32's example: these eight bytes are "HelloWorld".
constexpr std::uint8_t kHello[] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
const std::string kHelloKey = "HelloWorldHelloWorldHelloWorldHelloWorld";

class KeyFolder : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  memwatch::test::TempDir temp_;
  const std::string dir_ = temp_.path();
};

TEST(Z85, DecodesTheRfcExampleAndRefusesEverythingElse) {
  CurveKey key{};
  ASSERT_TRUE(z85_decode_key(kHelloKey, key));
  for (std::size_t i = 0; i < key.size(); ++i) EXPECT_EQ(key[i], kHello[i % 8]) << i;
  EXPECT_FALSE(z85_decode_key(kHelloKey.substr(1), key));
  EXPECT_FALSE(z85_decode_key(kHelloKey + "H", key));
  EXPECT_FALSE(z85_decode_key("\"" + kHelloKey.substr(1), key));
  EXPECT_FALSE(z85_decode_key("#####" + kHelloKey.substr(5), key));  // more than 32 bits
}

TEST_F(KeyFolder, AKeyFileMayEndInANewlineAndNothingElse) {
  CurveKey key{};
  std::string error;
  EXPECT_TRUE(read_curve_key(write("a.pub", kHelloKey + "\n"), key, error)) << error;
  EXPECT_EQ(key[0], 0x86);
  for (const std::string& bad : {std::string(""), kHelloKey + " x", std::string(200, 'a')}) {
    const std::string path = write("bad.pub", bad);
    EXPECT_FALSE(read_curve_key(path, key, error));
    EXPECT_EQ(error.find(path + " is not a CURVE key"), 0u) << error;
  }
  EXPECT_FALSE(read_curve_key(dir_ + "/none.pub", key, error));
  EXPECT_EQ(error.find("cannot read " + dir_ + "/none.pub: "), 0u) << error;
}

TEST_F(KeyFolder, AClientNeedsTheServersPublicKeyAndItsOwnPair) {
  CurveClientKeys keys{};
  std::string error;
  write("server.pub", kHelloKey);
  write("client.pub", kHelloKey);
  EXPECT_FALSE(read_client_keys(dir_, keys, error));
  EXPECT_NE(error.find(dir_ + "/client.key"), std::string::npos) << error;
  write("client.key", kHelloKey);
  EXPECT_TRUE(read_client_keys(dir_ + "/", keys, error)) << error;
}

}  // namespace
