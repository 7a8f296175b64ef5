-- delay() spaces a connection's requests by 20 ms; response() stops the thread after
-- five responses (thread:stop(), from the thread's own state).
local seen = 0

function delay()
  return 20
end

function response(status, headers, body)
  seen = seen + 1
  if seen >= 5 then
    wrk.thread:stop()
  end
end
