-- A POST with a body and a secret header, all set in the wrk table (no request()): the
-- request is built once. response() counts the echoes that match the body; done() adds
-- the threads' counts up through thread:get, as wrk's report examples do.
wrk.method = "POST"
wrk.path = "/echo"
wrk.body = "name=loadmark&n=42"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Authorization"] = "Bearer s3cret-token"
wrk.headers["X-Loadmark-Seq"] = "7"

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

echoed = 0

function response(status, headers, body)
  if status == 200 and body == wrk.body then
    echoed = echoed + 1
  end
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do
    total = total + thread:get("echoed")
  end
  print("echoed " .. total .. " of " .. summary.requests)
end
