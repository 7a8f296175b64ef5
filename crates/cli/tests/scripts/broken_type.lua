-- request() returns a string at first (the check before the load passes), then a number.
local n = 0

function request()
  n = n + 1
  if n > 2 then
    return 42
  end
  return wrk.request()
end
