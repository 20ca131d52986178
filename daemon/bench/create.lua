-- wrk script: POST /api/v1/links over keep-alive, a distinct URL per request.
-- Needs SHORTLINK_KEY in the environment (an API key with links:write).
local key = os.getenv("SHORTLINK_KEY")
local counter = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Api-Key"] = key

request = function()
  counter = counter + 1
  local body = string.format('{"url":"https://example.com/landing/%d/%d?utm_source=bench"}', counter, math.random(1, 1e9))
  return wrk.format(nil, "/api/v1/links", nil, body)
end

done = function(summary, latency, requests)
  io.write(string.format("non-2xx or errors: %d\n", summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
