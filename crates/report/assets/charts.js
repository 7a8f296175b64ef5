// loadmark's interactive report charts (inlined by crates/report/src/render/html/interactive.rs
// after uPlot). Reads the JSON in <script id="lm-charts">, draws each chart with uPlot into the
// <figure data-chart=ID> of the same name and marks the figure "lm-on", which hides its SVG on
// screen (print shows the SVG). Every chart over time shares one cursor ("lm-time"); charts
// over a latency percentile ("nines") or another x ("xy": a swept parameter, an offered rate)
// have their own.
// No request leaves the page. window.lmCharts maps each figure's name to its uPlot, for tests.
(function () {
  "use strict";
  var data = document.getElementById("lm-charts");
  if (!data || typeof uPlot !== "function") return;
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  var charts = {};
  window.lmCharts = charts;

  function percent(x) {
    var q = 100 * (1 - Math.pow(10, -x));
    return (Math.round(q * 1e4) / 1e4) + "%";
  }
  function shown(v, unit) {
    if (v == null) return "–";
    return String(v) + (!unit ? "" : unit.charAt(0) === "/" ? unit : " " + unit);
  }

  function options(c, width, height) {
    var nines = c.kind === "nines";
    var time = c.kind === "time";
    var series = [{
      label: nines ? "percentile" : time ? "second" : c.xlabel,
      value: function (u, v) {
        return v == null ? "–" : nines ? percent(v) : time ? v + " s" : String(v);
      }
    }];
    var line = 0;
    c.series.forEach(function (s) {
      var markers = !!s.tags;
      var color = COLORS[(markers ? line - 1 : line) % COLORS.length];
      var o = {
        label: s.label,
        stroke: color,
        width: markers ? 0 : 2,
        spanGaps: true,
        value: function (u, v, si, i) {
          if (v == null) return "–";
          var tag = markers && i != null ? s.tags[i] : null;
          return (tag ? tag + " " : "") + shown(v, c.unit);
        }
      };
      if (markers) {
        o.paths = function () { return null; };
        o.points = { show: true, size: 9, width: 2, stroke: color, fill: "#fff" };
      } else {
        if (line >= COLORS.length) o.dash = [7, 4];
        line++;
      }
      series.push(o);
    });
    var y = { distr: c.log ? 3 : 1 };
    if (c.log) y.log = 10;
    if (c.ymax != null) y.range = [0, c.ymax * 1.05];
    else if (!c.log) y.range = function (u, lo, hi) { return [0, hi > 0 ? hi * 1.05 : 1]; };
    var x = { time: false };
    var axisX = { label: c.xlabel };
    // Whole seconds on a time axis (a run's seconds are whole; a monitor's may be halves).
    if (time) axisX.incrs = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];
    if (nines) {
      x.range = function (u, lo, hi) { return [0, Math.max(1, Math.ceil(hi))]; };
      axisX.splits = function (u, ai, lo, hi) {
        var s = [];
        for (var n = Math.ceil(lo); n <= hi; n++) s.push(n);
        if (lo <= Math.LOG10E * Math.log(2) && hi >= 1) s.splice(1, 0, Math.log10(2));
        return s;
      };
      axisX.values = function (u, splits) { return splits.map(percent); };
    }
    return {
      title: c.title,
      width: width,
      height: height,
      series: series,
      scales: { x: x, y: y },
      axes: [axisX, { label: c.ylabel, size: 64 }],
      cursor: {
        drag: { x: true, y: false, setScale: true },
        sync: time ? { key: "lm-time", setSeries: false } : undefined
      },
      legend: { live: true },
      hooks: { draw: c.guides ? [guides(c.guides)] : [] }
    };
  }

  // The spectrum's labelled percentiles: a dashed vertical line each.
  function guides(list) {
    return function (u) {
      var ctx = u.ctx;
      var top = u.bbox.top, bottom = top + u.bbox.height;
      ctx.save();
      ctx.strokeStyle = "#888";
      ctx.fillStyle = "#444";
      ctx.setLineDash([4, 3]);
      ctx.lineWidth = uPlot.pxRatio;
      ctx.font = Math.round(11 * uPlot.pxRatio) + "px system-ui, sans-serif";
      var placed = [];
      list.forEach(function (g) {
        var x = Math.round(u.valToPos(g.x, "x", true));
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
        ctx.beginPath();
        ctx.moveTo(x, top);
        ctx.lineTo(x, bottom);
        ctx.stroke();
        // Labels of guides close together (a knee at the capacity) go one under the other.
        var row = placed.filter(function (p) { return Math.abs(p - x) < 80 * uPlot.pxRatio; }).length;
        placed.push(x);
        ctx.fillText(g.label, x + 4 * uPlot.pxRatio, top + (12 + 13 * row) * uPlot.pxRatio);
      });
      ctx.restore();
    };
  }

  function draw(c) {
    var fig = document.querySelector('figure.chart[data-chart="' + c.id + '"]');
    if (!fig) return;
    var small = fig.closest(".multiples") !== null;
    var box = document.createElement("div");
    box.className = "lm-plot";
    fig.insertBefore(box, fig.firstChild);
    fig.classList.add("lm-on");
    var height = small ? 200 : 300;
    var columns = [c.x].concat(c.series.map(function (s) { return s.data; }));
    var u = new uPlot(options(c, Math.max(280, box.clientWidth), height), columns, box);
    charts[c.id] = u;
    window.addEventListener("resize", function () {
      u.setSize({ width: Math.max(280, box.clientWidth), height: height });
    });
  }

  JSON.parse(data.textContent).forEach(draw);
})();
