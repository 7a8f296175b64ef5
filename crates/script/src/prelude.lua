-- The `wrk` table loadmark gives every script: the fields and functions of wrk's scripting
-- API (its SCRIPTING document), written for loadmark. Rust adds lookup, connect, thread and
-- the URL's parts before the user's script runs.
local wrk = {
  scheme = "http",
  host = "localhost",
  port = nil,
  method = "GET",
  path = "/",
  headers = {},
  body = nil,
  thread = nil,
}

-- One HTTP/1.1 request; missing arguments come from the wrk table. As in wrk, the headers
-- table passed in gains Host (when missing) and Content-Length (the body's, or none).
function wrk.format(method, path, headers, body)
  method = method or wrk.method
  path = path or wrk.path
  headers = headers or wrk.headers
  body = body or wrk.body
  if headers["Host"] == nil then
    headers["Host"] = wrk.headers["Host"]
  end
  if body then
    headers["Content-Length"] = string.len(body)
  else
    headers["Content-Length"] = nil
  end
  local lines = { method .. " " .. path .. " HTTP/1.1" }
  for name, value in pairs(headers) do
    lines[#lines + 1] = name .. ": " .. tostring(value)
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = body or ""
  return table.concat(lines, "\r\n")
end

-- The addresses of the target that accept a connection (kept in wrk.addrs).
function wrk.resolve(host, service)
  local found = wrk.lookup(host, service)
  local usable = {}
  for _, addr in ipairs(found) do
    if wrk.connect(addr) then
      usable[#usable + 1] = addr
    end
  end
  wrk.addrs = usable
end

-- Runs in the setup state once per thread: its address, then the user's setup().
function wrk.setup(thread)
  thread.addr = wrk.addrs[1]
  if type(setup) == "function" then
    setup(thread)
  end
end

-- Runs in each thread's own state: the Host header, the user's init(), then the request
-- the thread sends when the script has no request() of its own.
function wrk.init(args)
  if wrk.headers["Host"] == nil then
    local host = wrk.host
    if string.find(host, ":", 1, true) then
      host = "[" .. host .. "]"
    end
    if wrk.port then
      host = host .. ":" .. wrk.port
    end
    wrk.headers["Host"] = host
  end
  if type(init) == "function" then
    init(args)
  end
  local fixed = wrk.format()
  wrk.request = function()
    return fixed
  end
end

return wrk
