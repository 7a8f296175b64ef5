-- request() formats a new request each call (a new path per request).
local n = 0

function request()
  n = n + 1
  return wrk.format(nil, "/status?n=" .. n)
end
