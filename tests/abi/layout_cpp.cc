// layout_cpp.cc - the layout checks compiled as C++17 (see layout_checks.h), plus the member and
// function-pointer types that only C++ can compare exactly.
#include <cstdint>
#include <type_traits>

#include "layout_checks.h"

namespace {

template <typename T, typename U>
constexpr bool same = std::is_same<T, U>::value;

// DLDeviceType's underlying type is int32_t in C++ (so DLDevice is 8 bytes on every ABI).
static_assert(same<std::underlying_type<DLDeviceType>::type, int32_t>,
              "DLDeviceType must have int32_t as its underlying type in C++");

// Member types.
static_assert(same<decltype(DLPackVersion::major), uint32_t>, "DLPackVersion::major");
static_assert(same<decltype(DLPackVersion::minor), uint32_t>, "DLPackVersion::minor");
static_assert(same<decltype(DLDevice::device_type), DLDeviceType>, "DLDevice::device_type");
static_assert(same<decltype(DLDevice::device_id), int32_t>, "DLDevice::device_id");
static_assert(same<decltype(DLDataType::code), uint8_t>, "DLDataType::code");
static_assert(same<decltype(DLDataType::bits), uint8_t>, "DLDataType::bits");
static_assert(same<decltype(DLDataType::lanes), uint16_t>, "DLDataType::lanes");
static_assert(same<decltype(DLTensor::data), void*>, "DLTensor::data");
static_assert(same<decltype(DLTensor::device), DLDevice>, "DLTensor::device");
static_assert(same<decltype(DLTensor::ndim), int32_t>, "DLTensor::ndim");
static_assert(same<decltype(DLTensor::dtype), DLDataType>, "DLTensor::dtype");
static_assert(same<decltype(DLTensor::shape), int64_t*>, "DLTensor::shape");
static_assert(same<decltype(DLTensor::strides), int64_t*>, "DLTensor::strides");
static_assert(same<decltype(DLTensor::byte_offset), uint64_t>, "DLTensor::byte_offset");
static_assert(same<decltype(DLManagedTensor::dl_tensor), DLTensor>, "DLManagedTensor::dl_tensor");
static_assert(same<decltype(DLManagedTensor::manager_ctx), void*>, "DLManagedTensor::manager_ctx");
static_assert(same<decltype(DLManagedTensor::deleter), void (*)(DLManagedTensor*)>,
              "DLManagedTensor::deleter");
static_assert(same<decltype(DLManagedTensorVersioned::version), DLPackVersion>,
              "DLManagedTensorVersioned::version");
static_assert(same<decltype(DLManagedTensorVersioned::manager_ctx), void*>,
              "DLManagedTensorVersioned::manager_ctx");
static_assert(
    same<decltype(DLManagedTensorVersioned::deleter), void (*)(DLManagedTensorVersioned*)>,
    "DLManagedTensorVersioned::deleter");
static_assert(same<decltype(DLManagedTensorVersioned::flags), uint64_t>,
              "DLManagedTensorVersioned::flags");
static_assert(same<decltype(DLManagedTensorVersioned::dl_tensor), DLTensor>,
              "DLManagedTensorVersioned::dl_tensor");
static_assert(same<decltype(DLPackExchangeAPIHeader::version), DLPackVersion>,
              "DLPackExchangeAPIHeader::version");
static_assert(same<decltype(DLPackExchangeAPIHeader::prev_api), DLPackExchangeAPIHeader*>,
              "DLPackExchangeAPIHeader::prev_api");
static_assert(same<decltype(DLPackExchangeAPI::header), DLPackExchangeAPIHeader>,
              "DLPackExchangeAPI::header");

// The exchange-API function-pointer types, parameter by parameter.
using SetErrorFn = void (*)(void*, const char*, const char*);
static_assert(same<DLPackManagedTensorAllocator,
                   int (*)(DLTensor*, DLManagedTensorVersioned**, void*, SetErrorFn)>,
              "DLPackManagedTensorAllocator");
static_assert(
    same<DLPackManagedTensorFromPyObjectNoSync, int (*)(void*, DLManagedTensorVersioned**)>,
    "DLPackManagedTensorFromPyObjectNoSync");
static_assert(same<DLPackManagedTensorToPyObjectNoSync, int (*)(DLManagedTensorVersioned*, void**)>,
              "DLPackManagedTensorToPyObjectNoSync");
static_assert(same<DLPackDLTensorFromPyObjectNoSync, int (*)(void*, DLTensor*)>,
              "DLPackDLTensorFromPyObjectNoSync");
static_assert(same<DLPackCurrentWorkStream, int (*)(DLDeviceType, int32_t, void**)>,
              "DLPackCurrentWorkStream");
static_assert(
    same<decltype(DLPackExchangeAPI::managed_tensor_allocator), DLPackManagedTensorAllocator>,
    "DLPackExchangeAPI::managed_tensor_allocator");
static_assert(same<decltype(DLPackExchangeAPI::managed_tensor_from_py_object_no_sync),
                   DLPackManagedTensorFromPyObjectNoSync>,
              "DLPackExchangeAPI::managed_tensor_from_py_object_no_sync");
static_assert(same<decltype(DLPackExchangeAPI::managed_tensor_to_py_object_no_sync),
                   DLPackManagedTensorToPyObjectNoSync>,
              "DLPackExchangeAPI::managed_tensor_to_py_object_no_sync");
static_assert(same<decltype(DLPackExchangeAPI::dltensor_from_py_object_no_sync),
                   DLPackDLTensorFromPyObjectNoSync>,
              "DLPackExchangeAPI::dltensor_from_py_object_no_sync");
static_assert(same<decltype(DLPackExchangeAPI::current_work_stream), DLPackCurrentWorkStream>,
              "DLPackExchangeAPI::current_work_stream");

// dlbridge's exchange allocator fits the standard's slot.
static_assert(same<decltype(&dlb_exchange_allocator), DLPackManagedTensorAllocator>,
              "dlb_exchange_allocator must have the DLPackManagedTensorAllocator signature");

// Every struct the ABI shares is standard-layout and trivially copyable, as a C struct must be.
static_assert(std::is_standard_layout<DLTensor>::value &&
                  std::is_trivially_copyable<DLTensor>::value,
              "DLTensor");
static_assert(std::is_standard_layout<DLManagedTensorVersioned>::value &&
                  std::is_trivially_copyable<DLManagedTensorVersioned>::value,
              "DLManagedTensorVersioned");
static_assert(std::is_standard_layout<DLPackExchangeAPI>::value &&
                  std::is_trivially_copyable<DLPackExchangeAPI>::value,
              "DLPackExchangeAPI");

}  // namespace

int main() {
  layout_run_checks();
  return layout_report("C++17");
}
