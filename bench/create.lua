-- wrk script: POST /api/v1/links over keep-alive, a distinct URL per request.
-- SHORTLINK_KEY in the environment: an API key with links:write.
local key = os.getenv("SHORTLINK_KEY")
local counter = 0

setup = function(thread)
  thread:set("seed", math.random(1, 1e9))
end

init = function()
  math.randomseed(seed or os.time())
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Api-Key"] = key

request = function()
  counter = counter + 1
  local body = string.format('{"url":"https://example.com/landing/%d/%d?utm_source=bench"}', counter, math.random(1, 1e9))
  return wrk.format(nil, "/api/v1/links", nil, body)
end
