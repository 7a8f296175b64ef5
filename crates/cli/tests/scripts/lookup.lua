-- wrk.lookup and wrk.connect: setup() prints each thread's address (thread.addr, set from
-- wrk.lookup's first connectable address); init() looks up the port given as an argument
-- (one nobody listens on) and prints whether it connects.
function setup(thread)
  print("setup addr " .. tostring(thread.addr))
end

function init(args)
  local addrs = wrk.lookup("127.0.0.1", args[1])
  print("lookup " .. #addrs .. " " .. tostring(addrs[1]) .. " " .. tostring(wrk.connect(addrs[1])))
  local own = wrk.lookup(wrk.host, wrk.port)
  print("lookup own " .. tostring(own[1]) .. " " .. tostring(wrk.connect(own[1])))
end

-- response() fails on line 18 for every response: each request is a script error. The
-- built-in target (hyper) sends header names in lower case; they are passed as received.
function response(status, headers, body)
  error("response saw " .. status .. " " .. tostring(headers["content-type"]))
end
