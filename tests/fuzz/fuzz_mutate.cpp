// fuzz_mutate.cpp: the generator's edge values and its byte and JSON mutators (fuzz.h), and Tally.
#include <CLI/CLI.hpp>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "fuzz.h"

namespace cplab::fuzz {

namespace {

const std::vector<std::string> kIntegers = {
    "0", "1", "2", "3", "4", "8", "16", "32", "64", "-1", "-2", "1000", "4096", "65536", "1048576",
    "2147483647", "2147483648", "4294967296", "4611686018427387904", "9223372036854775806",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "99999999999999999999999",
    "1e3", "1.5", "0x10", "010", "+4", "", " 4", "4 ", "abc", "1,2", "-0", "nan"};
const std::vector<std::string> kReals = {"0", "1", "-1", "0.5", "1e-320", "1e308", "-1e308", "1e300", "inf", "-inf",
                                         "nan", "1,5", "", "x", "3", "1e30", "1e-30", "0x1p3", "4.9e-324"};

}  // namespace

std::string Fuzz::integer_text() {
  if (coin(0.2)) return std::to_string(static_cast<long long>(below(300)) - 20);
  return pick(kIntegers);
}

std::string Fuzz::real_text() { return coin(0.2) ? std::to_string(static_cast<double>(below(1000)) / 7) : pick(kReals); }

nlohmann::json Fuzz::value() {
  switch (below(16)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return std::numeric_limits<std::int64_t>::max();
    case 3: return std::numeric_limits<std::int64_t>::min();
    case 4: return std::numeric_limits<std::uint64_t>::max();
    case 5: return 2147483647;
    case 6: return 1.5;
    case 7: return 1e30;
    case 8: return -1e308;
    case 9: return "3";
    case 10: return nullptr;
    case 11: return true;
    case 12: return nlohmann::json::array();
    case 13: return nlohmann::json::object();
    case 14: return static_cast<std::int64_t>(below(64));
    default: return static_cast<double>(below(10000)) / 3.0;
  }
}

std::string Fuzz::mutate_bytes(std::string s) {
  const std::size_t edits = 1 + below(4);
  for (std::size_t e = 0; e < edits; ++e) {
    const std::size_t at = below(s.size() + 1);
    switch (below(6)) {
      case 0:  // flip a bit
        if (at < s.size()) s[at] = static_cast<char>(s[at] ^ (1 << below(8)));
        break;
      case 1:  // an interesting byte
        if (at < s.size()) s[at] = static_cast<char>(pick(std::vector<int>{0, 0x7f, 0x80, 0xff, '"', '{', ']', ',', '9', '-'}));
        break;
      case 2:  // delete a chunk
        s.erase(at, 1 + below(16));
        break;
      case 3:  // duplicate a chunk
        if (at < s.size()) s.insert(at, s.substr(at, 1 + below(32)));
        break;
      case 4:  // truncate
        s.resize(at);
        break;
      default:  // insert a number's text
        s.insert(at, integer_text());
    }
  }
  return s;
}

nlohmann::json Fuzz::mutate_json(nlohmann::json j) {
  const std::size_t edits = 1 + below(3);
  for (std::size_t e = 0; e < edits; ++e) {
    // walk down to a random node
    nlohmann::json* node = &j;
    for (int depth = 0; depth < 6 && (node->is_object() || node->is_array()) && !node->empty() && coin(0.8); ++depth) {
      auto it = node->begin();
      std::advance(it, static_cast<long>(below(node->size())));
      node = &*it;
      if (node->is_object() || node->is_array() ? coin(0.25) : true) break;
    }
    switch (below(5)) {
      case 0:
      case 1:
        *node = value();
        break;
      case 2:  // delete one member or element
        if (node->is_object() && !node->empty()) {
          auto it = node->begin();
          std::advance(it, static_cast<long>(below(node->size())));
          node->erase(it.key());
        } else if (node->is_array() && !node->empty()) {
          node->erase(below(node->size()));
        } else {
          *node = value();
        }
        break;
      case 3:  // duplicate an element
        if (node->is_array() && !node->empty()) node->push_back((*node)[below(node->size())]);
        else *node = value();
        break;
      default:  // a number nudged to a neighbour
        if (node->is_number_integer() && !node->is_number_unsigned()) {
          const std::int64_t x = node->get<std::int64_t>();  // its neighbour, without wrapping at the ends
          *node = x == std::numeric_limits<std::int64_t>::max() ? x - 1 : x == std::numeric_limits<std::int64_t>::min() ? x + 1 : x + (coin() ? 1 : -1);
        }
        else *node = value();
    }
  }
  return j;
}

std::string Fuzz::write(const std::string& name, const std::string& bytes) {
  const std::string path = scratch + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

void Tally::run(const std::string& label, const std::function<std::string()>& f) {
  ++cases;
  try {
    const std::string bad = f();
    if (bad.empty()) ++accepted;
    else failures.push_back(label + ": accepted, but " + bad);
  } catch (const Error& e) {
    if (std::string(e.what()).empty()) failures.push_back(label + ": refused with an empty message");
    else ++refused;
  } catch (const CLI::ParseError& e) {
    ++refused;  // CLI11's own refusal (unknown option, missing value); cli_main prints it and exits 2
  } catch (const std::exception& e) {
    failures.push_back(label + ": " + typeid(e).name() + ": " + e.what());
  } catch (...) {
    failures.push_back(label + ": an exception that is not a std::exception");
  }
}

void Tally::must_refuse(const std::string& name, const std::function<void()>& f) {
  const std::size_t before = failures.size();
  const int acc = accepted;
  run("[" + name + "]", [&] {
    f();
    return std::string();
  });
  if (accepted != acc && failures.size() == before) failures.push_back("[" + name + "]: accepted, must be refused");
}

}  // namespace cplab::fuzz
