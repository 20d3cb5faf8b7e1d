module github.com/dlbridge/dlbridge/bindings/go

go 1.19
