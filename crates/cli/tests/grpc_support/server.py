"""A gRPC server for loadmark's tests (crates/cli/tests/grpc.rs), on grpcio with reflection.

loadmark.test.Tester/Echo answers "hello NAME", or fails with the status code its request
names (code != 0) and the message "failing as asked". loadmark.test.Tester/Tick (server
streaming) sends a reply every 50 ms until the client cancels (or 200 replies); each Tick
call that the client cancelled is counted in COUNT_FILE.cancelled, once its handler saw the
cancel. The service is described by the descriptors built below (the same as tester.proto
and common.proto beside this file), so no protoc is needed. Every Echo call is counted; the
count is written to COUNT_FILE after each call.

With CERT and KEY (PEM files) it speaks TLS on localhost:PORT instead of plaintext on
127.0.0.1:PORT; with CLIENT_CA too, it requires a client certificate signed by that CA
(mutual TLS).

usage: server.py PORT COUNT_FILE [CERT KEY [CLIENT_CA]]
"""

import os
import sys
import threading
import time
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection

F = descriptor_pb2.FieldDescriptorProto


def field(name, number, kind, type_name=None):
    f = F(name=name, number=number, type=kind, label=F.LABEL_OPTIONAL, json_name=name)
    if type_name:
        f.type_name = type_name
    return f


common = descriptor_pb2.FileDescriptorProto(name="common.proto", package="loadmark.common", syntax="proto3")
common.message_type.add(name="Meta").field.append(field("tag", 1, F.TYPE_STRING))

tester = descriptor_pb2.FileDescriptorProto(
    name="tester.proto", package="loadmark.test", syntax="proto3", dependency=["common.proto"]
)
req = tester.message_type.add(name="EchoRequest")
req.field.extend([
    field("name", 1, F.TYPE_STRING),
    field("code", 2, F.TYPE_INT32),
    field("meta", 3, F.TYPE_MESSAGE, ".loadmark.common.Meta"),
])
rep = tester.message_type.add(name="EchoReply")
rep.field.extend([field("message", 1, F.TYPE_STRING), field("calls", 2, F.TYPE_INT64)])
svc = tester.service.add(name="Tester")
svc.method.add(name="Echo", input_type=".loadmark.test.EchoRequest", output_type=".loadmark.test.EchoReply")
svc.method.add(
    name="Tick", input_type=".loadmark.test.EchoRequest", output_type=".loadmark.test.EchoReply", server_streaming=True
)

pool = descriptor_pool.Default()
pool.Add(common)
pool.Add(tester)
EchoRequest = message_factory.GetMessageClass(pool.FindMessageTypeByName("loadmark.test.EchoRequest"))
EchoReply = message_factory.GetMessageClass(pool.FindMessageTypeByName("loadmark.test.EchoReply"))

port, count_file = sys.argv[1], sys.argv[2]
lock = threading.Lock()
calls = 0


def echo(request, context):
    global calls
    with lock:
        calls += 1
        n = calls
        tmp = count_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(n))
        os.replace(tmp, count_file)
    if request.code:
        context.abort(grpc.StatusCode(next(s for s in grpc.StatusCode if s.value[0] == request.code)), "failing as asked")
    return EchoReply(message="hello " + request.name, calls=n)


cancelled = 0


def write(path, n):
    with open(path + ".tmp", "w") as f:
        f.write(str(n))
    os.replace(path + ".tmp", path)


def tick(request, context):
    global cancelled
    try:
        for i in range(200):
            if not context.is_active():
                break
            yield EchoReply(message="tick " + request.name, calls=i)
            time.sleep(0.05)
    finally:
        # A cancel stops the iteration (GeneratorExit at the yield) or is seen above.
        if not context.is_active():
            with lock:
                cancelled += 1
                write(count_file + ".cancelled", cancelled)


handler = grpc.method_handlers_generic_handler(
    "loadmark.test.Tester",
    {
        "Echo": grpc.unary_unary_rpc_method_handler(
            echo, request_deserializer=EchoRequest.FromString, response_serializer=EchoReply.SerializeToString
        ),
        "Tick": grpc.unary_stream_rpc_method_handler(
            tick, request_deserializer=EchoRequest.FromString, response_serializer=EchoReply.SerializeToString
        ),
    },
)
# No BDP probing: its PINGs come when the server likes, and the client's PING ACKs (17 bytes
# each) would make two runs of the same calls write different byte counts.
server = grpc.server(
    futures.ThreadPoolExecutor(max_workers=8), options=[("grpc.http2.bdp_probe", 0)]
)
server.add_generic_rpc_handlers((handler,))
reflection.enable_server_reflection(("loadmark.test.Tester", reflection.SERVICE_NAME), server)
if len(sys.argv) > 4:
    read = lambda path: open(path, "rb").read()
    client_ca = read(sys.argv[5]) if len(sys.argv) > 5 else None
    credentials = grpc.ssl_server_credentials(
        [(read(sys.argv[4]), read(sys.argv[3]))],
        root_certificates=client_ca,
        require_client_auth=client_ca is not None,
    )
    # localhost: the name the certificate is for (on 127.0.0.1, and ::1 where there is one).
    server.add_secure_port("localhost:" + port, credentials)
else:
    server.add_insecure_port("127.0.0.1:" + port)
server.start()
print("listening", flush=True)
server.wait_for_termination()
