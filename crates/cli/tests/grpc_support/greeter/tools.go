//go:build tools

package tools

import _ "google.golang.org/grpc/examples/helloworld/greeter_server"
