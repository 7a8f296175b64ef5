-- request() works four times, then fails on line 8 on every later call; response() is
-- not defined, so only request() errors are counted.
local n = 0

function request()
  n = n + 1
  if n > 4 then
    error("no more requests after " .. (n - 1))
  end
  return wrk.format(nil, "/status")
end
