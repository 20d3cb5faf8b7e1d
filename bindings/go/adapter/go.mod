module github.com/dlbridge/dlbridge/bindings/go/adapter

go 1.19

require github.com/dlbridge/dlbridge/bindings/go v0.0.0

replace github.com/dlbridge/dlbridge/bindings/go => ../
