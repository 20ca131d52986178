-- wrk script: GET /<code> with a code drawn uniformly from the file named by
-- the CODES environment variable (one path per line, without the leading /).
local codes = {}
for line in io.lines(os.getenv("CODES")) do
  codes[#codes + 1] = "/" .. line
end
local n = #codes

setup = function(thread)
  thread:set("seed", math.random(1, 1e9))
end

init = function()
  math.randomseed(seed or os.time())
end

request = function()
  return wrk.format("GET", codes[math.random(n)])
end
