-- Pipelining as in wrk's pipeline.lua example: init() builds three requests into one
-- string and request() returns it, so each write carries three requests.
local batch

function init(args)
  local parts = {}
  for i = 1, 3 do
    parts[i] = wrk.format(nil, "/bytes/" .. i, { ["X-Loadmark-Seq"] = tostring(i) })
  end
  batch = table.concat(parts)
end

function request()
  return batch
end
