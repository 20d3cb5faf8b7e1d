// Suite 'opencl', white-box part: the backend functions the public API cannot reach. The core
// only ever asks copy_bytes for host <-> device transfers, but the backend contract allows two
// OpenCL buffers too; and copy_tensor's reasons for declining are swallowed by the core's
// fallback to host staging. Linked against the static archive, whose internal symbols a
// program can reach.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "opencl/opencl_copy.hpp"
#include "opencl_support.hpp"

using raw::cl;
using raw::read_buffer;
using raw::write_buffer;
using test::fresh_error;
using test::kUntouched;
using test::missing_device;
using test::msg;

namespace {

const DLDevice kCpu{kDLCPU, 0};
const DLDevice kOpenCL{kDLOpenCL, 0};

// A buffer with known contents and the host copy they are compared with.
struct Filled {
  cl_mem mem;
  std::vector<unsigned char> bytes;
  Filled(size_t nbytes, uint32_t seed, cl_context context = nullptr,
         cl_command_queue queue = nullptr)
      : mem(raw::buffer(nbytes, CL_MEM_READ_WRITE, context)), bytes(nbytes) {
    raw::fill(bytes.data(), nbytes, seed);
    write_buffer(mem, bytes, queue);
  }
  ~Filled() { cl.clReleaseMemObject(mem); }
  Filled(const Filled&) = delete;
  Filled& operator=(const Filled&) = delete;
};

int copy(void* dst, uint64_t dst_offset, const void* src, uint64_t src_offset, uint64_t nbytes,
         dlb_error* error, void* stream = nullptr) {
  return dlb::opencl::copy_bytes(kOpenCL, dst, dst_offset, kOpenCL, src, src_offset, nbytes, stream,
                                 error);
}

}  // namespace

TEST_CASE("copy_bytes between two buffers of one context") {
  dlb_error error = fresh_error();
  Filled a(256, 1), b(256, 2);
  REQUIRE(copy(b.mem, 8, a.mem, 16, 100, &error) == DLB_OK);
  std::memcpy(b.bytes.data() + 8, a.bytes.data() + 16, 100);
  CHECK(read_buffer(b.mem) == b.bytes);
  CHECK(read_buffer(a.mem) == a.bytes);
  // Nothing to copy.
  REQUIRE(copy(b.mem, 0, a.mem, 0, 0, &error) == DLB_OK);
  CHECK(read_buffer(b.mem) == b.bytes);
  CHECK(msg(error) == kUntouched);
}

TEST_CASE("copy_bytes within one buffer: disjoint, overlapping both ways, onto itself") {
  dlb_error error = fresh_error();
  Filled a(512, 3);
  REQUIRE(copy(a.mem, 300, a.mem, 10, 100, &error) == DLB_OK);
  std::memmove(a.bytes.data() + 300, a.bytes.data() + 10, 100);
  CHECK(read_buffer(a.mem) == a.bytes);
  REQUIRE(copy(a.mem, 40, a.mem, 0, 200, &error) == DLB_OK);  // forward overlap
  std::memmove(a.bytes.data() + 40, a.bytes.data(), 200);
  CHECK(read_buffer(a.mem) == a.bytes);
  REQUIRE(copy(a.mem, 0, a.mem, 33, 300, &error) == DLB_OK);  // backward overlap
  std::memmove(a.bytes.data(), a.bytes.data() + 33, 300);
  CHECK(read_buffer(a.mem) == a.bytes);
  REQUIRE(copy(a.mem, 64, a.mem, 64, 128, &error) == DLB_OK);
  CHECK(read_buffer(a.mem) == a.bytes);
  CHECK(msg(error) == kUntouched);
}

TEST_CASE("copy_bytes between a sub-buffer and its parent sees the overlap") {
  dlb_error error = fresh_error();
  Filled parent(1024, 4);
  const cl_buffer_region region{256, 512};
  cl_int code = CL_SUCCESS;
  cl_mem sub = cl.clCreateSubBuffer(parent.mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                    &region, &code);
  REQUIRE(code == CL_SUCCESS);
  // Parent bytes [200, 500) onto sub-buffer bytes [0, 300) = parent bytes [256, 556).
  REQUIRE(copy(sub, 0, parent.mem, 200, 300, &error) == DLB_OK);
  std::memmove(parent.bytes.data() + 256, parent.bytes.data() + 200, 300);
  CHECK(read_buffer(parent.mem) == parent.bytes);
  // And the other way round.
  REQUIRE(copy(parent.mem, 300, sub, 0, 300, &error) == DLB_OK);
  std::memmove(parent.bytes.data() + 300, parent.bytes.data() + 256, 300);
  CHECK(read_buffer(parent.mem) == parent.bytes);
  cl.clReleaseMemObject(sub);
  CHECK(msg(error) == kUntouched);
}

TEST_CASE("copy_bytes between buffers of two contexts goes through the host") {
  dlb_error error = fresh_error();
  raw::OtherContext other;
  raw::CallerQueue other_queue(other.context);
  Filled mine(128, 5), theirs(128, 6, other.context, other_queue.queue);
  REQUIRE(copy(mine.mem, 0, theirs.mem, 64, 64, &error) == DLB_OK);
  std::memcpy(mine.bytes.data(), theirs.bytes.data() + 64, 64);
  CHECK(read_buffer(mine.mem) == mine.bytes);
  // The caller's queue belongs to the destination's context only: still complete on return.
  REQUIRE(copy(theirs.mem, 0, mine.mem, 32, 96, &error, other_queue.queue) == DLB_OK);
  std::memcpy(theirs.bytes.data(), mine.bytes.data() + 32, 96);
  CHECK(read_buffer(theirs.mem, other_queue.queue) == theirs.bytes);
  CHECK(msg(error) == kUntouched);
}

TEST_CASE("copy_bytes on a caller's queue is queued there") {
  dlb_error error = fresh_error();
  raw::CallerQueue queue;
  Filled a(4096, 7), b(4096, 8);
  std::vector<unsigned char> host(4096);
  REQUIRE(copy(b.mem, 0, a.mem, 0, 4096, &error, queue.queue) == DLB_OK);
  REQUIRE(dlb::opencl::copy_bytes(kCpu, host.data(), 0, kOpenCL, b.mem, 0, 4096, queue.queue,
                                  &error) == DLB_OK);
  REQUIRE(cl.clFinish(queue.queue) == CL_SUCCESS);
  CHECK(host == a.bytes);
  CHECK(msg(error) == kUntouched);
}

TEST_CASE("copy_bytes refuses what it cannot do") {
  dlb_error error = fresh_error();
  Filled a(64, 9);
  char host[8];
  CHECK(dlb::opencl::copy_bytes(kCpu, host, 0, kCpu, host, 0, 8, nullptr, &error) ==
        DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "neither side of the copy is an opencl buffer");
  const int32_t missing = cl.device_count;
  const std::string expected = missing_device(missing);
  CHECK(dlb::opencl::copy_bytes(kOpenCL, a.mem, 0, DLDevice{kDLOpenCL, missing}, a.mem, 8, 8,
                                nullptr, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == expected);
  CHECK(dlb::opencl::copy_bytes(DLDevice{kDLOpenCL, missing}, a.mem, 0, kCpu, host, 0, 8, nullptr,
                                &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == expected);
}

TEST_CASE("copy_tensor declines what the host must stage, and says why") {
  Filled buffer(1024, 10);
  int64_t shape[2] = {4, 6};
  int64_t host_strides[2] = {12, 2};  // every other column: not contiguous
  std::vector<unsigned char> host(1024);
  const DLDataType f32{kDLFloat, 32, 1};
  DLTensor device{buffer.mem, kOpenCL, 2, f32, shape, nullptr, 0};
  DLTensor strided_host{host.data(), kCpu, 2, f32, shape, host_strides, 0};
  dlb_error error = fresh_error();
  CHECK(dlb::opencl::copy_tensor(&device, 0, &strided_host, 0, nullptr, &error) ==
        DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "opencl copies with a non-contiguous host side are staged through the host");
  CHECK(dlb::opencl::copy_tensor(&strided_host, 0, &device, 0, nullptr, &error) ==
        DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "opencl copies with a non-contiguous host side are staged through the host");

  const DLDataType int4{kDLInt, 4, 1};
  DLTensor packed_device{buffer.mem, kOpenCL, 2, int4, shape, nullptr, 0};
  DLTensor packed_host{host.data(), kCpu, 2, int4, shape, nullptr, 0};
  CHECK(dlb::opencl::copy_tensor(&packed_device, 0, &packed_host, 0, nullptr, &error) ==
        DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "opencl copies of packed sub-byte data are staged through the host");

  raw::OtherContext other;
  raw::CallerQueue other_queue(other.context);
  Filled theirs(1024, 11, other.context, other_queue.queue);
  DLTensor foreign{theirs.mem, kOpenCL, 2, f32, shape, nullptr, 0};
  CHECK(dlb::opencl::copy_tensor(&device, 0, &foreign, 0, nullptr, &error) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) ==
        "opencl buffers of two contexts, or of a context dlbridge did not create, "
        "are copied through the host");
  DLTensor compact_host{host.data(), kCpu, 2, f32, shape, nullptr, 0};
  CHECK(dlb::opencl::copy_tensor(&device, 0, &compact_host, 0, other_queue.queue, &error) ==
        DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) ==
        "the queue belongs to another OpenCL context than the buffers: the copy is "
        "staged through the host");
  CHECK(dlb::opencl::copy_tensor(&compact_host, 0, &compact_host, 0, nullptr, &error) ==
        DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "neither side of the copy is an opencl buffer");
  // And what it does take: host -> device with the queue of the buffers' context.
  raw::CallerQueue queue;
  raw::fill(host.data(), 96, 12);
  error = fresh_error();
  REQUIRE(dlb::opencl::copy_tensor(&device, 0, &compact_host, 0, queue.queue, &error) == DLB_OK);
  REQUIRE(cl.clFinish(queue.queue) == CL_SUCCESS);
  const std::vector<unsigned char> bytes = read_buffer(buffer.mem);
  CHECK(std::memcmp(bytes.data(), host.data(), 96) == 0);
  CHECK(msg(error) == kUntouched);
}

TEST_CASE("OpenCL error names and messages") {
  CHECK(std::string(dlb::opencl::error_name(CL_SUCCESS)) == "CL_SUCCESS");
  CHECK(std::string(dlb::opencl::error_name(CL_INVALID_VALUE)) == "CL_INVALID_VALUE");
  CHECK(std::string(dlb::opencl::error_name(CL_MEM_COPY_OVERLAP)) == "CL_MEM_COPY_OVERLAP");
  CHECK(std::string(dlb::opencl::error_name(-72)) == "CL_MAX_SIZE_RESTRICTION_EXCEEDED");
  CHECK(std::string(dlb::opencl::error_name(-1001)) == "CL_PLATFORM_NOT_FOUND_KHR");
  CHECK(std::string(dlb::opencl::error_name(-999)) == "CL_UNKNOWN_ERROR");
  dlb_error error = fresh_error();
  CHECK(dlb::opencl::cl_fail(&error, "clEnqueueReadBuffer", CL_INVALID_VALUE) == DLB_ERR_DEVICE);
  CHECK(msg(error) == "clEnqueueReadBuffer failed: CL_INVALID_VALUE (-30)");
  CHECK(dlb::opencl::cl_fail(nullptr, "clFinish", CL_OUT_OF_RESOURCES) == DLB_ERR_DEVICE);
}

int main(int argc, char** argv) {
  const int skip = raw::check_opencl_or_skip();
  if (skip >= 0) return skip;
  doctest::Context context(argc, argv);
  return context.run();
}
