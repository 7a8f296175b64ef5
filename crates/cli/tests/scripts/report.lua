-- done() prints what wrk's report examples print: the summary, latency statistics and
-- percentiles, and the distinct values through latency(i). init() prints its args.
function init(args)
  if args[1] then
    print("init args " .. args[0] .. " " .. table.concat(args, " ", 1))
  end
end

function done(summary, latency, requests)
  print(string.format("done requests %d duration %d bytes %d", summary.requests,
    summary.duration, summary.bytes))
  local e = summary.errors
  print(string.format("done errors %d %d %d %d %d", e.connect, e.read, e.write, e.status,
    e.timeout))
  print(string.format("done latency %d %d %.2f %.2f", latency.min, latency.max, latency.mean,
    latency.stdev))
  for _, p in ipairs({ 50, 90, 99, 99.999 }) do
    print(string.format("done p%g %d", p, latency:percentile(p)))
  end
  local counted = 0
  for i = 1, #latency do
    local value, count = latency(i)
    counted = counted + count
  end
  print(string.format("done distinct %d counted %d", #latency, counted))
  print(string.format("done rate %d %d", requests.min, requests.max))
  print(string.format("done bit %s %d", bit.tohex(bit.bor(0xf0, 0x0f), 4), bit.band(-1, 0x7fffffff)))
end
