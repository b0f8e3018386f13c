-- Instrumentation for bench/chat.ts (investigation only, not part of the figures):
--   BENCH_CHAT_DIAG=bench/chat-turns.lua BENCH_DIAG_OUT=/tmp/turns.txt BENCH_STREAM_CASES=burst-long \
--     node --import tsx bench/run.ts stream
-- After each stream run it appends to BENCH_DIAG_OUT (default /tmp/caboose-chat-turns.txt):
-- * "CPU-turns": the longest main-loop turn (between two runs of a 2 ms probe, as in chat-probe.lua) in
--   wall time and the main thread's CPU time in it (CLOCK_THREAD_CPUTIME_ID), the turn with the most CPU,
--   and every turn with ≥ 4 ms of CPU or ≥ 8 ms of wall time, as cpu/wall@start ms; for turns with
--   ≥ 5 ms of CPU the spans of work inside them: host events (with the size of a text frame), treesitter
--   (the C parse call, region parses, injections), and the redraw with the highlighter's decoration
--   callbacks (count, total and longest call, and whether Lua's collector ran in it).
-- A turn's wall time minus its CPU time is time the process waited for a CPU (2 cores shared by the
-- fake server, the host, the probe client and Neovim during a burst).
-- DIAG_WALL=1 also lists every wall-clock gap ≥ 6 ms with its spans; DIAG_GC=1 runs a full collection
-- before each run and prints how long it took.
local uv = vim.uv
local D = { spans = {} }
_G.caboose_diag = D
local function span(name, t0)
  local t1 = uv.hrtime()
  D.spans[#D.spans + 1] = { t0, t1, name }
end
D.span = span
local function wrap(tbl, key, name)
  local f = tbl[key]
  tbl[key] = function(...)
    local t0 = uv.hrtime()
    local r = { f(...) }
    span(name, t0)
    return unpack(r)
  end
end
local LT = require('vim.treesitter.languagetree')
wrap(LT, '_parse_regions', 'parse_regions')
wrap(LT, '_get_injections', 'get_injections')
wrap(LT, '_add_injections', 'add_injections')
wrap(LT, 'set_included_regions', 'set_included_regions')
-- the C parse
vim.treesitter.language.add('markdown')
local tp = vim._create_ts_parser('markdown')
if tp then
  local mt = getmetatable(tp)
  local idx = mt.__index
  local orig = idx.parse
  D.born = {} -- tostring(tree) -> where a big tree (≥ 2000 rows) was made (for BIGFREE)
  idx.parse = function(self, tree, src, incl, timeout)
    local t0 = uv.hrtime()
    local a, b = orig(self, tree, src, incl, timeout)
    span('C_parse', t0)
    if a and os.getenv('DIAG_BORN') then
      local ok, r = pcall(function() return { a:root():range() } end)
      if ok and r[3] - r[1] >= 2000 then
        local inc = self:included_ranges()
        D.born[tostring(a)] = string.format('%d rows made at %.0f ms (uv), timeout %s, included %s, old tree %s', r[3] - r[1], uv.hrtime() / 1e6, tostring(timeout), vim.inspect(inc):gsub('%s+', ''), tostring(tree))
      end
    end
    return a, b
  end
end
local HL = require('vim.treesitter.highlighter')
wrap(HL, 'prepare_highlight_states', 'prepare_hl_states')
wrap(HL, 'on_changedtree', 'on_changedtree')
local Q = require('vim.treesitter.query')
local qmt = getmetatable(Q.get('markdown', 'highlights'))
local ic = qmt.__index.iter_captures
D.iter_ns = 0
qmt.__index.iter_captures = function(self, node, src, s, e, opts)
  local t0 = uv.hrtime()
  local it = ic(self, node, src, s, e, opts)
  D.iter_ns = D.iter_ns + (uv.hrtime() - t0)
  return function(...)
    local t1 = uv.hrtime()
    local a, b, c, d = it(...)
    D.iter_ns = D.iter_ns + (uv.hrtime() - t1)
    return a, b, c, d
  end
end
local hns = vim.api.nvim_get_namespaces()['nvim.treesitter.highlighter'] or vim.api.nvim_get_namespaces()['treesitter/highlighter']
D.cb = {}
local function cw(name, f)
  return function(...)
    local t0 = uv.hrtime()
    local k0 = collectgarbage('count')
    local r = { f(...) }
    local dt = uv.hrtime() - t0
    local k1 = collectgarbage('count')
    local c = D.cb[name] or { n = 0, ns = 0, max = 0, gc = 0 }
    D.cb[name] = c
    c.n = c.n + 1
    c.ns = c.ns + dt
    if dt > c.max then c.max = dt; c.maxgc = k1 < k0 and string.format('GC %.0f->%.0fKB', k0, k1) or string.format('heap %.0fKB', k1) end
    return unpack(r)
  end
end
vim.api.nvim_set_decoration_provider(hns, {
  on_win = cw('on_win', HL._on_win),
  on_start = cw('on_start', HL._on_start),
  on_range = cw('on_range', HL._on_range),
  _on_spell_nav = HL._on_spell_nav,
  _on_conceal_line = cw('conceal_line', HL._on_conceal_line),
})
-- TSTree finalizers: how many trees Lua's collector frees, and the time spent freeing them (per redraw).
D.fin_n, D.fin_ns, D.fin_max = 0, 0, 0
do
  local tree = vim.treesitter.get_string_parser('# x', 'markdown'):parse()[1]
  local mt = getmetatable(tree)
  local gc = mt.__gc
  mt.__gc = function(t)
    local t0 = uv.hrtime()
    local nodes = 0
    pcall(function()
      local r = { t:root():range() }
      nodes = r[3] - r[1]
    end)
    local born = D.born and D.born[tostring(t)]
    gc(t)
    local dt = uv.hrtime() - t0
    if born then
      D.born[tostring(t)] = nil
      if dt > 2e6 then
        D.freed_log = D.freed_log or {}
        table.insert(D.freed_log, string.format('freed at %.0f ms (uv) in %.1f ms: %s', uv.hrtime() / 1e6, dt / 1e6, born))
      end
    end
    D.fin_n = D.fin_n + 1
    D.fin_ns = D.fin_ns + dt
    if dt > D.fin_max then
      D.fin_max = dt
      D.fin_max_nodes = nodes
    end
  end
end
-- Full collections (caboose's quiet collection calls collectgarbage('collect')), with their time.
do
  local cg = collectgarbage
  _G.collectgarbage = function(opt, ...)
    if opt == 'collect' then
      local t0 = uv.hrtime()
      local n0, ns0, k0 = D.fin_n, D.fin_ns, cg('count')
      D.fin_max, D.fin_max_nodes = 0, 0
      local r = { cg(opt, ...) }
      span(string.format('full_gc (%.0f KB heap before; %d trees freed in %.1f ms, longest %.1f ms %d rows)', k0, D.fin_n - n0, (D.fin_ns - ns0) / 1e6, D.fin_max / 1e6, D.fin_max_nodes or 0), t0)
      return unpack(r)
    end
    return cg(opt, ...)
  end
end
local rpc = require('caboose.rpc')
local oe = rpc.on_event
rpc.on_event = function(name, payload)
  local t0 = uv.hrtime()
  local r = { oe(name, payload) }
  local extra = ''
  if name == 'assistant_delta' and payload and payload.text then extra = ' ' .. #payload.text .. 'ch' end
  span('event:' .. name .. extra, t0)
  return unpack(r)
end
local T = require('caboose.chat.transcript')
-- redraw: my decoration provider (on_start after TS's; on_end)
local ns = vim.api.nvim_create_namespace('diag_redraw')
local rs
vim.api.nvim_set_decoration_provider(ns, {
  on_start = function() rs = uv.hrtime(); D.iter_ns = 0; D.cb = {}; D.fin_n, D.fin_ns, D.fin_max = 0, 0, 0 end,
  on_end = function()
    if rs then
      local parts = {}
      for k, c in pairs(D.cb) do parts[#parts+1] = string.format('%s %dx %.1f (max %.1f %s)', k, c.n, c.ns/1e6, c.max/1e6, c.maxgc or '') end
      if D.fin_n > 0 then
        parts[#parts + 1] = string.format('freed %d trees %.1f ms (longest %.1f ms, %d rows)', D.fin_n, D.fin_ns / 1e6, D.fin_max / 1e6, D.fin_max_nodes or 0)
      end
      span(string.format('redraw(after ts on_start) iter %.1f %s', D.iter_ns/1e6, table.concat(parts, ' ')), rs)
    end
    rs = nil
  end,
})
local B = _G.caboose_bench
local res = B.result
D.run = 0
B.result = function()
  local r = res()
  D.run = D.run + 1
  local out = io.open(os.getenv('BENCH_DIAG_OUT') or '/tmp/caboose-chat-turns.txt', 'a')
  out:write(string.format('=== run %d t_done %.1f\n', D.run, (B.t_done - B.t0) / 1e6))
  -- all gaps in window, with spans
  for _, g in ipairs(B.gaps) do
    local stop, len = g[1], g[2]
    local start = stop - len
    local min_run = tonumber(os.getenv('DIAG_GAP_RUN_MS') or '')
    local want = os.getenv('DIAG_WALL') and len >= 6e6 or (min_run and (g[4] or 0) >= min_run)
    if want and stop >= B.t0 and start <= (B.t_settled or B.t_done or stop) + 200e6 then
      out:write(string.format('gap %.1f ms at +%.1f (main thread CPU %.1f, wait %.1f)\n', len / 1e6, (start - B.t0) / 1e6, g[4] or 0, g[5] or 0))
      local agg = {}
      for _, s in ipairs(D.spans) do
        if s[2] > start and s[1] < stop and (s[2]-s[1]) > 0.3e6 then
          out:write(string.format('   %-40s %+8.1f %6.2f ms\n', s[3], (s[1] - B.t0) / 1e6, (s[2] - s[1]) / 1e6))
        end
      end
    end
  end
  for _, l in ipairs(D.freed_log or {}) do
    out:write(string.format('FREED run %d (t0 %.0f): %s\n', D.run, B.t0 / 1e6, l))
  end
  D.freed_log = {}
  -- Trees freed by Lua's collector inside the window's redraws, when one took ≥ 2 ms.
  for _, sp in ipairs(D.spans) do
    local longest = tonumber(sp[3]:match('longest ([%d.]+) ms'))
    if longest and longest >= 2 and sp[2] >= B.t0 and sp[1] <= (B.t_settled or B.t_done or sp[2]) then
      out:write(string.format('BIGFREE run %d at %+.1f: %s\n', D.run, (sp[1] - B.t0) / 1e6, sp[3]:match('freed.*') or sp[3]))
    end
  end
  out:close()
  D.allspans = D.spans
  D.spans = {}
  return r
end
if os.getenv('DIAG_GC') then
  local brun = B.run
  B.run = function(...)
    local t0 = uv.hrtime()
    collectgarbage('collect')
    local out = io.open(os.getenv('BENCH_DIAG_OUT') or '/tmp/caboose-chat-turns.txt', 'a')
    out:write(string.format('pre-run full GC %.1f ms\n', (uv.hrtime() - t0) / 1e6))
    out:close()
    return brun(...)
  end
end
-- CPU-time probe: main thread CPU consumed between two consecutive probe callbacks
local ffi = require('ffi')
-- The same declaration as bench/chat-probe.lua's (loaded first: a second clock_gettime would not compile).
pcall(ffi.cdef, 'typedef struct { long tv_sec; long tv_nsec; } caboose_probe_ts; int clock_gettime(int, caboose_probe_ts *);')
local tsv = ffi.new('caboose_probe_ts')
local function cpu()
  ffi.C.clock_gettime(3, tsv)
  return tonumber(tsv.tv_sec) * 1e9 + tonumber(tsv.tv_nsec)
end
D.cpu = cpu
D.cgaps = {}
D.all = {} -- every turn: { end, wall, cpu, wait } (ns)
do
  -- The main thread's time waiting on a run queue (ns, /proc/thread-self/schedstat's second field): a
  -- turn's wall time = its CPU + this wait (preempted, no free CPU) + time blocked (I/O, sleeping).
  local function rq()
    local f = io.open('/proc/thread-self/schedstat', 'r')
    if not f then return 0 end
    local l = f:read('*l') or ''
    f:close()
    return tonumber(l:match('^%d+%s+(%d+)')) or 0
  end
  D.rq = rq
  local lastw, lastc, lastq = uv.hrtime(), cpu(), rq()
  local pending = false
  local timer = assert(uv.new_timer())
  timer:start(2, 2, function()
    if pending then return end
    pending = true
    vim.schedule(function()
      pending = false
      local w, c, q = uv.hrtime(), cpu(), rq()
      D.all[#D.all + 1] = { w, w - lastw, c - lastc, q - lastq }
      if c - lastc >= 4e6 or w - lastw >= 8e6 then
        D.cgaps[#D.cgaps + 1] = { w, w - lastw, c - lastc, q - lastq }
      end
      lastw, lastc, lastq = w, c, q
    end)
  end)
end
local res2 = B.result
B.result = function()
  local r = res2()
  local out = io.open(os.getenv('BENCH_DIAG_OUT') or '/tmp/caboose-chat-turns.txt', 'a')
  local maxc, list, longest = 0, {}, nil
  for _, g in ipairs(D.cgaps) do
    local stop, wall, c = g[1], g[2], g[3]
    if stop >= B.t0 and stop - wall <= (B.t_done or stop) then
      maxc = math.max(maxc, c)
      if not longest or wall > longest[2] then
        longest = g
      end
      list[#list + 1] = string.format('%.1f/%.1f(rq %.1f)@%+.0f', c / 1e6, wall / 1e6, (g[4] or 0) / 1e6, (stop - wall - B.t0) / 1e6)
      if c >= (tonumber(os.getenv('DIAG_SPAN_MS')) or 5) * 1e6 then
        list[#list + 1] = '\n'
        for _, sp in ipairs(D.allspans or {}) do
          if sp[2] > stop - wall and sp[1] < stop and (sp[2]-sp[1]) > 0.3e6 then
            list[#list + 1] = string.format('      %-40s %+8.1f %6.2f ms\n', sp[3], (sp[1] - B.t0) / 1e6, (sp[2] - sp[1]) / 1e6)
          end
        end
      end
    end
  end
  -- Before t0 (from the new chat on): full collections, boundary moves, and the turns with >= 4 ms of CPU.
  local pre = {}
  for _, sp in ipairs(D.allspans or {}) do
    if (sp[3]:sub(1, 7) == 'full_gc' or sp[3] == 'set_included_regions') and sp[2] >= B.t0 - 1500e6 then
      pre[#pre + 1] = string.format('%s %.1f ms@%+.0f', sp[3], (sp[2] - sp[1]) / 1e6, (sp[1] - B.t0) / 1e6)
    end
  end
  for _, g in ipairs(D.cgaps) do
    local stop, wall, c = g[1], g[2], g[3]
    if stop < B.t0 and stop >= B.t0 - 1500e6 and c >= 4e6 then
      pre[#pre + 1] = string.format('turn %.1f/%.1f@%+.0f', c / 1e6, wall / 1e6, (stop - wall - B.t0) / 1e6)
    end
  end
  -- Every turn inside [t0, t_done]: how the CPU is spread over them (the per-turn CPU distribution).
  local cs = {}
  for _, g in ipairs(D.all) do
    if g[1] >= B.t0 and g[1] - g[2] <= (B.t_done or g[1]) then
      cs[#cs + 1] = g[3] / 1e6
    end
  end
  table.sort(cs, function(a, b) return a > b end)
  local top = {}
  for i = 1, math.min(8, #cs) do top[i] = string.format('%.1f', cs[i]) end
  local n3, n5, n8 = 0, 0, 0
  for _, c in ipairs(cs) do
    n3 = n3 + (c >= 3 and 1 or 0); n5 = n5 + (c >= 5 and 1 or 0); n8 = n8 + (c >= 8 and 1 or 0)
  end
  out:write(string.format('DIST run %d: %d turns, >=3ms %d, >=5ms %d, >=8ms %d; top: %s\n', D.run, #cs, n3, n5, n8, table.concat(top, ' ')))
  D.all = {}
  out:write(string.format('PRE run %d: %s\n', D.run, table.concat(pre, ', ')))
  out:write(string.format('CPU-turns run %d: max cpu %.1f ms; longest turn %.1f ms wall, %.1f ms cpu, %.1f ms waiting for a CPU; cpu/wall(rq): %s\n', D.run, maxc / 1e6,
    longest and longest[2] / 1e6 or 0, longest and longest[3] / 1e6 or 0, longest and (longest[4] or 0) / 1e6 or 0, table.concat(list, ' ')))
  out:close()
  D.cgaps = {}
  return r
end
