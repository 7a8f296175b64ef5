-- A syntax error on line 3.
function request()
  return wrk.format(nil, "/" .. )
end
