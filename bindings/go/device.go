package dlbridge

import (
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// DeviceType is a DLPack device type (DLDeviceType): an integer, not a closed set. A newer
// producer may send a type this package has no constant for; it is kept and passed on as is.
type DeviceType int32

// Every device type of DLPack's header (dlpack.h), with DLPack's values (a test compares each with
// the header's through SWIG's output). 5 and 6 are unused; TPU and TPUHost are post-1.3.
const (
	DeviceTypeCPU         DeviceType = 1
	DeviceTypeCUDA        DeviceType = 2
	DeviceTypeCUDAHost    DeviceType = 3
	DeviceTypeOpenCL      DeviceType = 4
	DeviceTypeVulkan      DeviceType = 7
	DeviceTypeMetal       DeviceType = 8
	DeviceTypeVPI         DeviceType = 9
	DeviceTypeROCM        DeviceType = 10
	DeviceTypeROCMHost    DeviceType = 11
	DeviceTypeExtDev      DeviceType = 12
	DeviceTypeCUDAManaged DeviceType = 13
	DeviceTypeOneAPI      DeviceType = 14
	DeviceTypeWebGPU      DeviceType = 15
	DeviceTypeHexagon     DeviceType = 16
	DeviceTypeMAIA        DeviceType = 17
	DeviceTypeTrn         DeviceType = 18
	DeviceTypeTPU         DeviceType = 19
	DeviceTypeTPUHost     DeviceType = 20
)

// String returns the core's name of the device type ("cuda"), or "device_type_N" for one the
// core has no name for.
func (t DeviceType) String() string {
	if name := DeviceTypeName(t); name != "" {
		return name
	}
	return "device_type_" + itoa(int64(t))
}

// Device is a DLPack device (DLDevice): a device type and an id.
type Device struct {
	Type DeviceType // the device type (DeviceTypeCPU, DeviceTypeCUDA, ...), any value
	ID   int32      // the ordinal of the device of that type (0 for the CPU)
}

// CPU is the host.
var CPU = Device{Type: DeviceTypeCPU}

// CUDA returns CUDA device id.
func CUDA(id int32) Device { return Device{Type: DeviceTypeCUDA, ID: id} }

// CUDAHost is CUDA pinned host memory.
var CUDAHost = Device{Type: DeviceTypeCUDAHost}

// CUDAManaged is CUDA managed memory.
var CUDAManaged = Device{Type: DeviceTypeCUDAManaged}

// OpenCL returns OpenCL device id (numbered over all platforms, as the core numbers them).
func OpenCL(id int32) Device { return Device{Type: DeviceTypeOpenCL, ID: id} }

// packed is the DLDevice as the SWIG layer carries it: device_type << 32 | device_id.
func (d Device) packed() int64 { return int64(uint64(uint32(d.Type))<<32 | uint64(uint32(d.ID))) }

func deviceFromPacked(p int64) Device {
	return Device{Type: DeviceType(int32(uint64(p) >> 32)), ID: int32(uint32(uint64(p)))}
}

// String returns the core's text for the device ("cpu", "cuda:1", "device_type_25:0").
func (d Device) String() string {
	buf := make([]byte, capi.DLB_DEVICE_NAME_SIZE)
	if _, err := check(capi.Dlb_device_format(d.packed(), buf)); err != nil {
		return "device(" + itoa(int64(d.Type)) + ":" + itoa(int64(d.ID)) + ")"
	}
	return cString(buf)
}

// HostReadable reports whether the host CPU can read the device's memory directly.
func (d Device) HostReadable() bool { return capi.Dlb_device_is_host_readable(d.packed()) != 0 }

// ParseDevice parses "cpu", "cuda:1", "opencl", "device_type_N:ID" with the core's parser.
func ParseDevice(text string) (Device, error) {
	if err := checkText(text); err != nil {
		return Device{}, err
	}
	out := make([]int64, 1)
	if _, err := check(capi.Dlb_device_parse(text, out)); err != nil {
		return Device{}, err
	}
	return deviceFromPacked(out[0]), nil
}

// DeviceTypeName returns the core's name of a device type ("cuda"), or "" for an unknown one.
func DeviceTypeName(deviceType DeviceType) string { return capi.Dlb_device_type_name(int(deviceType)) }

// BackendRegistered reports whether a backend serves the device type now (always true for the CPU).
func BackendRegistered(deviceType DeviceType) bool {
	return capi.Dlb_backend_is_registered(int(deviceType)) != 0
}

// Synchronize waits until the work queued on stream is done; with a nil stream, all work on dev.
// A no-op for the CPU.
func Synchronize(dev Device, stream unsafe.Pointer) error {
	_, err := check(capi.Dlb_device_synchronize(dev.packed(), int64(uintptr(stream))))
	return err
}

// CUDAAvailable returns nil when CUDA work can run here, else the core's reason
// (StatusUnsupported without CUDA support, StatusDeviceUnavailable without a driver or device).
func CUDAAvailable() error {
	_, err := check(capi.Dlb_cuda_is_available())
	return err
}

// CUDADeviceCount returns the number of CUDA devices visible to this process.
func CUDADeviceCount() (int, error) {
	out := make([]int32, 1)
	if _, err := check(capi.Dlb_cuda_device_count(out)); err != nil {
		return 0, err
	}
	return int(out[0]), nil
}

// CUDAPointerDevice returns the device that pointer lives on (CPU for memory CUDA does not know).
func CUDAPointerDevice(pointer unsafe.Pointer) (Device, error) {
	out := make([]int64, 1)
	if _, err := check(capi.Dlb_cuda_pointer_device(int64(uintptr(pointer)), out)); err != nil {
		return Device{}, err
	}
	return deviceFromPacked(out[0]), nil
}

// CUDAStreamNone is the consumer stream that stands for "not given" (the legacy default stream).
var CUDAStreamNone = capi.DLB_CUDA_STREAM_NONE

// CUDAStreamHandshake makes the work queued on producerStream (a cudaStream_t of device
// deviceID; nil is the legacy default stream) visible to work queued later on consumerStream,
// which follows the DLPack convention (CUDAStreamNone or 1: legacy default, 2: per-thread
// default, -1: no synchronisation, other positive values: a cudaStream_t).
func CUDAStreamHandshake(deviceID int32, producerStream unsafe.Pointer, consumerStream int64) error {
	_, err := check(capi.Dlb_cuda_stream_handshake(int(deviceID), int64(uintptr(producerStream)), consumerStream))
	return err
}

// OpenCLAvailable returns nil when an OpenCL platform with a device was found, else the core's reason.
func OpenCLAvailable() error {
	_, err := check(capi.Dlb_opencl_is_available())
	return err
}

// OpenCLDeviceCount returns the number of OpenCL devices over all platforms.
func OpenCLDeviceCount() (int, error) {
	out := make([]int32, 1)
	if _, err := check(capi.Dlb_opencl_device_count(out)); err != nil {
		return 0, err
	}
	return int(out[0]), nil
}

// OpenCLObjects are the OpenCL handles behind one device; they belong to the library.
type OpenCLObjects struct {
	// The cl_platform_id, cl_device_id, cl_context and in-order cl_command_queue.
	Platform, Device, Context, Queue unsafe.Pointer
}

// OpenCLDeviceObjects returns the cl_platform_id, cl_device_id, cl_context and in-order
// cl_command_queue of OpenCL device id. They belong to the library and live until the process ends.
func OpenCLDeviceObjects(id int32) (OpenCLObjects, error) {
	p, d, c, q := make([]int64, 1), make([]int64, 1), make([]int64, 1), make([]int64, 1)
	if _, err := check(capi.Dlb_opencl_device_objects(int(id), p, d, c, q)); err != nil {
		return OpenCLObjects{}, err
	}
	return OpenCLObjects{addrToPtr(p[0]), addrToPtr(d[0]), addrToPtr(c[0]), addrToPtr(q[0])}, nil
}

// OpenCLDeviceName returns "platform name / device name" of OpenCL device id.
func OpenCLDeviceName(id int32) (string, error) {
	buf := make([]byte, capi.DLB_ERROR_MESSAGE_SIZE)
	if _, err := check(capi.Dlb_opencl_device_name(int(id), buf)); err != nil {
		return "", err
	}
	return cString(buf), nil
}

// OpenCLQueueHandshake makes the commands queued so far on producerQueue complete before any
// command queued afterwards on consumerQueue starts, without blocking the host.
func OpenCLQueueHandshake(producerQueue, consumerQueue unsafe.Pointer) error {
	_, err := check(capi.Dlb_opencl_queue_handshake(int64(uintptr(producerQueue)), int64(uintptr(consumerQueue))))
	return err
}

// DeviceTypeKnown reports whether imports accept the device type (one DLPack defines, or one a
// backend is registered for).
func DeviceTypeKnown(deviceType DeviceType) bool {
	return capi.Dlb_device_type_is_known(int(deviceType)) != 0
}
