// expect_exactly_once: the keys a CollectingSink saw are each there once,
// as many as expected, and dense per source (no gap in any source's seqs).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "collecting_sink.h"

namespace testing_support {

inline void expect_exactly_once(const std::vector<CollectingSink::Key>& keys,
                                std::size_t expected) {
  std::set<CollectingSink::Key> distinct(keys.begin(), keys.end());
  EXPECT_EQ(distinct.size(), keys.size()) << "duplicates";
  EXPECT_EQ(keys.size(), expected);
  std::map<std::int64_t, std::vector<std::int64_t>> by_source;
  for (const auto& [source, seq] : keys) by_source[source].push_back(seq);
  for (auto& [source, seqs] : by_source) {
    std::sort(seqs.begin(), seqs.end());
    for (std::size_t i = 1; i < seqs.size(); ++i) {
      EXPECT_EQ(seqs[i], seqs[i - 1] + 1) << "gap in source " << source;
    }
  }
}

}  // namespace testing_support
