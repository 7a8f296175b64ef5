// A Node.js HTTP/1.1 server for bench/serverview.py --server node: answers /json (the same
// 100-odd bytes of JSON as the nginx setup) and /10k (10,240 bytes), keeps connections alive,
// counts every request it answers and prints the count when told to stop (SIGINT/SIGTERM).
// Listens on 127.0.0.1 on the port it is given (0: any), and says which on its first line.
"use strict";
const http = require("http");

const json = Buffer.from(
  '{"id":12345,"name":"anchor-bench","ok":true,"tags":["a","b","c"],"msg":"' + "x".repeat(22) + '"}'
);
const tenK = Buffer.alloc(10240, "a");
let served = 0;

const server = http.createServer((req, res) => {
  served++;
  const body = req.url === "/10k" ? tenK : json;
  res.writeHead(200, {
    "Content-Type": req.url === "/10k" ? "application/octet-stream" : "application/json",
    "Content-Length": body.length,
  });
  res.end(body);
});
server.keepAliveTimeout = 75000;
server.listen(Number(process.argv[2] || 0), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    console.log(`served ${served} requests`);
    process.exit(0);
  });
}
