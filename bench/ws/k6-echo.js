// bench/ws/k6-echo.js: k6's side of the WebSocket echo benchmark (issue 7), the same workload as
//   loadmark ws ws://127.0.0.1:P/ws/echo --sessions 400 --session-duration 10s --interval 1ms \
//     --payload 128..4096 -d 20s -t 1
// run as (bench/ws/run does this):
//   k6 run -e URL=ws://127.0.0.1:P/ws/echo -e VUS=400 -e DUR=20 -e SESSION=10 -e INTERVAL=1 \
//     -e PMIN=128 -e PMAX=4096 --summary-export summary.json bench/ws/k6-echo.js
//
// Each VU runs k6's VU loop: one iteration = one session. ws.connect() blocks until the socket
// closes; the socket sends a random 128..4096 B text message every INTERVAL ms
// (socket.setInterval), counts what comes back, and closes itself after SESSION s
// (socket.setTimeout(() => socket.close(), ...)); the next iteration opens a new session in its
// place. k6 counts the messages itself in its built-in metrics ws_msgs_sent and
// ws_msgs_received (one sample per message), read from the summary export.
//
// The payload is made as cheap as JavaScript allows, so the comparison does not charge k6 for
// an inefficient script: one random 8 KiB string of letters per VU, built once at init, and each
// message is a substring of a random length (uniform in PMIN..PMAX) at a random offset. (goja
// slices ASCII strings without copying.)
import ws from 'k6/ws';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const URL = __ENV.URL || 'ws://127.0.0.1:18095/ws/echo';
const VUS = parseInt(__ENV.VUS || '400', 10);
const DUR = parseInt(__ENV.DUR || '20', 10);          // seconds, whole test
const SESSION = parseFloat(__ENV.SESSION || '10');     // seconds per session
const INTERVAL = parseFloat(__ENV.INTERVAL || '1');    // ms between sends, per session
const PMIN = parseInt(__ENV.PMIN || '128', 10);
const PMAX = parseInt(__ENV.PMAX || '4096', 10);

// Echoes counted by the script, as a cross-check of k6's own ws_msgs_received: a plain variable
// per session, added to the metric once when the session closes (one sample per session, not
// per message, so the cross-check costs k6 nothing measurable).
const echoes = new Counter('echoes_received');

export const options = {
  scenarios: {
    echo: {
      executor: 'constant-vus',
      vus: VUS,
      duration: `${DUR}s`,
      // Stop at DUR like loadmark's -d: sessions still open then are closed, not waited for.
      gracefulStop: '0s',
    },
  },
  // Keep k6's per-request tags minimal (fewer time series to aggregate).
  systemTags: ['status', 'url'],
  summaryTrendStats: ['avg', 'med', 'p(99)', 'max'],
};

const ALPHA = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
function randomString(n) {
  const parts = [];
  for (let i = 0; i < n; i++) parts.push(ALPHA[Math.floor(Math.random() * ALPHA.length)]);
  return parts.join('');
}
const BASE_LEN = 2 * PMAX;
const BASE = randomString(BASE_LEN);

function payload() {
  const len = PMIN + Math.floor(Math.random() * (PMAX - PMIN + 1));
  const off = Math.floor(Math.random() * (BASE_LEN - len + 1));
  return BASE.substring(off, off + len);
}

export default function () {
  let received = 0;
  const res = ws.connect(URL, null, function (socket) {
    socket.on('open', function () {
      socket.setInterval(function () {
        socket.send(payload());
      }, INTERVAL);
      socket.setTimeout(function () {
        socket.close();
      }, SESSION * 1000);
    });
    socket.on('message', function () {
      received++;
    });
  });
  echoes.add(received);
  check(res, { 'status is 101': (r) => r && r.status === 101 });
}
