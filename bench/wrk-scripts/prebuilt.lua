-- request() returns one request built in init(): the cheapest dynamic script.
local req

function init(args)
  req = wrk.format(nil, "/status")
end

function request()
  return req
end
