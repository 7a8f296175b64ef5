-- init(args) sees the arguments after `--`; done() prints what wrk's report examples print,
-- from loadmark's own totals and HDR histograms, after the report.
function init(args)
  if args[1] then
    print("init args: " .. table.concat(args, " ", 1))
  end
end

function done(summary, latency, requests)
  io.write(string.format("requests %d in %.1f s, %d bytes\n", summary.requests,
    summary.duration / 1e6, summary.bytes))
  for _, p in ipairs({ 50, 90, 99, 99.9 }) do
    io.write(string.format("p%g %d us\n", p, latency:percentile(p)))
  end
end
