-- request() builds each request: a mix of three paths of the built-in target, one in four a
-- POST with a JSON body. Lua runs on every request, so this costs more CPU than a static one.
local paths = { "/json", "/status", "/bytes/512" }
local n = 0

function request()
  n = n + 1
  if n % 4 == 0 then
    return wrk.format("POST", "/echo", { ["Content-Type"] = "application/json" }, '{"n":' .. n .. '}')
  end
  return wrk.format("GET", paths[n % #paths + 1])
end
