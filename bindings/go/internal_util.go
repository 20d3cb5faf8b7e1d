package dlbridge

// Small helpers of the package that belong to no one type: text and addresses as they cross to C.

import (
	"strconv"
	"strings"
	"unsafe"
)

// checkText refuses text C would cut short.
func checkText(s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return errorf(StatusInvalidArgument, "%q contains a NUL byte", s)
	}
	return nil
}

func cString(buf []byte) string {
	if i := strings.IndexByte(string(buf), 0); i >= 0 {
		return string(buf[:i])
	}
	return string(buf)
}

// addrToPtr turns an address of C memory, which the garbage collector never moves or frees,
// into an unsafe.Pointer.
func addrToPtr(addr int64) unsafe.Pointer {
	a := uintptr(addr)
	return *(*unsafe.Pointer)(unsafe.Pointer(&a))
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
