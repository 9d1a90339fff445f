// The headers nearly every test program includes, compiled once per tree
// into one precompiled header that every test program reuses
// (tests/CMakeLists.txt): parsing them took about 3.5 of a test file's
// 10 s at -Og, and the test command compiles the test files three times.
// Only headers whose meaning no test changes belong here: a test file
// still includes what it uses, so it compiles without this one.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "auditpipe/logger.h"
#include "auditpipe/status.h"
