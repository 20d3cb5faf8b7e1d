// The OpenCL backend's copies: contiguous bytes (copy_bytes) and strided tensors (copy_tensor),
// with the signatures of the dlb_backend callbacks minus `ctx`.
#ifndef DLBRIDGE_SRC_OPENCL_OPENCL_COPY_HPP_
#define DLBRIDGE_SRC_OPENCL_OPENCL_COPY_HPP_

#include "opencl_runtime.hpp"

namespace dlb {
namespace opencl {

int copy_bytes(DLDevice dst_device, void* dst, uint64_t dst_offset, DLDevice src_device,
               const void* src, uint64_t src_offset, uint64_t nbytes, void* stream,
               dlb_error* error);

int copy_tensor(const DLTensor* dst, uint64_t dst_flags, const DLTensor* src, uint64_t src_flags,
                void* stream, dlb_error* error);

// clCreateBuffer with the library's conventions: memory exhaustion is DLB_ERR_OUT_OF_MEMORY
// (the message still names the call and the OpenCL code), anything else DLB_ERR_DEVICE.
int create_buffer(const Api& api, cl_context context, uint64_t nbytes, cl_mem* out,
                  dlb_error* error);

}  // namespace opencl
}  // namespace dlb

#endif  // DLBRIDGE_SRC_OPENCL_OPENCL_COPY_HPP_
