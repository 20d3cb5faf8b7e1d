// Each header of the C++ helpers compiles on its own: tests/cpp/meson.build builds this file
// once per header, with DLB_HEADER naming it ("dlbridge/tensor.hpp"), and that header is the
// only thing included before the test's own code. A part that uses something it does not
// include fails to build here.
#include DLB_HEADER

#include <cstdio>

int main() {
  std::printf("%s compiles on its own\n", DLB_HEADER);
  return 0;
}
