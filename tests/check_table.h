// check_table.h: the table the check tests print, one row per (configuration, injected fault), and
// the rule every row is judged by (tests/test_check.cpp, test_check_merge.cpp, test_check_outputs.cpp,
// test_check_rules.cpp).
//
// What it is: FaultTable. row() checks one report: with no expected id the verdict must be
// "equivalent" (exit 0); otherwise the first hypothesis must be expect_id, explain the outputs, and
// meet the test's own extra condition (its level, its name, its spec hint), exit 1; the row shows
// the verdict, what came first instead when it is wrong, and how many other hypotheses explain it.
// finish() prints the table with the count of cases named as injected.
// What it is not: the faults (check_faults.h) or the configurations (check_configs.h).
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "check/check.h"

namespace cplab::test {

struct FaultTable {
  std::ostringstream text;
  int cases = 0, named = 0;
  explicit FaultTable(const char* fault_column) {
    char b[256];
    std::snprintf(b, sizeof b, "\n%-50s | %-42s | cplab check's verdict\n", "configuration", fault_column);
    text << b;
  }
  // extra_ok: the test's own condition on the first hypothesis (level, name, hint) beyond its id
  bool row(const std::string& config, const std::string& fault, const CheckReport& r, const std::string& expect_id,
           bool extra_ok = true) {
    const HypothesisResult& best = r.hypotheses.front();
    std::string got = r.verdict;
    bool ok;
    if (expect_id.empty()) {
      ok = r.equivalent && r.verdict == "equivalent";
    } else {
      ok = !r.equivalent && best.id == expect_id && best.level >= 0 && extra_ok;
      if (!ok) got += "   [first: " + best.id + ", expected " + expect_id + "]";
      const size_t more = r.explaining().empty() ? 0 : r.explaining().size() - 1;
      if (more > 0) got += "  (+" + std::to_string(more) + " more explain it)";
    }
    CHECK_MESSAGE(ok, got);
    CHECK(r.exit_status() == (expect_id.empty() ? 0 : 1));
    ++cases, named += ok ? 1 : 0;
    char line[1024];
    std::snprintf(line, sizeof line, "%-50s | %-42s | %s\n", config.c_str(), fault.c_str(), got.c_str());
    text << line;
    return ok;
  }
  void finish() {
    text << cases << " cases, " << named << " named as injected\n";
    MESSAGE(text.str());
  }
};

}  // namespace cplab::test
