// A checker of the Prometheus text exposition format (version 0.0.4),
// written from the format's specification, for testing auditpipe's output:
// it parses every line and collects every violation it finds.
//
// Checked: line syntax (HELP, TYPE, samples), metric and label names, label
// value escapes, numbers (including NaN and +/-Inf), at most one HELP and
// TYPE per family and TYPE before the family's samples, families not
// interleaved, and for histograms: _bucket series with an le label in
// increasing order, cumulative counts, a +Inf bucket equal to _count, and
// _sum/_count present.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace testing_support {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromFamily {
  std::string type = "untyped";
  std::string help;
  std::vector<PromSample> samples;
};

class PromText {
 public:
  explicit PromText(const std::string& text) { parse(text); }

  const std::vector<std::string>& errors() const { return errors_; }
  const std::map<std::string, PromFamily>& families() const { return families_; }

  // The value of the sample `name` whose labels include `match`; NaN if none.
  double value(const std::string& name,
               const std::map<std::string, std::string>& match = {}) const {
    for (const auto& [family, f] : families_) {
      for (const auto& s : f.samples) {
        if (s.name != name) continue;
        bool ok = true;
        for (const auto& [k, v] : match) {
          auto it = s.labels.find(k);
          if (it == s.labels.end() || it->second != v) ok = false;
        }
        if (ok) return s.value;
      }
    }
    return std::nan("");
  }

 private:
  static bool name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  }
  static bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
  static bool valid_metric_name(const std::string& n) {
    if (n.empty() || !name_start(n[0])) return false;
    for (char c : n) {
      if (!name_char(c)) return false;
    }
    return true;
  }
  static bool valid_label_name(const std::string& n) {
    if (n.empty() || n[0] == ':' || !name_start(n[0])) return false;
    for (char c : n) {
      if (!name_char(c) || c == ':') return false;
    }
    return true;
  }
  static bool parse_value(const std::string& t, double* out) {
    if (t == "NaN") return *out = std::nan(""), true;
    if (t == "+Inf" || t == "Inf") return *out = INFINITY, true;
    if (t == "-Inf") return *out = -INFINITY, true;
    if (t.empty()) return false;
    char* end = nullptr;
    *out = std::strtod(t.c_str(), &end);
    return end == t.c_str() + t.size();
  }
  // The family a sample name belongs to (histogram suffixes stripped when
  // the base name is a declared histogram).
  std::string family_of(const std::string& name) const {
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
        const std::string base = name.substr(0, name.size() - s.size());
        auto it = families_.find(base);
        if (it != families_.end() &&
            (it->second.type == "histogram" || it->second.type == "summary"))
          return base;
      }
    }
    return name;
  }
  void error(std::size_t line, const std::string& what) {
    errors_.push_back("line " + std::to_string(line) + ": " + what);
  }

  void parse(const std::string& text) {
    if (!text.empty() && text.back() != '\n')
      errors_.push_back("the text does not end with a newline");
    std::size_t line_no = 0, pos = 0;
    std::set<std::string> closed;  // families whose samples ended
    std::string current;
    while (pos < text.size()) {
      const std::size_t eol = text.find('\n', pos);
      const std::string line =
          text.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
      pos = eol == std::string::npos ? text.size() : eol + 1;
      ++line_no;
      if (line.empty()) continue;
      if (line[0] == '#') {
        parse_comment(line_no, line, closed, current);
        continue;
      }
      PromSample s;
      std::size_t i = 0;
      while (i < line.size() && name_char(line[i])) ++i;
      s.name = line.substr(0, i);
      if (!valid_metric_name(s.name)) {
        error(line_no, "invalid metric name '" + s.name + "'");
        continue;
      }
      if (i < line.size() && line[i] == '{') {
        ++i;
        while (i < line.size() && line[i] != '}') {
          std::size_t j = i;
          while (j < line.size() && line[j] != '=') ++j;
          const std::string label = line.substr(i, j - i);
          if (!valid_label_name(label)) error(line_no, "invalid label name '" + label + "'");
          if (j + 1 >= line.size() || line[j + 1] != '"') {
            error(line_no, "label value not quoted");
            break;
          }
          std::string value;
          std::size_t k = j + 2;
          bool closed_quote = false;
          for (; k < line.size(); ++k) {
            if (line[k] == '\\') {
              if (k + 1 >= line.size()) break;
              const char e = line[++k];
              if (e == 'n')
                value += '\n';
              else if (e == '\\' || e == '"')
                value += e;
              else
                error(line_no, std::string("invalid escape \\") + e + " in a label value");
            } else if (line[k] == '"') {
              closed_quote = true;
              break;
            } else {
              value += line[k];
            }
          }
          if (!closed_quote) {
            error(line_no, "unterminated label value");
            break;
          }
          if (s.labels.count(label)) error(line_no, "duplicate label '" + label + "'");
          s.labels[label] = value;
          i = k + 1;
          if (i < line.size() && line[i] == ',') ++i;
        }
        if (i >= line.size() || line[i] != '}') {
          error(line_no, "unterminated label set");
          continue;
        }
        ++i;
      }
      if (i >= line.size() || line[i] != ' ') {
        error(line_no, "no space before the value");
        continue;
      }
      const std::string rest = line.substr(i + 1);
      const std::size_t sp = rest.find(' ');
      if (!parse_value(rest.substr(0, sp), &s.value))
        error(line_no, "invalid value '" + rest + "'");
      if (sp != std::string::npos) {
        const std::string ts = rest.substr(sp + 1);
        char* end = nullptr;
        std::strtoll(ts.c_str(), &end, 10);
        if (ts.empty() || end != ts.c_str() + ts.size())
          error(line_no, "invalid timestamp '" + ts + "'");
      }
      const std::string family = family_of(s.name);
      if (family != current) {
        if (closed.count(family)) error(line_no, "samples of " + family + " are not together");
        if (!current.empty()) closed.insert(current);
        current = family;
      }
      families_[family].samples.push_back(std::move(s));
    }
    for (const auto& [name, f] : families_) check_family(name, f);
  }

  void parse_comment(std::size_t line_no, const std::string& line, std::set<std::string>& closed,
                     std::string& current) {
    for (const std::string kind : {"HELP", "TYPE"}) {
      const std::string prefix = "# " + kind + " ";
      if (line.rfind(prefix, 0) != 0) continue;
      const std::string rest = line.substr(prefix.size());
      const std::size_t sp = rest.find(' ');
      const std::string name = rest.substr(0, sp);
      if (!valid_metric_name(name)) error(line_no, "invalid metric name in " + kind);
      if (closed.count(name) || (current == name && !families_[name].samples.empty())) {
        error(line_no, kind + " for " + name + " after its samples");
      }
      if (current != name) {
        if (!current.empty()) closed.insert(current);
        current = name;
      }
      PromFamily& f = families_[name];
      const std::string arg = sp == std::string::npos ? "" : rest.substr(sp + 1);
      if (kind == "TYPE") {
        if (seen_type_.count(name)) error(line_no, "second TYPE for " + name);
        seen_type_.insert(name);
        if (arg != "counter" && arg != "gauge" && arg != "histogram" && arg != "summary" &&
            arg != "untyped") {
          error(line_no, "unknown type '" + arg + "'");
        }
        f.type = arg;
      } else {
        if (seen_help_.count(name)) error(line_no, "second HELP for " + name);
        seen_help_.insert(name);
        for (std::size_t k = 0; k < arg.size(); ++k) {
          if (arg[k] != '\\') continue;
          if (k + 1 >= arg.size() || (arg[k + 1] != '\\' && arg[k + 1] != 'n')) {
            error(line_no, "invalid escape in HELP");
          }
          ++k;  // the escaped character
        }
        f.help = arg;
      }
      return;
    }
  }

  void check_family(const std::string& name, const PromFamily& f) {
    if (f.type != "histogram") {
      for (const auto& s : f.samples) {
        if (s.name != name)
          errors_.push_back(name + ": sample " + s.name + " in a " + f.type + " family");
      }
      return;
    }
    // Group buckets by their labels other than le.
    std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> series;
    std::map<std::map<std::string, std::string>, double> counts;
    std::set<std::map<std::string, std::string>> sums;
    for (const auto& s : f.samples) {
      auto labels = s.labels;
      if (s.name == name + "_bucket") {
        auto it = labels.find("le");
        double le = 0;
        if (it == labels.end() || !parse_value(it->second, &le)) {
          errors_.push_back(name + ": bucket without a valid le");
          continue;
        }
        labels.erase("le");
        series[labels].emplace_back(le, s.value);
      } else if (s.name == name + "_count") {
        counts[labels] = s.value;
      } else if (s.name == name + "_sum") {
        sums.insert(labels);
      } else {
        errors_.push_back(name + ": unexpected sample " + s.name);
      }
    }
    if (series.empty()) errors_.push_back(name + ": histogram without buckets");
    for (const auto& [labels, buckets] : series) {
      for (std::size_t i = 1; i < buckets.size(); ++i) {
        if (!(buckets[i].first > buckets[i - 1].first))
          errors_.push_back(name + ": le not increasing");
        if (buckets[i].second < buckets[i - 1].second)
          errors_.push_back(name + ": buckets not cumulative");
      }
      if (buckets.empty() || !std::isinf(buckets.back().first)) {
        errors_.push_back(name + ": no +Inf bucket");
      } else if (!counts.count(labels) || counts[labels] != buckets.back().second) {
        errors_.push_back(name + ": _count missing or not equal to the +Inf bucket");
      }
      if (!sums.count(labels)) errors_.push_back(name + ": no _sum");
    }
  }

  std::map<std::string, PromFamily> families_;
  std::set<std::string> seen_type_, seen_help_;
  std::vector<std::string> errors_;
};

}  // namespace testing_support
