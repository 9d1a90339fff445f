// The one source of auditpipe_test_pch, the target that builds the test
// programs' precompiled header (tests/CMakeLists.txt); it defines nothing.
#include "precompiled.h"
