// cmd_layout.cpp: `cplab layout`, which tokens each rank holds and their RoPE positions.
//
// What it is: a printer of layout.h Partition + thd.h (packing, positions) for a sequence or a packed
// batch: per rank its packed token indices in local order, each token's position inside its
// sequence (the RoPE position under CP) and whether it is padding.
// What it is not: a run of attention (that is `cplab run`).
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/error.h"
#include "run/experiment.h"
#include "layout/thd.h"

namespace cplab::app {

namespace {

struct LayoutOptions {
  index_t cp = 4, seq = 16;
  std::string layout = "zigzag", cu;
  bool pad = false, json = false;
};

int layout_action(const LayoutOptions& o) {
  // the layout of a CP spec (modes/cp_spec.h: its cp, packing and divisibility rules); the mode
  // and head sizes play no role here
  CpFields f;
  f.layout = parse_layout(o.layout);
  f.cp = o.cp;
  if (!o.cu.empty()) f.cu_seqlens = parse_cu_seqlens(o.cu);
  else f.seq = o.seq;
  f.pad = o.pad;
  const CpSpec spec(f);
  const Layout L = spec.layout();
  const Packing& pk = spec.packing();
  require(pk.total() <= (index_t{1} << 24), "the layout has " + std::to_string(pk.total()) +
                                                " tokens; cplab layout prints at most 2^24");
  if (check_only) return 0;  // tests/fuzz: the inputs are checked
  const Partition& part = spec.partition();
  nlohmann::json ranks = nlohmann::json::array();
  for (index_t r = 0; r < o.cp; ++r) {
    const std::vector<index_t> idx = part.indices(r), pos = rope_positions(part, pk, r);
    std::vector<bool> padding;
    for (index_t g : idx) padding.push_back(!pk.real(g));
    ranks.push_back({{"rank", r}, {"indices", idx}, {"positions", pos}, {"padding", padding}});
  }
  if (o.json) {
    std::cout << nlohmann::json{{"layout", to_string(L)}, {"cp", o.cp}, {"cu_seqlens", pk.cu_seqlens},
                                {"cu_seqlens_padded", pk.cu_seqlens_padded}, {"ranks", ranks}}
                     .dump(1)
              << "\n";
    return 0;
  }
  auto list = [](const std::vector<index_t>& v) {
    std::string s;
    for (index_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
  };
  std::cout << "cplab layout: " << to_string(L) << ", cp " << o.cp << ", cu_seqlens " << list(pk.cu_seqlens)
            << (pk.has_padding() ? ", padded to " + list(pk.cu_seqlens_padded) : std::string()) << "\n"
            << "(token = index in the packed batch; position = its position inside its sequence, the RoPE\n"
            << " position; * = padding)\n\n";
  for (const auto& r : ranks) {
    std::string tok, pos;
    const auto idx = r["indices"].get<std::vector<index_t>>();
    const auto ps = r["positions"].get<std::vector<index_t>>();
    const auto pd = r["padding"].get<std::vector<bool>>();
    for (size_t i = 0; i < idx.size(); ++i) {
      char a[32], b[32];
      std::snprintf(a, sizeof a, "%5lld%s", static_cast<long long>(idx[i]), pd[i] ? "*" : " ");
      std::snprintf(b, sizeof b, "%5lld%s", static_cast<long long>(ps[i]), pd[i] ? "*" : " ");
      tok += a;
      pos += b;
    }
    std::cout << "rank " << r["rank"].get<index_t>() << " tokens:   " << tok << "\n"
              << std::string(std::to_string(r["rank"].get<index_t>()).size(), ' ') << "      positions:" << pos << "\n";
  }
  return 0;
}

}  // namespace

void setup_layout(CLI::App& app, int& status) {
  auto o = std::make_shared<LayoutOptions>();
  CLI::App* sub = app.add_subcommand(
      "layout", "Print which tokens each rank holds and their RoPE positions, for one sequence (--seq)\n"
                "or a packed batch (--cu-seqlens), e.g. cplab layout --cp 3 --cu-seqlens 0,12,36,42");
  sub->add_option("--cp", o->cp, "number of CP ranks")->capture_default_str();
  sub->add_option("--seq", o->seq, "sequence length (without --cu-seqlens)")->capture_default_str();
  sub->add_option("--layout", o->layout, "contiguous | zigzag | striped (applied to every sequence)")->capture_default_str();
  sub->add_option("--cu-seqlens", o->cu, "packed sequences: cumulative lengths, e.g. 0,12,36,42");
  sub->add_flag("--pad", o->pad, "pad every sequence at its end to a multiple of 2*cp (zigzag) or cp");
  sub->add_flag("--json", o->json, "print JSON: per rank its indices, positions and padding flags");
  sub->callback([o, &status] { status = layout_action(*o); });
}

}  // namespace cplab::app
