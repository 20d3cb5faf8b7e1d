// The doctest entry point of the cpp suite; the test cases live in the other test_*.cc files.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
