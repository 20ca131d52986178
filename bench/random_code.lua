-- wrk script: GET /<code> with a code drawn uniformly from the file named by
-- the CODES environment variable (one path per line, without the leading /).
-- With ORDER=seq each thread walks the file in order instead, the k-th
-- thread starting k halves of the way in (wrapping): once each of two
-- threads made half a file of requests, every code was visited (the
-- warm-up of harness.warm_zone).
local codes = {}
for line in io.lines(os.getenv("CODES")) do
  codes[#codes + 1] = "/" .. line
end
local n = #codes
local seq = os.getenv("ORDER") == "seq"
local threads = 0

setup = function(thread)
  thread:set("seed", math.random(1, 1e9))
  thread:set("pos", (threads * math.floor(n / 2)) % n)
  threads = threads + 1
end

init = function()
  math.randomseed(seed or os.time())
end

request = function()
  if seq then
    pos = pos % n + 1
    return wrk.format("GET", codes[pos])
  end
  return wrk.format("GET", codes[math.random(n)])
end
