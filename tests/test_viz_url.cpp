// test_viz_url.cpp: the browser build's page addresses (viz/cli/url_args.h), without a browser: a
// query is the command line's words; a bad one gets the command line's own one-line error; and
// state_query, the address the page keeps in step with its controls, reopens the same picture
// (every lesson page's and a set of options covering every view, mode, layout, mask and inference
// variant round-trip through it to the same parameters, view and step).
// What it is not: the page itself (tests/web/web_check.py drives it in headless Chromium).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "lesson_mode.h"
#include "url_args.h"
#include "viz_pages.h"

using namespace cplab;
using namespace cplab::viz;

namespace {

VizLaunch parse_words(const std::vector<std::string>& words) {
  std::vector<const char*> argv = {"cplab-viz"};
  for (const std::string& w : words) argv.push_back(w.c_str());
  CLI::App cli{"cplab-viz", "cplab-viz"};
  return parse_viz_args(cli, static_cast<int>(argv.size()), argv.data());
}

std::vector<std::string> split(const std::string& args) {
  std::vector<std::string> w;
  size_t at = 0;
  while (at < args.size()) {
    size_t end = args.find(' ', at);
    if (end == std::string::npos) end = args.size();
    if (end > at) w.push_back(args.substr(at, end - at));
    at = end + 1;
  }
  return w;
}

UrlState state_of(const VizLaunch& L) { return url_state(L); }

// the same picture: view, position and every parameter the address encodes
void same_picture(const VizLaunch& a, const VizLaunch& b, const std::string& what) {
  INFO(what);
  CHECK(a.view == b.view);
  CHECK(a.step == b.step);
  CHECK(a.zoom0 == b.zoom0);
  const CpFields &f = a.params.cp, &g = b.params.cp;
  CHECK(f.mode == g.mode);
  CHECK(f.layout == g.layout);
  CHECK(f.cp == g.cp);
  CHECK(f.icp == g.icp);
  CHECK(f.ocp == g.ocp);
  CHECK(f.seq == g.seq);
  CHECK(f.heads == g.heads);
  CHECK(f.kv_heads == g.kv_heads);
  CHECK(f.head_dim == g.head_dim);
  CHECK(f.causal == g.causal);
  CHECK(f.window == g.window);
  CHECK(f.chunk == g.chunk);
  CHECK(f.cu_seqlens == g.cu_seqlens);
  CHECK(f.pad == g.pad);
  CHECK(f.replicate_kv == g.replicate_kv);
  CHECK(a.params.dtype == b.params.dtype);
  CHECK(a.params.backward == b.params.backward);
  CHECK(a.params.kv_cache == b.params.kv_cache);
  CHECK(a.params.infer_mode == b.params.infer_mode);
  CHECK(a.params.cache_layout == b.params.cache_layout);
  CHECK(a.params.perf.gpu == b.params.perf.gpu);
  CHECK(a.params.perf.intra == b.params.perf.intra);
  CHECK(a.params.perf.inter == b.params.perf.inter);
  CHECK(a.params.perf.gpus_per_node == b.params.perf.gpus_per_node);
  CHECK(a.params.perf.tau_us == b.params.perf.tau_us);
  CHECK(a.params.ranks == b.params.ranks);
  CHECK(a.params.max_per_rank == b.params.max_per_rank);
  CHECK(a.params.lengths == b.params.lengths);
  CHECK(a.params.cost == b.params.cost);
  REQUIRE(a.run.has_value() == b.run.has_value());
  if (a.run) CHECK(a.run->trace.events().size() == b.run->trace.events().size());
}

}  // namespace

TEST_CASE("viz url: a query is the command line's words") {
  CHECK(query_words("").empty());
  CHECK(query_words("?").empty());
  CHECK(query_words("?view=ring&cp=4&seq=32&step=1") ==
        std::vector<std::string>{"--view", "ring", "--cp", "4", "--seq", "32", "--step", "1"});
  CHECK(query_words("no-causal&window=4") == std::vector<std::string>{"--no-causal", "--window", "4"});
  CHECK(query_words("cu-seqlens=0%2C10%2C34&pad=") == std::vector<std::string>{"--cu-seqlens", "0,10,34", "--pad"});
  CHECK(query_words("lengths=1+2") == std::vector<std::string>{"--lengths", "1 2"});
  CHECK(query_words("a=1&&b") == std::vector<std::string>{"--a", "1", "--b"});
  CHECK_THROWS_WITH_AS(query_words("cp=%4"), doctest::Contains("'%' must be followed by two hex digits"), Error);
  CHECK_THROWS_WITH_AS(query_words("cp=%zz"), doctest::Contains("two hex digits"), Error);
  CHECK_THROWS_WITH_AS(query_words("=4"), doctest::Contains("has no name"), Error);
  CHECK_THROWS_WITH_AS(query_words("--cp=4"), doctest::Contains("without dashes"), Error);
  for (const char* display : {"out=x.png", "headless", "size=100x100", "scene-json=a", "bench-frames=3", "help"})
    CHECK_THROWS_WITH_AS(query_words(display), doctest::Contains("is a display option"), Error);
  CHECK(url_decode(url_encode("a b&c=d/é,0:1")) == "a b&c=d/é,0:1");
  CHECK(url_encode("0,10:4") == "0,10:4");
}

TEST_CASE("viz url: a bad address gets the command line's one-line error and no picture") {
  const struct {
    const char* query;
    const char* error;
  } bad[] = {
      {"cp=0", "cplab-viz: error: "},
      {"view=rings", "cplab-viz: error: --view rings is not one of: ownership, ring, masks, scheduler, timeline, check"},
      {"cp=abc", "cplab-viz: error: --cp"},
      {"cpp=4", "cplab-viz: error: unknown option --cpp"},
      {"lesson=99", "cplab-viz: error: --lesson 99"},
      {"step=99", "cplab-viz: error: --phase fwd --step 99 is not in the trace"},
      {"out=a.png", "cplab-viz: error: URL parameter 'out' is a display option"},
      {"cp=%g0", "cplab-viz: error: URL parameter text"},
  };
  for (const auto& b : bad) {
    INFO(std::string(b.query));
    const UrlOpen u = open_url(b.query);
    CHECK_FALSE(u.launch.has_value());
    CHECK(u.error.rfind(b.error, 0) == 0);
    CHECK(u.error.find('\n') == std::string::npos);
  }
  CHECK(open_url("cpp=4").error.find("did you mean --cp?") != std::string::npos);
}

TEST_CASE("viz url: every lesson page's address reopens it, and state_query of its picture reopens the same picture") {
  int pages = 0;
  for (size_t l = 0; l < lesson::viz_lessons().size(); ++l)
    for (size_t k = 0; k < lesson::viz_lessons()[l].pages.size(); ++k) {
      const PageRef r{static_cast<int>(l + 1), static_cast<int>(k + 1)};
      UrlState s;
      s.lesson = r.lesson, s.page = r.page;
      const std::string q = state_query(s);
      CHECK(q == "lesson=" + std::to_string(r.lesson) + "&page=" + std::to_string(r.page));
      const UrlOpen u = open_url("?" + q);
      REQUIRE_MESSAGE(u.launch.has_value(), u.error);
      CHECK(u.launch->lesson == r.lesson);
      CHECK(u.launch->page == r.page);
      // the page's picture as plain options (no lesson): its address gives the same picture
      const VizLaunch a = parse_words(split(page_of(r).args));
      const std::string q2 = state_query(state_of(a));
      const UrlOpen u2 = open_url(q2);
      REQUIRE_MESSAGE(u2.launch.has_value(), std::string(q2 + ": " + u2.error));
      same_picture(a, *u2.launch, page_of(r).args + " -> " + q2);
      CHECK(state_query(state_of(*u2.launch)) == q2);  // a fixed point: the page writes back what it read
      ++pages;
    }
  CHECK(pages >= 30);
}

TEST_CASE("viz url: options of every view, mode, layout and mask round-trip through the address") {
  const char* sets[] = {
      "--view ring --cp 8 --seq 64 --layout striped --no-causal --step 3",
      "--view ring --cp 4 --seq 32 --backward --phase bwd --step 2",
      "--view ring --cp 4 --seq 32 --no-backward",
      "--view ownership --cp 4 --seq 64 --zoom-from 17",
      "--view masks --mode a2a --cp 4 --seq 32 --heads 8 --kv-heads 2 --replicate-kv",
      "--view masks --cp 4 --seq 64 --window 5",
      "--view masks --cp 4 --seq 64 --chunk 16 --dtype double",
      "--view ring --mode a2a+p2p --cp 8 --hcp 2,4 --seq 64 --step 1",
      "--view ownership --cp 3 --cu-seqlens 0,10,34,39 --pad",
      "--view timeline --cp 16 --seq 65536 --gpu h200 --intra nvlink4 --inter eth100 --gpus-per-node 4 --tau-us 2.5",
      "--view scheduler --ranks 4 --max-seqlen-per-rank 8192 --lengths 8192,4096,4096 --cost overhead",
      "--view scheduler --dist data/dcp/code_longtail.json --batch-size 16 --seed 3",
      "--view ring --kv-cache 448 --seq 64 --cp 4 --mode pass-q --step 1",
      "--view timeline --kv-cache 100,200 --cu-seqlens 0,1,2 --cp 2 --mode decode-ag --cache-layout interleaved",
  };
  for (const char* args : sets) {
    INFO(std::string(args));
    VizLaunch a;
    try {
      a = parse_words(split(args));
    } catch (const Error& e) {
      // data/dcp is found from the repository's root (ctest runs there); elsewhere that one set is skipped
      if (std::string(args).find("--dist") != std::string::npos) continue;
      FAIL(std::string(std::string(args) + ": " + e.what()));
    }
    const std::string q = state_query(state_of(a));
    const UrlOpen u = open_url(q);
    REQUIRE_MESSAGE(u.launch.has_value(), std::string(q + ": " + u.error));
    same_picture(a, *u.launch, q);
    CHECK(state_query(state_of(*u.launch)) == q);
  }
}
