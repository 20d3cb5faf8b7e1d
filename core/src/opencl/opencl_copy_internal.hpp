// Private to the OpenCL backend's copies (opencl_copy.cc, opencl_copy_kernels.cc,
// opencl_copy_tensor.cc): what they share. The Submission (the queue one operation's commands
// go to and how it ends) and TempBuffer classes; the buffer queries mem_context, root_of and
// ranges_overlap (defined in opencl_copy.cc); the kernel copy enqueue_kernel_copy and its
// Operand (defined in opencl_copy_kernels.cc).
#ifndef DLBRIDGE_SRC_OPENCL_OPENCL_COPY_INTERNAL_HPP_
#define DLBRIDGE_SRC_OPENCL_OPENCL_COPY_INTERNAL_HPP_

#include "opencl_copy.hpp"

namespace dlb {
namespace opencl {

inline int64_t magnitude(int64_t v) { return v < 0 ? -v : v; }

// Where the commands of one operation go and how the operation ends.
class Submission {
 public:
  explicit Submission(const Api& api) : api_(api) {}
  Submission(const Submission&) = delete;
  Submission& operator=(const Submission&) = delete;
  ~Submission() {
    if (last_ != nullptr) api_.clReleaseEvent(last_);
    // Releasing flushes the queue; OpenCL deletes it once its commands are done.
    if (owns_queue_) api_.clReleaseCommandQueue(queue_);
  }

  // Picks the queue for work on buffers of `context`, a context that holds `device`:
  //  - the caller's queue when it belongs to that context: the work is queued and the call
  //    returns without waiting;
  //  - otherwise (no queue, or one of another context, which cannot touch these buffers) the
  //    library's queue for the device, or a temporary queue for a context the library did not
  //    make; the call then waits until the work is done.
  int open(Runtime& rt, Device& device, cl_context context, void* stream, dlb_error* error) {
    if (stream != nullptr) {
      cl_context stream_context = nullptr;
      const cl_int code =
          api_.clGetCommandQueueInfo(static_cast<cl_command_queue>(stream), CL_QUEUE_CONTEXT,
                                     sizeof(stream_context), &stream_context, nullptr);
      if (code != CL_SUCCESS) return cl_fail(error, "clGetCommandQueueInfo", code);
      if (stream_context == context) {
        queue_ = static_cast<cl_command_queue>(stream);
        blocking_ = false;
        return DLB_OK;
      }
    }
    int status = ensure_context(rt, device, error);
    if (status != DLB_OK) return status;
    blocking_ = true;
    if (context == device.context) {
      queue_ = device.queue;
      return DLB_OK;
    }
    cl_int code = CL_SUCCESS;
    queue_ = api_.clCreateCommandQueue(context, device.id, 0, &code);
    if (queue_ == nullptr || code != CL_SUCCESS) {
      queue_ = nullptr;
      return cl_fail(error, "clCreateCommandQueue", code);
    }
    owns_queue_ = true;
    return DLB_OK;
  }

  cl_command_queue queue() const { return queue_; }

  // The event argument for the next command. A blocking operation waits for its last command,
  // which on an in-order queue means all of them; the library's queue is shared between threads,
  // so waiting for the whole queue (clFinish) would wait for other callers' work too.
  cl_event* track() {
    queued_ = true;
    if (!blocking_) return nullptr;
    if (last_ != nullptr) {
      api_.clReleaseEvent(last_);
      last_ = nullptr;
    }
    return &last_;
  }

  // Ends a successful operation: waits for it (blocking) or makes sure the caller's queue
  // starts on it (non-blocking).
  int complete(dlb_error* error) {
    if (!queued_) return DLB_OK;
    if (blocking_) {
      if (last_ == nullptr) return DLB_OK;
      const cl_int code = api_.clWaitForEvents(1, &last_);
      if (code != CL_SUCCESS) return cl_fail(error, "clWaitForEvents", code);
      return DLB_OK;
    }
    const cl_int code = api_.clFlush(queue_);
    if (code != CL_SUCCESS) return cl_fail(error, "clFlush", code);
    return DLB_OK;
  }

  // After a failure part-way: waits for whatever was queued, so that no command still reads
  // or writes host memory that the caller frees when the error comes back.
  void abandon() {
    if (queued_ && queue_ != nullptr) api_.clFinish(queue_);
  }

 private:
  const Api& api_;
  cl_command_queue queue_ = nullptr;
  bool blocking_ = true;
  bool owns_queue_ = false;
  bool queued_ = false;
  cl_event last_ = nullptr;
};

// A temporary device buffer, released when the operation ends. Commands already queued on it
// keep it alive: OpenCL deletes a released buffer only once they are done.
struct TempBuffer {
  const Api& api;
  cl_mem mem = nullptr;
  explicit TempBuffer(const Api& a) : api(a) {}
  TempBuffer(const TempBuffer&) = delete;
  TempBuffer& operator=(const TempBuffer&) = delete;
  ~TempBuffer() {
    if (mem != nullptr) api.clReleaseMemObject(mem);
  }
};

int mem_context(const Api& api, const void* mem, cl_context* out, dlb_error* error);

// The buffer whose memory a cl_mem is (itself, or the parent of a sub-buffer) and where in it the
// cl_mem starts: two cl_mem objects overlap only through a common root.
struct Root {
  cl_mem mem;
  uint64_t offset;
};

int root_of(const Api& api, const void* handle, Root* out, dlb_error* error);

bool ranges_overlap(const Root& a, uint64_t a_begin, uint64_t a_size, const Root& b,
                    uint64_t b_begin, uint64_t b_size);

// One side of a kernel copy: the buffer, the byte position of element (0, ..., 0) in it, and
// the strides in elements.
struct Operand {
  cl_mem mem;
  int64_t position;
  const int64_t* strides;
};

// Queues the copy of every element of `src` to `dst` (same shape, any strides, both in buffers
// of the device's context) as copy kernels.
int enqueue_kernel_copy(Runtime& rt, Device& device, Submission& sub, const Operand& dst,
                        const Operand& src, int32_t ndim, const int64_t* shape,
                        uint64_t element_size, dlb_error* error);

}  // namespace opencl
}  // namespace dlb

#endif  // DLBRIDGE_SRC_OPENCL_OPENCL_COPY_INTERNAL_HPP_
