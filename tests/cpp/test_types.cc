// Error, DType, dtype_traits, Device, slice helpers and the free functions of dlbridge.hpp.
#include "dlbridge/dlbridge.hpp"  // first: the header must be self-contained

#include <complex>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>

#include "helpers.hpp"

using dlbridge::Device;
using dlbridge::DType;
using dlbridge::Error;

TEST_SUITE("cpp.error") {
  TEST_CASE("Error carries the status, its name and the message") {
    const Error e(DLB_ERR_READ_ONLY, "tensor is read-only");
    CHECK(e.status() == DLB_ERR_READ_ONLY);
    CHECK(std::string(e.status_name()) == "DLB_ERR_READ_ONLY");
    CHECK(std::string(e.what()) == "tensor is read-only");
    const std::runtime_error& base = e;
    CHECK(std::string(base.what()) == "tensor is read-only");
    CHECK(std::string(Error(12345, "x").status_name()) == "DLB_ERR_UNKNOWN");
    CHECK(std::string(Error(DLB_ERR_DEVICE_UNAVAILABLE, "").status_name()) ==
          "DLB_ERR_DEVICE_UNAVAILABLE");
  }

  TEST_CASE("detail::check throws the message of the dlb_error and nothing on DLB_OK") {
    dlb_error error{};
    std::strcpy(error.message, "stale text");
    CHECK_NOTHROW(dlbridge::detail::check(DLB_OK, error));
    CHECK_DLB_ERROR(dlbridge::detail::check(DLB_ERR_LAYOUT, error), DLB_ERR_LAYOUT, "stale text");
    // With a real failing C call.
    DLDataType out{};
    const int status = dlb_dtype_parse("nope", &out, &error);
    CHECK_DLB_ERROR(dlbridge::detail::check(status, error), DLB_ERR_INVALID_ARGUMENT,
                    "unknown dtype name 'nope'");
  }
}

TEST_SUITE("cpp.dtype") {
  TEST_CASE("factories have the DLPack codes and widths") {
    struct Row {
      DType dtype;
      uint8_t code;
      uint8_t bits;
      const char* name;
    };
    const Row rows[] = {
        {DType::int8(), kDLInt, 8, "int8"},
        {DType::int16(), kDLInt, 16, "int16"},
        {DType::int32(), kDLInt, 32, "int32"},
        {DType::int64(), kDLInt, 64, "int64"},
        {DType::uint8(), kDLUInt, 8, "uint8"},
        {DType::uint16(), kDLUInt, 16, "uint16"},
        {DType::uint32(), kDLUInt, 32, "uint32"},
        {DType::uint64(), kDLUInt, 64, "uint64"},
        {DType::float16(), kDLFloat, 16, "float16"},
        {DType::float32(), kDLFloat, 32, "float32"},
        {DType::float64(), kDLFloat, 64, "float64"},
        {DType::bfloat16(), kDLBfloat, 16, "bfloat16"},
        {DType::complex64(), kDLComplex, 64, "complex64"},
        {DType::complex128(), kDLComplex, 128, "complex128"},
        {DType::boolean(), kDLBool, 8, "bool"},
        {DType::handle(), kDLOpaqueHandle, 64, "handle64"},
    };
    for (const Row& row : rows) {
      INFO(std::string(row.name));
      CHECK(row.dtype.code == row.code);
      CHECK(row.dtype.bits == row.bits);
      CHECK(row.dtype.lanes == 1);
      CHECK(row.dtype.valid());
      CHECK(row.dtype.name() == row.name);
      CHECK(DType::parse(row.name) == row.dtype);
      CHECK(row.dtype.element_size() == row.bits / 8u);
    }
  }

  TEST_CASE("a default DType is all zero and invalid") {
    constexpr DType d;
    CHECK(d.code == 0);
    CHECK(d.bits == 0);
    CHECK(d.lanes == 0);
    CHECK_FALSE(d.valid());
    CHECK_DLB_ERROR(d.name(), DLB_ERR_INVALID_ARGUMENT,
                    "dtype int with 0 bits is not a valid DLPack type");
  }

  TEST_CASE("conversion to and from DLDataType") {
    const DLDataType raw{kDLFloat, 32, 4};
    const DType d = raw;  // implicit
    CHECK(d == DType(kDLFloat, 32, 4));
    const DLDataType back = d.dl();
    CHECK(back.code == kDLFloat);
    CHECK(back.bits == 32);
    CHECK(back.lanes == 4);
    CHECK(d == raw);  // comparison with the C struct through the implicit conversion
    CHECK(d != DType::float32());
    CHECK(DType::float32().with_lanes(4) == d);
  }

  TEST_CASE("parse and name of vector, sub-byte and float8 types") {
    CHECK(DType::parse("float32x4") == DType(kDLFloat, 32, 4));
    CHECK(DType::parse("float32x4").name() == "float32x4");
    CHECK(DType::parse("int4") == DType(kDLInt, 4));
    CHECK(DType::parse("float8_e4m3fn") == DType(kDLFloat8_e4m3fn, 8));
    CHECK(DType(kDLFloat4_e2m1fn, 4).name() == "float4_e2m1fn");
    CHECK(DType::parse(std::string("uint8x16")).lanes == 16);
  }

  TEST_CASE("parse errors carry the core's message") {
    CHECK_DLB_ERROR(DType::parse("bogus"), DLB_ERR_INVALID_ARGUMENT, "unknown dtype name 'bogus'");
    CHECK_DLB_ERROR(DType::parse("int7"), DLB_ERR_INVALID_ARGUMENT,
                    "dtype int with 7 bits is not a valid DLPack type");
    CHECK_DLB_ERROR(DType::parse("float32x0"), DLB_ERR_INVALID_ARGUMENT,
                    "dtype name 'float32x0' has an invalid lane count (1 to 65535)");
    CHECK_DLB_ERROR(DType::parse(""), DLB_ERR_INVALID_ARGUMENT, "unknown dtype name ''");
    // The C++ message is the C API's message, verbatim.
    const CResult c = c_call([](dlb_error* e) {
      DLDataType out{};
      return dlb_dtype_parse("complex8", &out, e);
    });
    REQUIRE(c.status != DLB_OK);
    CHECK_DLB_ERROR(DType::parse("complex8"), c.status, c.message);
  }

  TEST_CASE("unknown codes stay representable") {
    const DType future(200, 8, 1);
    CHECK(future.code == 200);
    CHECK(future == DType(DLDataType{200, 8, 1}));
    CHECK(future != DType::uint8());
    CHECK_FALSE(future.valid());
    CHECK_DLB_ERROR(future.name(), DLB_ERR_UNSUPPORTED,
                    "dtype code 200 is not a known DLPack type code");
    CHECK_DLB_ERROR(future.validate(), DLB_ERR_UNSUPPORTED,
                    "dtype code 200 is not a known DLPack type code");
    CHECK(future.to_string() == "dtype(code=200, bits=8, lanes=1)");
    CHECK(future.element_size() == 1);
    CHECK_NOTHROW(DType::float32().validate());
    CHECK_DLB_ERROR(DType(kDLFloat, 32, 0).validate(), DLB_ERR_INVALID_ARGUMENT,
                    "dtype lanes is 0; it must be at least 1");
  }

  TEST_CASE("sizes") {
    CHECK(DType::float32().element_size() == 4);
    CHECK(DType::float32().element_bits() == 32);
    CHECK(DType(kDLFloat, 32, 4).element_size() == 16);
    CHECK(DType(kDLFloat, 32, 4).element_bits() == 128);
    CHECK(DType::complex128().element_size() == 16);
    CHECK(DType(kDLInt, 4).element_size() == 1);
    CHECK(DType(kDLInt, 4).element_bits() == 4);
    CHECK(DType(kDLInt, 4).is_subbyte());
    CHECK_FALSE(DType::int8().is_subbyte());
  }

  TEST_CASE("to_string and operator<<") {
    CHECK(DType::float64().to_string() == "float64");
    std::ostringstream os;
    os << DType::int16() << ' ' << DType(99, 1, 1);
    CHECK(os.str() == "int16 dtype(code=99, bits=1, lanes=1)");
  }

  TEST_CASE("dtype_of and dtype_traits") {
    static_assert(dlbridge::dtype_of<float>() == DType::float32(), "");
    static_assert(dlbridge::dtype_of<double>() == DType::float64(), "");
    static_assert(dlbridge::dtype_of<int8_t>() == DType::int8(), "");
    static_assert(dlbridge::dtype_of<int16_t>() == DType::int16(), "");
    static_assert(dlbridge::dtype_of<int32_t>() == DType::int32(), "");
    static_assert(dlbridge::dtype_of<int64_t>() == DType::int64(), "");
    static_assert(dlbridge::dtype_of<uint8_t>() == DType::uint8(), "");
    static_assert(dlbridge::dtype_of<uint16_t>() == DType::uint16(), "");
    static_assert(dlbridge::dtype_of<uint32_t>() == DType::uint32(), "");
    static_assert(dlbridge::dtype_of<uint64_t>() == DType::uint64(), "");
    static_assert(dlbridge::dtype_of<long long>() == DType::int64(), "");
    static_assert(dlbridge::dtype_of<unsigned long long>() == DType::uint64(), "");
    static_assert(dlbridge::dtype_of<bool>() == DType::boolean(), "");
    static_assert(dlbridge::dtype_of<std::complex<float>>() == DType::complex64(), "");
    static_assert(dlbridge::dtype_of<std::complex<double>>() == DType::complex128(), "");
    static_assert(dlbridge::dtype_of<const volatile float>() == DType::float32(), "");
    static_assert(dlbridge::dtype_traits<float>::supported, "");
    static_assert(dlbridge::dtype_traits<uint16_t>::value == DType::uint16(), "");
    static_assert(!dlbridge::dtype_traits<char>::supported, "");
    static_assert(!dlbridge::dtype_traits<std::string>::supported, "");
    static_assert(!dlbridge::dtype_traits<float*>::supported, "");
    static_assert(sizeof(bool) == 1, "");
    // The runtime values agree with the core's parser.
    CHECK(dlbridge::dtype_of<std::complex<float>>() == DType::parse("complex64"));
    CHECK(dlbridge::dtype_of<bool>() == DType::parse("bool"));
    CHECK(dlbridge::dtype_of<uint64_t>().element_size() == sizeof(uint64_t));
  }
}

// A user type registered through dtype_traits.
struct Half {
  uint16_t bits;
};
namespace dlbridge {
template <>
struct dtype_traits<Half> {
  static constexpr bool supported = true;
  static constexpr DType value = DType::float16();
};
}  // namespace dlbridge

TEST_CASE("cpp.dtype: a program can register its own element type") {
  static_assert(dlbridge::dtype_of<Half>() == DType::float16(), "");
  auto t = dlbridge::Tensor::empty<Half>({2});
  CHECK(t.dtype() == DType::float16());
  auto v = t.view<Half>();
  v(1).bits = 0x3c00;
  CHECK(t.cview<Half>()(1).bits == 0x3c00);
}

TEST_SUITE("cpp.device") {
  TEST_CASE("factories") {
    CHECK(Device::cpu() == Device(kDLCPU, 0));
    CHECK(Device() == Device::cpu());
    CHECK(Device::cuda() == Device(kDLCUDA, 0));
    CHECK(Device::cuda(3) == Device(kDLCUDA, 3));
    CHECK(Device::cuda_host() == Device(kDLCUDAHost, 0));
    CHECK(Device::cuda_managed() == Device(kDLCUDAManaged, 0));
    CHECK(Device::opencl(1) == Device(kDLOpenCL, 1));
    CHECK(Device::vulkan(2) == Device(kDLVulkan, 2));
    CHECK(Device::metal() == Device(kDLMetal, 0));
    CHECK(Device::rocm(1) == Device(kDLROCM, 1));
    CHECK(Device::rocm_host() == Device(kDLROCMHost, 0));
    CHECK(Device::oneapi() == Device(kDLOneAPI, 0));
    CHECK(Device::ext_dev(7) == Device(kDLExtDev, 7));
    CHECK(Device::cuda(1) != Device::cuda(2));
    CHECK(Device::cuda(1) != Device::rocm(1));
  }

  TEST_CASE("conversion to and from DLDevice") {
    const Device d = DLDevice{kDLCUDA, 2};
    CHECK(d.type == kDLCUDA);
    CHECK(d.id == 2);
    const DLDevice back = d.dl();
    CHECK(back.device_type == kDLCUDA);
    CHECK(back.device_id == 2);
    // A device type newer than this header stays representable.
    const Device future(250, 1);
    CHECK(static_cast<int32_t>(future.dl().device_type) == 250);
    CHECK_FALSE(future.known());
    CHECK(Device::cpu().known());
  }

  TEST_CASE("name") {
    CHECK(Device::cpu().name() == "cpu");
    CHECK(Device::cuda(1).name() == "cuda:1");
    CHECK(Device::cuda_host().name() == "cuda_host:0");
    CHECK(Device::opencl().name() == "opencl:0");
    CHECK(Device(kDLCPU, 3).name() == "cpu:3");
    CHECK(Device(25, 0).name() == "device_type_25:0");
    std::ostringstream os;
    os << Device::rocm(2);
    CHECK(os.str() == "rocm:2");
  }

  TEST_CASE("parse") {
    CHECK(Device::parse("cpu") == Device::cpu());
    CHECK(Device::parse("cuda:1") == Device::cuda(1));
    CHECK(Device::parse("opencl") == Device::opencl(0));
    CHECK(Device::parse("cuda_managed") == Device::cuda_managed());
    CHECK(Device::parse(Device(25, 4).name()) == Device(25, 4));
    CHECK_DLB_ERROR(Device::parse("nope"), DLB_ERR_INVALID_ARGUMENT, "unknown device name 'nope'");
    CHECK_DLB_ERROR(Device::parse("cuda:x"), DLB_ERR_INVALID_ARGUMENT,
                    "device 'cuda:x' has an invalid device id (0 to 2147483647)");
  }

  TEST_CASE("host_readable") {
    CHECK(Device::cpu().host_readable());
    CHECK(Device::cuda_host().host_readable());
    CHECK(Device::cuda_managed().host_readable());
    CHECK(Device::rocm_host().host_readable());
    CHECK_FALSE(Device::cuda().host_readable());
    CHECK_FALSE(Device::opencl().host_readable());
    CHECK_FALSE(Device::rocm().host_readable());
    CHECK_FALSE(Device(250, 0).host_readable());
  }
}

TEST_SUITE("cpp.misc") {
  TEST_CASE("slice helpers") {
    CHECK(dlbridge::kSliceNone == DLB_SLICE_NONE);
    constexpr dlb_slice r = dlbridge::range(1, 3);
    CHECK(r.start == 1);
    CHECK(r.stop == 3);
    CHECK(r.step == 1);
    CHECK(dlbridge::range(4, -1, -2).step == -2);
    constexpr dlb_slice a = dlbridge::all();
    CHECK(a.start == DLB_SLICE_NONE);
    CHECK(a.stop == DLB_SLICE_NONE);
    CHECK(a.step == 1);
    CHECK(dlbridge::all(-1).step == -1);
  }

  TEST_CASE("version_string and live_count") {
    CHECK(dlbridge::version_string() == DLB_VERSION_STRING);
    CHECK(dlbridge::version_string() == dlb_version_string());
    const int64_t before = dlbridge::live_count();
    CHECK(before == dlb_tensor_live_count());
    {
      auto t = dlbridge::Tensor::empty<int32_t>({4});
      CHECK(dlbridge::live_count() == before + 1);
    }
    CHECK(dlbridge::live_count() == before);
  }
}
