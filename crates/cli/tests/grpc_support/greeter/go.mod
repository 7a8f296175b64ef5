module loadmark.test/greeter

go 1.25.0

require (
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa // indirect
	google.golang.org/grpc v1.81.1 // indirect
	google.golang.org/grpc/examples v0.0.0-20260825154716-030ee8becb20 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
