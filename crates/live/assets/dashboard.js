// loadmark's live dashboard (served by crates/live/src/web): reads the run's events from
// /events (server-sent events, JSON as crates/live/src/web/feed.rs writes them) and draws them
// with uPlot, inlined before this script. Nothing else is fetched until the run ends; then the
// final report is fetched from /report and kept in the page (a blob), so it stays open after
// loadmark has exited. window.lmLive holds what the page shows, for tests.
(function () {
  "use strict";
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  var LOG_SPREAD = 100;
  var live = { step: null, steps: [], ticks: 0, ended: false, reportBytes: 0, missed: false };
  window.lmLive = live;
  var $ = function (id) { return document.getElementById(id); };
  var data, charts = {}, logLatency = false, totals;

  function us(v) {
    if (v == null) return "–";
    if (v >= 1e6) return (v / 1e6).toFixed(2) + " s";
    if (v >= 1e3) return (v / 1e3).toFixed(2) + " ms";
    return v + " µs";
  }
  function num(v) { return v == null ? "–" : Math.round(v).toLocaleString("en-US"); }
  function rate(v) {
    return v == null ? "–" : v.toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  }
  // Steps of a count axis: whole numbers only.
  var COUNT_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5,
                     1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8];

  function width() { return Math.max(400, Math.min(580, (document.body.clientWidth - 40) / 2)); }

  function chart(id, title, labels, opts) {
    var series = [{ label: "second", value: function (u, v) { return v == null ? "–" : v + " s"; } }];
    labels.forEach(function (l, i) {
      series.push({ label: l, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: true,
        value: opts.fmt ? function (u, v) { return opts.fmt(v); } : undefined });
    });
    var y = opts.log ? { distr: 3, log: 10 } : { range: function (u, lo, hi) { return [0, hi > 0 ? hi * 1.05 : 1]; } };
    var el = $(id);
    el.innerHTML = "";
    var u = new uPlot({
      title: title, width: width(), height: 260, series: series,
      scales: { x: { time: false }, y: y },
      axes: [{ label: "seconds", incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600] },
             { values: opts.fmt ? function (u, vs) { return vs.map(opts.fmt); } : undefined, size: 70,
               incrs: opts.log ? undefined : COUNT_STEPS }],
      cursor: { sync: { key: "lm-live" } }
    }, null, el);
    charts[id] = u;
    return u;
  }

  function newStep(e) {
    live.step = e;
    totals = { responses: 0, failed: 0, checks: 0 };
    data = { x: [], rps: [], target: [], p50: [], p90: [], p99: [], max: [], failed: [], kinds: {},
             opened: [], open: [] };
    logLatency = false;
    $("url").textContent = e.url;
    $("step").textContent = e.steps > 1 ? "step " + e.step + " of " + e.steps + " ·" : "";
    $("status").textContent = "running";
    $("status").className = "";
    var open = e.model === "open";
    $("tile-lag").hidden = !open;
    chart("c-rate", e.websocket ? "Messages and sessions per second" : "Requests per second",
          open ? ["achieved", "requested"] : ["achieved"], { fmt: function (v) { return v == null ? "–" : num(v); } });
    latencyChart();
    chart("c-errors", "Failed per second", ["failed"], { fmt: num });
    chart("c-connections", "Connections", ["opened in the second", "open"], { fmt: num });
    ["t-responses", "t-failed", "t-checks"].forEach(function (id) { $(id).textContent = "0"; });
  }

  function latencyChart() {
    chart("c-latency", "Latency" + (logLatency ? " (log axis)" : ""), ["p50", "p90", "p99", "max"],
          { fmt: us, log: logLatency });
  }

  function redraw() {
    if (!data) return;
    var open = live.step && live.step.model === "open";
    charts["c-rate"].setData(open ? [data.x, data.rps, data.target] : [data.x, data.rps]);
    charts["c-latency"].setData([data.x, data.p50, data.p90, data.p99, data.max]);
    var kinds = Object.keys(data.kinds);
    var u = charts["c-errors"];
    kinds.forEach(function (k, i) {
      if (u.series.length < i + 3) {
        u.addSeries({ label: k, stroke: COLORS[(i + 1) % COLORS.length], width: 2, spanGaps: true }, u.series.length);
      }
    });
    charts["c-errors"].setData([data.x, data.failed].concat(kinds.map(function (k) { return data.kinds[k]; })));
    charts["c-connections"].setData([data.x, data.opened, data.open]);
  }

  function onSecond(s, state) {
    if (s.partial_s != null) return; // a fragment of a second is no rate
    var i = data.x.length;
    data.x.push(s.second);
    data.rps.push(live.step.websocket ? s.messages_received : s.responses);
    data.target.push(s.target);
    data.p50.push(s.p50_us || null);
    data.p90.push(s.p90_us || null);
    data.p99.push(s.p99_us || null);
    data.max.push(s.max_us || null);
    data.failed.push(s.failed);
    Object.keys(s.errors).forEach(function (k) {
      if (!data.kinds[k]) data.kinds[k] = data.x.slice(0, i).map(function () { return 0; });
    });
    Object.keys(data.kinds).forEach(function (k) { data.kinds[k].push(s.errors[k] || 0); });
    data.opened.push(s.opened);
    data.open.push(state.open_connections);
    var positive = data.p50.concat(data.max).filter(function (v) { return v > 0; });
    var spread = positive.length ? Math.max.apply(null, positive) / Math.min.apply(null, positive) : 1;
    if (!logLatency && spread > LOG_SPREAD) { logLatency = true; latencyChart(); }
  }

  function sum(o) { return Object.keys(o).reduce(function (a, k) { return a + o[k]; }, 0); }

  function onTick(e) {
    live.ticks++;
    e.seconds.forEach(function (s) {
      if (!s.warmup) {
        totals.responses += s.responses;
        totals.failed += s.failed;
        totals.checks += s.checks_failed;
      }
      onSecond(s, e);
    });
    var last = e.seconds.filter(function (s) { return s.partial_s == null; }).pop();
    if (last) {
      $("t-rps").textContent = rate(live.step.websocket ? last.messages_received : last.responses);
      $("t-latency").textContent = us(last.p50_us) + " / " + us(last.p99_us);
      $("t-lag").textContent = us(last.lag_p99_us) + " / " + num(last.dropped);
      $("tile-lag").className = "tile" + (last.late || last.dropped ? " bad" : "");
    }
    $("t-responses").textContent = num(totals.responses);
    $("t-failed").textContent = num(totals.failed);
    $("tile-failed").className = "tile" + (totals.failed ? " bad" : "");
    $("t-checks").textContent = num(totals.checks);
    $("tile-checks").hidden = totals.checks === 0;
    $("t-open").textContent = num(e.open_connections);
    $("t-inflight").textContent = num(e.in_flight);
    $("t-client").textContent = Math.round(100 * e.busiest_worker) + "% CPU" + (e.saturated ? " · saturated" : "");
    $("tile-client").className = "tile" + (e.saturated ? " bad" : "");
    var s = live.step;
    var time = s.duration_s ? " · " + Math.round(e.elapsed_s) + " s of " + Math.round(s.duration_s) + " s"
                            : " · " + Math.round(e.elapsed_s) + " s";
    if (!e.finished) $("status").textContent = "running" + time;
    redraw();
  }

  function onStepEnd(e) {
    live.steps.push(e);
    // The step's totals as its report has them (measured seconds, warm-up left out).
    $("t-responses").textContent = num(e.responses);
    $("t-failed").textContent = num(e.failed);
    $("t-rps").textContent = rate(e.rps);
    $("t-rps").previousSibling.textContent = "req/s (whole step)";
    $("t-latency").textContent = us(e.p50_us) + " / " + us(e.p99_us);
    $("status").textContent = "step finished";
    var tbody = $("steps").tBodies[0];
    var row = tbody.insertRow();
    [e.step, e.url, num(e.responses), rate(e.rps), us(e.p50_us), us(e.p99_us), num(e.failed)]
      .forEach(function (v, i) { var c = row.insertCell(); c.textContent = v; if (i === 1) c.className = "url"; });
    var many = live.step && live.step.steps > 1;
    $("steps").hidden = !many;
    $("steps-title").hidden = !many;
  }

  function onEnd(e, source) {
    live.ended = true;
    source.close();
    $("status").textContent = "finished";
    $("status").className = "done";
    fetch(e.report).then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); }).then(function (html) {
      live.reportBytes = html.length;
      var url = URL.createObjectURL(new Blob([html], { type: "text/html" }));
      var box = $("report");
      box.innerHTML = "";
      var a = document.createElement("a");
      a.href = url; a.target = "_blank"; a.id = "report-link";
      a.textContent = "Open the final report";
      box.appendChild(a);
      box.appendChild(document.createTextNode(" (kept in this page: it opens after loadmark has exited)"));
      box.style.display = "block";
    }, function () {
      $("report").textContent = "The final report could not be fetched; loadmark wrote it where you asked.";
      $("report").style.display = "block";
    });
  }

  var source = new EventSource("/events");
  source.onmessage = function (m) {
    var e = JSON.parse(m.data);
    if (e.type === "step") newStep(e);
    else if (e.type === "tick" && data) onTick(e);
    else if (e.type === "step_end") onStepEnd(e);
    else if (e.type === "end") onEnd(e, source);
  };
  source.addEventListener("missed", function () { live.missed = true; });
  source.onerror = function () {
    if (!live.ended) { $("status").textContent = "connection to loadmark lost; retrying"; $("status").className = "lost"; }
  };
  window.addEventListener("resize", function () {
    Object.keys(charts).forEach(function (k) { charts[k].setSize({ width: width(), height: 260 }); });
  });
})();
