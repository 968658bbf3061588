-- trial.lua: the wrk script of storh-trial (bench/http). storh-trial writes
-- the plan into files and names them in the environment:
--   TRIAL_METHOD  GET or POST
--   TRIAL_PATHS   request paths, one per line, used in turn
--   TRIAL_TOKENS  bearer tokens, one per line, used in turn (optional)
--   TRIAL_BODY    body template (optional): "{u}" becomes a number no other
--                 request of the run has, "{k}" the index of the token used
--   TRIAL_CTYPE   Content-Type of the body
--   TRIAL_OUT     where done() writes the run's summary as one JSON object
--   TRIAL_QUEUE   a queue name: instead of the paths, a worker's loop on it
--                 (enqueue the body, claim one job, complete what was
--                 claimed with keep_done=false), so its depth stays bounded
-- Requests that do not vary are built once in init(), as wrk's scripting
-- guide advises for fast servers; "{u}" bodies are built per request.

local function read_all(path)
  if not path or path == "" then return nil end
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function read_lines(path)
  local out = {}
  local s = read_all(path)
  if s then
    for line in s:gmatch("[^\n]+") do out[#out + 1] = line end
  end
  return out
end

local function gcd(a, b)
  while b ~= 0 do a, b = b, a % b end
  return a
end

-- setup() runs in the main script state: give each thread its number so
-- "{u}" values never collide across threads
local threads = 0
function setup(thread)
  thread:set("thread_no", threads)
  threads = threads + 1
end

local method, ctype, paths, tokens, body, queue
local built, n = nil, 0
local claimed = {} -- job ids claims answered with, not yet completed
local enqueue_next = true -- enqueue and claim strictly in turn: the depth stays bounded

local function make(i)
  local path = paths[(i % #paths) + 1]
  local headers = {}
  local k = 0
  if #tokens > 0 then
    k = i % #tokens
    headers["Authorization"] = "Bearer " .. tokens[k + 1]
  end
  local b = nil
  if body then
    headers["Content-Type"] = ctype
    b = body:gsub("{k}", tostring(k))
    if b:find("{u}", 1, true) then
      -- thread_no is set by setup(); 2^40 requests per thread is plenty
      b = b:gsub("{u}", string.format("%.0f", (thread_no or 0) * 1099511627776 + i))
    end
  end
  return wrk.format(method, path, headers, b)
end

-- the queue worker's next request: complete a claimed job, else enqueue
-- and claim in turn
local function queue_request()
  local headers = {}
  if #tokens > 0 then headers["Authorization"] = "Bearer " .. tokens[(n % #tokens) + 1] end
  local base = "/v1/queues/" .. queue
  if #claimed > 0 then
    return wrk.format("POST", base .. "/jobs/" .. table.remove(claimed) ..
                      "/complete?keep_done=false", headers)
  end
  enqueue_next = not enqueue_next
  if not enqueue_next then
    headers["Content-Type"] = ctype
    return wrk.format("POST", base .. "/jobs", headers, body)
  end
  return wrk.format("POST", base .. "/claim?limit=1", headers)
end

function init(args)
  queue = os.getenv("TRIAL_QUEUE")
  if queue == "" then queue = nil end
  method = os.getenv("TRIAL_METHOD") or "GET"
  ctype = os.getenv("TRIAL_CTYPE") or "application/json"
  paths = read_lines(os.getenv("TRIAL_PATHS"))
  if #paths == 0 then paths = { "/" } end
  tokens = read_lines(os.getenv("TRIAL_TOKENS"))
  body = read_all(os.getenv("TRIAL_BODY"))
  if queue then
    -- wrk parses replies only when response() is defined: the loop needs them
    response = function(status, headers, reply)
      local id = status == 200 and reply:match('"jobs":%[{"id":"([%x%-]+)"')
      if id then claimed[#claimed + 1] = id end
    end
    return
  end
  if not (body and body:find("{u}", 1, true)) then
    -- one full cycle of paths x tokens is every distinct request
    local cycle = #paths
    if #tokens > 0 then cycle = cycle * #tokens / gcd(#paths, #tokens) end
    built = {}
    for i = 0, cycle - 1 do built[i + 1] = make(i) end
  end
end

function request()
  n = n + 1
  if queue then return queue_request() end
  if built then return built[(n % #built) + 1] end
  return make(n)
end

-- done() runs in its own state: it sees only what wrk hands it
function done(summary, latency, requests)
  local e = summary.errors
  local pct = {}
  -- the latency-by-percentile curve: 0%, 20.6%, 36.9%, ... 99.99%
  for i = 0, 40 do
    local p = 100 * (1 - 10 ^ (-i / 10))
    pct[#pct + 1] = string.format("[%.6f,%d]", p, latency:percentile(p))
  end
  local named = {}
  for _, p in ipairs({ 50, 75, 90, 95, 99, 99.9, 99.99 }) do
    named[#named + 1] = string.format("\"%s\":%d", tostring(p), latency:percentile(p))
  end
  local out = string.format(
    '{"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"mean":%.3f,"stdev":%.3f,"max":%d,"percentiles":{%s}},' ..
    '"curve":[%s]}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.stdev, latency.max,
    table.concat(named, ","), table.concat(pct, ","))
  local f = assert(io.open(os.getenv("TRIAL_OUT"), "w"))
  f:write(out)
  f:close()
end
