-- Instrumentation for bench/chat.ts, loaded with dofile() into the Neovim being measured.
-- It only reads the chat through require('caboose.chat').buf() (the buffer's text), so it keeps
-- working when the chat's internals change (frames, a compose window, async RPC).
local uv = vim.uv
local B = { gaps = {} }
_G.caboose_bench = B

-- Main-loop stall probe. A libuv timer fires every 2 ms and queues a callback on the main loop
-- (vim.schedule); the gap between two consecutive runs of those callbacks is how long the main loop
-- could not run anything: a key press typed then would have waited as long. This sees both kinds of
-- stall: Lua/C work hogging the loop, and a blocking vim.rpcrequest (its nested loop serves only the
-- host's channel, so scheduled callbacks, other clients' requests and typed keys all wait).
-- Resolution: the timer period (2 ms). Gaps >= 4 ms are kept as { end_ns, gap_ns, cpu_ms }: cpu_ms is
-- Neovim's CPU time (user + system, getrusage) during the gap, which tells its own work from a wait for
-- a CPU on a busy machine.
local function cpu_now()
  local r = uv.getrusage()
  return (r.utime.sec + r.stime.sec) * 1e3 + (r.utime.usec + r.stime.usec) / 1e3
end

-- The main thread's CPU time (CLOCK_THREAD_CPUTIME_ID, ns) and its time runnable but waiting for a CPU
-- (preempted, or none free: /proc/thread-self/schedstat's second field, ns). A gap's wall time is its
-- CPU, its wait for a CPU, and the time the thread was blocked (I/O, sleeping); 0 where unavailable.
local thread_cpu = function()
  return 0
end
do
  local ok, ffi = pcall(require, 'ffi')
  if ok and jit and jit.os == 'Linux' then
    pcall(ffi.cdef, 'typedef struct { long tv_sec; long tv_nsec; } caboose_probe_ts; int clock_gettime(int, caboose_probe_ts *);')
    local ts = ffi.new('caboose_probe_ts')
    thread_cpu = function()
      ffi.C.clock_gettime(3, ts) -- CLOCK_THREAD_CPUTIME_ID
      return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
    end
  end
end
local function sched_now()
  local wait = 0
  local f = io.open('/proc/thread-self/schedstat', 'r')
  if f then
    wait = tonumber((f:read('*l') or ''):match('^%d+%s+(%d+)')) or 0
    f:close()
  end
  return thread_cpu(), wait
end

function B.probe_start()
  B.probe_stop()
  B.gaps = {}
  local last = uv.hrtime()
  local last_cpu = cpu_now()
  local last_run, last_wait = sched_now()
  local pending = false
  local timer = assert(uv.new_timer())
  timer:start(2, 2, function()
    if pending then
      return
    end
    pending = true
    vim.schedule(function()
      pending = false
      local now, cpu = uv.hrtime(), cpu_now()
      local run, wait = sched_now()
      local gap = now - last
      last = now
      B.settle_check(now)
      if gap >= 4e6 then
        table.insert(B.gaps, { now, gap, cpu - last_cpu, (run - last_run) / 1e6, (wait - last_wait) / 1e6 })
      end
      last_cpu, last_run, last_wait = cpu, run, wait
    end)
  end)
  B.timer = timer
end

--- The end of a stream run's window: not the moment the reply's last characters are in the chat
--- (t_done) but once the chat has been drawn with them — its treesitter highlighter not parsing any more
--- (Neovim 0.12 parses in the background, in turns after the append) — at least SETTLE_MIN_NS after
--- t_done and for SETTLE_HOLD_NS in a row. Stalls, eval round trips and Neovim's CPU are measured up to
--- there (t_settled, B.cpu_settled), so the work a reply's end leaves to later turns is counted.
B.SETTLE_MIN_NS = 30e6
B.SETTLE_HOLD_NS = 5e6
function B.settle_check(now)
  if not B.t_done or B.t_settled then
    return
  end
  local hl = B.watch_buf and vim.treesitter.highlighter.active[B.watch_buf]
  if hl and hl.parsing == true then
    B.quiet_since = nil
    return
  end
  B.quiet_since = B.quiet_since or now
  if now - B.t_done >= B.SETTLE_MIN_NS and now - B.quiet_since >= B.SETTLE_HOLD_NS then
    B.t_settled = now
    B.cpu_settled = B.cpu()
  end
end

function B.probe_stop()
  if B.timer then
    B.timer:stop()
    B.timer:close()
    B.timer = nil
  end
end

--- The longest main-loop gap (ms) that overlaps [from_ns, to_ns] (the probe must have run meanwhile), and
--- Neovim's CPU time during it (ms); then the main thread's CPU time in it and its wait for a CPU (ms).
function B.max_stall(from_ns, to_ns)
  local max, cpu, run, wait = 0, 0, 0, 0
  for _, g in ipairs(B.gaps) do
    local stop, len = g[1], g[2]
    if stop >= from_ns and stop - len <= to_ns and len > max then
      max, cpu, run, wait = len, g[3] or 0, g[4] or 0, g[5] or 0
    end
  end
  return max / 1e6, cpu, run, wait
end

--- The most CPU time (ms) Neovim spent in one gap overlapping [from_ns, to_ns]: its heaviest piece of
--- work between two probe ticks, whatever the machine's load made of the gap's length.
function B.max_gap_cpu(from_ns, to_ns)
  local max = 0
  for _, g in ipairs(B.gaps) do
    local stop, len = g[1], g[2]
    if stop >= from_ns and stop - len <= to_ns and (g[3] or 0) > max then
      max = g[3]
    end
  end
  return max
end

--- The most main-thread CPU time (ms) in one gap overlapping [from_ns, to_ns] (gaps ≥ 4 ms of wall time).
function B.max_gap_run(from_ns, to_ns)
  local max = 0
  for _, g in ipairs(B.gaps) do
    local stop, len = g[1], g[2]
    if stop >= from_ns and stop - len <= to_ns and (g[4] or 0) > max then
      max = g[4]
    end
  end
  return max
end

--- Watches the chat buffer's text: t_first when `first` appears, t_done when `done` appears
--- (hrtime, ns). Reads only the changed lines (at most the last 200 of a change). `buf`: the buffer
--- to watch (default caboose's chat; bench/codecompanion.ts passes codecompanion's chat buffer).
function B.watch(first, done, buf)
  if done == vim.NIL then
    done = nil
  end
  B.t_first, B.t_done, B.watch_error = nil, nil, nil
  B.t_settled, B.cpu_settled, B.quiet_since, B.watch_buf = nil, nil, nil, nil
  B.watch_id = (B.watch_id or 0) + 1
  local id = B.watch_id
  local function check(b, firstline, new_last)
    local now = uv.hrtime()
    local lines = vim.api.nvim_buf_get_lines(b, math.max(firstline, new_last - 200), new_last, false)
    for _, l in ipairs(lines) do
      if not B.t_first and l:find(first, 1, true) then
        B.t_first = now
      end
      if done and not B.t_done and l:find(done, 1, true) then
        B.t_done = now
        -- CPU of Neovim and the host the moment the whole reply is in (not a client round trip later,
        -- when the host is already ending the turn: session rows, the title request).
        B.cpu_done = B.cpu()
      end
    end
  end
  local function attach(buf)
    B.watch_buf = buf
    vim.api.nvim_buf_attach(buf, false, {
      on_lines = function(_, b, _, firstline, _, new_last)
        if id ~= B.watch_id then
          return true -- a newer watch took over
        end
        -- Never let the probe break the edit that triggered it.
        local ok, err = pcall(check, b, firstline, new_last)
        if not ok then
          B.watch_error = tostring(err)
          return true
        end
        if B.t_first and (B.t_done or not done) then
          return true
        end
      end,
    })
  end
  if buf then
    return attach(buf)
  end
  -- The chat's buffer when it exists; else it is watched from its creation (by the command measured:
  -- creating it here would put the chat's loading in the bench's own turn, before the command).
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.b[b].caboose_chat and b == require('caboose.chat').buf() then
      return attach(b)
    end
  end
  vim.api.nvim_create_autocmd('BufFilePost', {
    pattern = 'caboose://chat/*',
    once = true,
    callback = function(ev)
      if id == B.watch_id then
        attach(ev.buf)
      end
    end,
  })
end

--- Runs an Ex command (e.g. 'Caboose hi') with t0 taken first, the chat watched for `first`/`done`.
function B.run(cmd, first, done)
  B.cpu_t0, B.cpu_done = B.cpu(), nil
  B.t0 = uv.hrtime()
  B.watch(first, done)
  vim.cmd(cmd)
  B.t_returned = uv.hrtime()
end

--- Takes t0 and watches the chat without running anything: the client then types the command's <CR>.
function B.arm(first, done)
  B.cpu_t0, B.cpu_done = nil, nil
  B.t0 = uv.hrtime()
  B.watch(first, done)
  B.t_returned = nil
end

--- What the client polls: times in ms since t0 (nil until seen).
function B.result()
  local rel = function(t)
    return t and (t - B.t0) / 1e6 or nil
  end
  return {
    first_ms = rel(B.t_first),
    done_ms = rel(B.t_done),
    returned_ms = rel(B.t_returned),
    stall_first_ms = B.t_first and B.max_stall(B.t0, B.t_first) or nil,
    stall_first_cpu_ms = B.t_first and select(2, B.max_stall(B.t0, B.t_first)) or nil,
    max_gap_cpu_first_ms = B.t_first and B.max_gap_cpu(B.t0, B.t_first) or nil,
    stall_done_ms = B.t_done and B.max_stall(B.t0, B.t_settled or B.t_done) or nil,
    stall_done_run_ms = B.t_done and select(3, B.max_stall(B.t0, B.t_settled or B.t_done)) or nil,
    stall_done_wait_ms = B.t_done and select(4, B.max_stall(B.t0, B.t_settled or B.t_done)) or nil,
    settled_ms = rel(B.t_settled),
    max_gap_run_ms = B.t_done and B.max_gap_run(B.t0, B.t_settled or B.t_done) or nil,
    watch_error = B.watch_error,
  }
end

--- CPU time (ms, user + system) of Neovim and of the host.
--- Precise reading: the scheduler's run time of every thread of the process, in nanoseconds
--- (/proc/<pid>/task/<tid>/schedstat, first field: what getrusage() and Node's process.cpuUsage() add up
--- to, for the threads alive now; the host's and Neovim's threads live as long as the process).
--- Fallback: utime + stime from /proc/<pid>/stat, in 10 ms clock ticks.
local function cpu_ms_ticks(pid)
  local f = io.open('/proc/' .. pid .. '/stat', 'r')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  local fields = vim.split(s:sub(s:find(')', 1, true) + 2), ' ', { plain = true })
  -- fields[1] is field 3 (state); utime and stime are fields 14 and 15 (clock ticks, 100 Hz on Linux)
  return (tonumber(fields[12]) + tonumber(fields[13])) * 10
end

local function cpu_ms(pid)
  if not pid then
    return nil
  end
  local dir = uv.fs_scandir('/proc/' .. pid .. '/task')
  if dir then
    local ns, any = 0, false
    while true do
      local tid = uv.fs_scandir_next(dir)
      if not tid then
        break
      end
      local f = io.open('/proc/' .. pid .. '/task/' .. tid .. '/schedstat', 'r')
      if f then
        local first = tonumber((f:read('*l') or ''):match('^(%d+)'))
        f:close()
        if first then
          ns = ns + first
          any = true
        end
      end
    end
    if any then
      return ns / 1e6
    end
  end
  return cpu_ms_ticks(pid)
end

function B.cpu()
  local ok, host = pcall(function()
    return require('caboose.rpc').host_pid()
  end)
  return { nvim = cpu_ms(vim.fn.getpid()), host = ok and cpu_ms(host) or nil }
end

--- Puts `text` at the end of the chat through the chat module (as if it were earlier conversation).
function B.fill(text)
  local chat = require('caboose.chat')
  if chat.append then
    chat.append(text)
  else
    local buf = chat.buf()
    local ma = vim.bo[buf].modifiable
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, vim.split(text, '\n', { plain = true }))
    vim.bo[buf].modifiable = ma
  end
  return #table.concat(chat.lines(), '\n')
end

return B
