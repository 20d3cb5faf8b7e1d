package dlbridge

// Typed shorthands for Data and CopyOut, one pair per Element type.

// Int8s is Data[int8]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Int8s() ([]int8, error) { return Data[int8](t) }

// CopyInt8s is CopyOut[int8]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyInt8s() ([]int8, error) { return CopyOut[int8](t) }

// Int16s is Data[int16]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Int16s() ([]int16, error) { return Data[int16](t) }

// CopyInt16s is CopyOut[int16]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyInt16s() ([]int16, error) { return CopyOut[int16](t) }

// Int32s is Data[int32]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Int32s() ([]int32, error) { return Data[int32](t) }

// CopyInt32s is CopyOut[int32]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyInt32s() ([]int32, error) { return CopyOut[int32](t) }

// Int64s is Data[int64]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Int64s() ([]int64, error) { return Data[int64](t) }

// CopyInt64s is CopyOut[int64]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyInt64s() ([]int64, error) { return CopyOut[int64](t) }

// Uint8s is Data[uint8]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Uint8s() ([]uint8, error) { return Data[uint8](t) }

// CopyUint8s is CopyOut[uint8]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyUint8s() ([]uint8, error) { return CopyOut[uint8](t) }

// Uint16s is Data[uint16]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Uint16s() ([]uint16, error) { return Data[uint16](t) }

// CopyUint16s is CopyOut[uint16]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyUint16s() ([]uint16, error) { return CopyOut[uint16](t) }

// Uint32s is Data[uint32]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Uint32s() ([]uint32, error) { return Data[uint32](t) }

// CopyUint32s is CopyOut[uint32]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyUint32s() ([]uint32, error) { return CopyOut[uint32](t) }

// Uint64s is Data[uint64]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Uint64s() ([]uint64, error) { return Data[uint64](t) }

// CopyUint64s is CopyOut[uint64]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyUint64s() ([]uint64, error) { return CopyOut[uint64](t) }

// Float32s is Data[float32]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Float32s() ([]float32, error) { return Data[float32](t) }

// CopyFloat32s is CopyOut[float32]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyFloat32s() ([]float32, error) { return CopyOut[float32](t) }

// Float64s is Data[float64]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Float64s() ([]float64, error) { return Data[float64](t) }

// CopyFloat64s is CopyOut[float64]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyFloat64s() ([]float64, error) { return CopyOut[float64](t) }

// Complex64s is Data[complex64]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Complex64s() ([]complex64, error) { return Data[complex64](t) }

// CopyComplex64s is CopyOut[complex64]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyComplex64s() ([]complex64, error) { return CopyOut[complex64](t) }

// Complex128s is Data[complex128]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Complex128s() ([]complex128, error) { return Data[complex128](t) }

// CopyComplex128s is CopyOut[complex128]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyComplex128s() ([]complex128, error) { return CopyOut[complex128](t) }

// Bools is Data[bool]: the elements, aliasing the tensor's memory (see Data).
func (t *Tensor) Bools() ([]bool, error) { return Data[bool](t) }

// CopyBools is CopyOut[bool]: a copy of the elements (see CopyOut).
func (t *Tensor) CopyBools() ([]bool, error) { return CopyOut[bool](t) }
