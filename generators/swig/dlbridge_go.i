/* dlbridge_go.i - the Go module file for dlbridge.i (see generators/swig/generate_go.sh).
 * The package finds the installed C library through pkg-config, so that `go build` needs only
 * Go, a C compiler and pkg-config. */
%module dlbridge
%insert(cgo_comment_typedefs) %{
#cgo pkg-config: dlbridge
%}
%include "dlbridge.i"
