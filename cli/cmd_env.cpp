// `memwatch env [--markdown]`: the environment variables the shim reads, what each means and
// its default, from the one table the shim itself reads them by.
#include <cstdio>
#include <span>
#include <string>

#include "args.hpp"
#include "memwatch/protocol/shim_options.hpp"

namespace memwatch::cli {

namespace {

constexpr Option kOptions[] = {
    {"markdown", "", "print them as a Markdown table (the README's)"},
};

}  // namespace

std::string help_env() {
  return usage_text("env", {"[--markdown]",
                            "The environment variables the shim reads, what each means, and its "
                            "default.",
                            kOptions});
}

int cmd_env(std::span<char* const> argv) {
  const Args args(argv, kOptions);
  args.refuse_positional();
  const bool markdown = args.flag("markdown");
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
