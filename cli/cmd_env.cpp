// `memwatch env [--markdown]`: the environment variables the shim reads, what each means and
// its default, from the one table the shim itself reads them by.
#include <cstdio>
#include <span>
#include <string_view>

#include "memwatch/protocol/shim_options.hpp"

namespace memwatch::cli {

int cmd_env(std::span<char* const> args) {
  const bool markdown = !args.empty() && std::string_view(args[0]) == "--markdown";
  if (args.size() > (markdown ? 1u : 0u)) {
    std::fprintf(stderr, "memwatch env: expected no argument but --markdown\n");
    return 2;
  }
  if (markdown) std::puts("| variable | meaning | default |\n| --- | --- | --- |");
  for (const protocol::ShimOptionInfo& o : protocol::kShimOptions) {
    if (markdown) {
      std::puts(protocol::shim_option_markdown_row(o).c_str());
    } else {
      std::printf("%s%.*s\n    %.*s (default: %.*s)\n", o.variable,
                  static_cast<int>(o.usage.size()), o.usage.data(),
                  static_cast<int>(o.meaning.size()), o.meaning.data(),
                  static_cast<int>(o.default_text.size()), o.default_text.data());
    }
  }
  return 0;
}

}  // namespace memwatch::cli
