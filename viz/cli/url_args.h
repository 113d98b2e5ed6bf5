// url_args.h: a page address of cplab-viz: the URL's query as the command line's words, and back.
//
// What it is: the deep links of the browser build (viz/app/web/). A query is cplab-viz's options
// without their dashes: "?view=ring&cp=4&seq=32&step=1" is `cplab-viz --view ring --cp 4 --seq 32
// --step 1`, "?no-causal" the flag --no-causal, "?lesson=4&page=1" a lesson's page. open_url parses
// those words with parse_viz_args itself, so a link obeys every rule of the command line and a bad
// one gets the command line's own one-line error ("cplab-viz: error: --cp 0 must be >= 1"); only
// the display options (--headless, --out, --size, ...) are refused, by name, since the page is
// the display. state_query is the inverse: the query that reopens what the app shows (the options
// that differ from the defaults, in a fixed order), which the page keeps in its address bar.
// No ImGui, no browser: tests/test_viz_url.cpp checks the round trip natively.
// What it is not: the option rules (viz_cli.h) or the page's JavaScript (viz/app/web/shell.html).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/trace.h"
#include "viz_cli.h"

namespace cplab::viz {

// "a%20b" -> "a b", "+" -> " "; cplab::Error for a '%' not followed by two hex digits
std::string url_decode(const std::string& s);
// the characters a query value keeps as they are (letters, digits, - _ . ~ , :), others %XX
std::string url_encode(const std::string& s);

// the query ("?a=1&b" or "a=1&b"; empty: no options) as words after `cplab-viz`: "--a", "1", "--b".
// cplab::Error naming the parameter for a display option, an empty key or bad percent-encoding
std::vector<std::string> query_words(const std::string& query);

// what opening a query gives: the launch, or the one line `cplab-viz WORDS` prints on stderr
// ("cplab-viz: error: ...") when they break a rule
struct UrlOpen {
  std::vector<std::string> words;
  std::optional<VizLaunch> launch;
  std::string error;
};
UrlOpen open_url(const std::string& query);  // never throws

// the view, run and position to encode (what the app shows now)
struct UrlState {
  VizParams params;
  int view = 1;                                      // index into view_names()
  std::optional<std::pair<Phase, int>> ring_step;    // ring view: the (phase, step) shown
  index_t zoom0 = 0;                                 // ownership view: the zoom strip's first token
  std::string check_report;                          // check view: the report's file
  int lesson = 0, page = 0;                          // a lesson page (then only these are encoded)
};
// "view=ring&cp=8&step=1": parse_viz_args(query_words(q)) rebuilds the same parameters
std::string state_query(const UrlState& s);
// what a launch shows (its lesson and page left out: the picture alone)
UrlState url_state(const VizLaunch& L);

}  // namespace cplab::viz
