module github.com/execd/execd

go 1.26.0

require (
	github.com/sourcegraph/jsonrpc2 v0.2.3
	go.uber.org/zap v1.28.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/stretchr/testify v1.11.1 // indirect
	go.uber.org/multierr v1.10.0 // indirect
)
