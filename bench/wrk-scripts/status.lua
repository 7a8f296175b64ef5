-- response() counts statuses: headers and bodies go to Lua for every response.
local statuses = {}

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
