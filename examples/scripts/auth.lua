-- A static request with a header the script sets, as in wrk's auth examples: no request()
-- function, so no Lua runs during the load (the request is built once). The header's value
-- is redacted in every report, as a -H secret is.
wrk.headers["Authorization"] = "Bearer example-token"
wrk.headers["Accept"] = "application/json"
