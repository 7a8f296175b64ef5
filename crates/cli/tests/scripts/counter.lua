-- Each thread numbers its requests 1, 2, 3, ... and sends request n to /bytes/n. setup()
-- gives every thread an id, which goes with n into X-Loadmark-Seq so that the built-in
-- target records every arrival (tests compare what arrived with what was sent).
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end

local n = 0

function request()
  n = n + 1
  return wrk.format(nil, "/bytes/" .. n, { ["X-Loadmark-Seq"] = id * 1000000 + n })
end
