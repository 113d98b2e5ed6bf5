// infer_table.cpp: the table of inference CP variants (see infer_table.h).
#include "infer/infer_table.h"

#include "core/error.h"

namespace cplab {

namespace {

using I64 = std::int64_t;

// the closing all-to-all: rank r sends every other owner the partial (O, LSE) rows of that owner's
// new tokens, (T - n_r) rows of h * (dv + 1) elements
I64 partials_bytes(const InferSizes& s) { return (s.T - s.n_r) * s.h * (s.dv + 1) * s.e; }
I64 others(const InferSizes& s) { return s.N - 1; }
// the Q ring (pass-Q and its decode form): N-1 padded Q blocks, then the partials' all-to-all
CommPerRank q_ring(const InferSizes& s) {
  return CommPerRank{2 * others(s), others(s) * s.Mq * s.h * s.d * s.e + partials_bytes(s), 0, 0};
}
I64 q_ring_steps(I64 N) { return N > 1 ? N + 1 : 1; }
constexpr const char* kQRingMsgs = "`2(N−1)`";
constexpr const char* kQRingBytes = "`(N−1)·Mq·h·d·e + (T−n_r)·h·(dv+1)·e`";

const std::vector<InferInfo> kTable = {
    {.mode = InferMode::pass_kv,
     .name = "p2p",
     .title = "p2p (pass-KV)",
     .travels = "KV",
     .decode_layout = false,
     .ring = true,
     .steps = [](I64 N) -> I64 { return N; },
     .comm =
         [](const InferSizes& s) {
           return CommPerRank{others(s), others(s) * s.Mkv * s.hk * (s.d + s.dv) * s.e, 0, 0};
         },
     .readme = {"`N−1`", "`(N−1)·Mkv·hk·(d+dv)·e`"}},
    {.mode = InferMode::pass_q,
     .name = "pass-q",
     .title = "pass-q",
     .travels = "Q",
     .decode_layout = false,
     .ring = true,
     .steps = q_ring_steps,
     .comm = q_ring,
     .readme = {kQRingMsgs, kQRingBytes}},
    {.mode = InferMode::decode_pass_q,
     .name = "decode-pass-q",
     .title = "decode-pass-q",
     .travels = "Q",
     .decode_layout = true,
     .ring = true,
     .steps = q_ring_steps,
     .comm = q_ring,
     .readme = {kQRingMsgs, kQRingBytes}},
    {.mode = InferMode::decode_ag,
     .name = "decode-ag",
     .title = "decode-ag (all-gather Q)",
     .travels = "Q",
     .decode_layout = true,
     .ring = false,
     .steps = [](I64 N) -> I64 { return N > 1 ? 3 : 1; },
     .comm =
         [](const InferSizes& s) {
           return CommPerRank{2 * others(s), others(s) * s.n_r * s.h * s.d * s.e + partials_bytes(s), 0, 0};
         },
     .readme = {"`2(N−1)`", "`(N−1)·n_r·h·d·e + (T−n_r)·h·(dv+1)·e`"}},
};

}  // namespace

const std::vector<InferInfo>& infer_table() { return kTable; }

const InferInfo& infer_info(InferMode m) {
  for (const InferInfo& i : kTable)
    if (i.mode == m) return i;
  throw Error("infer_info: an InferMode value outside the table");
}

std::string infer_mode_names() {
  std::string s;
  for (const InferInfo& i : kTable) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

bool is_infer_mode(const std::string& name) {
  for (const InferInfo& i : kTable)
    if (name == i.name) return true;
  return false;
}

InferMode parse_infer_mode(const std::string& name) {
  for (const InferInfo& i : kTable)
    if (name == i.name) return i.mode;
  throw Error("mode '" + name + "' is not an inference mode (with --kv-cache): " + infer_mode_names());
}

std::string to_string(InferMode m) { return infer_info(m).name; }

std::string infer_comm_table_markdown() {
  std::string t =
      "| mode | what travels | new tokens placed | messages per rank | bytes per rank |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const InferInfo& i : kTable)
    t += std::string("| ") + i.title + " | " + i.travels + " | " +
         (i.decode_layout ? "round-robin (position mod N)" : "split by --layout") + " | " + i.readme[0] + " | " +
         i.readme[1] + " |\n";
  return t;
}

}  // namespace cplab
