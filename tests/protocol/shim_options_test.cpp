// The shim's options are one table (protocol/shim_options.hpp): the README documents exactly
// that table, row for row, so a new option or a changed default cannot drift from the docs.
#include "memwatch/protocol/shim_options.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> readme_option_rows() {
  std::ifstream readme(std::string(MEMWATCH_SOURCE_DIR) + "/README.md");
  std::vector<std::string> rows;
  for (std::string line; std::getline(readme, line);)
    if (line.starts_with("| `MEMWATCH_")) rows.push_back(line);
  return rows;
}

TEST(ShimOptions, TheReadmeDocumentsEveryOptionAsTheTableHasIt) {
  const std::vector<std::string> rows = readme_option_rows();
  ASSERT_EQ(rows.size(), memwatch::protocol::kShimOptions.size())
      << "README.md's environment table has other rows than protocol/shim_options.hpp "
         "(`memwatch env --markdown` prints the table)";
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ(rows[i],
              memwatch::protocol::shim_option_markdown_row(memwatch::protocol::kShimOptions[i]));
}

TEST(ShimOptions, VariablesAreUniqueAndNamedMemwatch) {
  for (std::size_t i = 0; i < memwatch::protocol::kShimOptions.size(); ++i) {
    const std::string name = memwatch::protocol::kShimOptions[i].variable;
    EXPECT_TRUE(name.starts_with("MEMWATCH_")) << name;
    for (std::size_t j = 0; j < i; ++j)
      EXPECT_NE(name, memwatch::protocol::kShimOptions[j].variable);
  }
}

}  // namespace
