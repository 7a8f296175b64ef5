-- init() fails: exit 2 before any load, naming line 4.
function init(args)
  local t = nil
  return t.field
end
