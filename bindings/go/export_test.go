package dlbridge

// Hooks for the benchmark's floor (bench_test.go): the pieces of Go every cycle needs whatever
// the binding does, timed without any C.

// FloorTensorObject makes one Tensor the way every tensor is made (a slot of the shared
// finalizer batch, the batch's finalizer set once per 128), over no C tensor.
func FloorTensorObject() { newTensor(0) }

// FloorReleaseToken keeps f as a wrap with a release function does, then takes it back as the
// release does (without calling it).
func FloorReleaseToken(f func()) { releases.take(releases.add(f)) }
