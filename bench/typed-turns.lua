-- Per-turn marks for bench/typed-turns.ts (loaded after bench/chat-probe.lua): what ran in each turn of
-- the main loop on the typed path, with the main thread's CPU time (CLOCK_THREAD_CPUTIME_ID) of each piece.
local uv = vim.uv
local ffi = require('ffi')
-- clock_gettime is declared by bench/chat-probe.lua (its struct type).
pcall(ffi.cdef, 'typedef struct { long tv_sec; long tv_nsec; } caboose_probe_ts; int clock_gettime(int, caboose_probe_ts *);')
local ts = ffi.new('caboose_probe_ts')
local function tcpu()
  ffi.C.clock_gettime(3, ts)
  return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
end
local T = { marks = {}, depth = 0 }
_G.caboose_turns = T
local function record(label, fn, ...)
  local a, c = uv.hrtime(), tcpu()
  local gc0 = collectgarbage('count')
  T.depth = T.depth + 1
  local r = { pcall(fn, ...) }
  T.depth = T.depth - 1
  table.insert(T.marks, { label, a, uv.hrtime(), (tcpu() - c) / 1e6, T.depth, collectgarbage('count') - gc0 })
  if not r[1] then
    error(r[2], 0)
  end
  return unpack(r, 2)
end
T.record = record
local function where(fn)
  local i = debug.getinfo(fn, 'S')
  return (i.short_src or '?'):gsub('^.*/lua/', ''):gsub('^.*/runtime/', '') .. ':' .. tostring(i.linedefined)
end
local probe = 'chat%-probe%.lua'
local schedule, defer = vim.schedule, vim.defer_fn
vim.schedule = function(fn)
  local w = where(fn)
  if w:find(probe) then
    return schedule(fn)
  end
  return schedule(function()
    record('schedule ' .. w, fn)
  end)
end
vim.defer_fn = function(fn, ms)
  local w = where(fn)
  return defer(function()
    record('defer ' .. w, fn)
  end, ms)
end
local function wrap(tbl, key, name)
  local f = tbl[key]
  tbl[key] = function(...)
    return record(name(...), f, ...)
  end
end
wrap(vim.fn, 'jobstart', function() return 'jobstart' end)
wrap(vim.treesitter.query, 'get', function(l, n) return 'query.get ' .. l .. ' ' .. n end)
wrap(vim.treesitter, 'start', function() return 'treesitter.start' end)
wrap(vim.treesitter.language, 'add', function(l) return 'language.add ' .. l end)
wrap(vim.treesitter, 'get_parser', function() return 'get_parser' end)
local rpc = require('caboose.rpc')
wrap(rpc, 'on_event', function(n) return 'event ' .. tostring(n) end)
local c = require('caboose')
wrap(c, 'command_caboose', function() return 'command_caboose' end)
vim.api.nvim_create_autocmd('FileType', { pattern = 'markdown', callback = function() table.insert(T.marks, { 'FileType markdown (point)', uv.hrtime(), uv.hrtime(), 0, T.depth + 1, 0 }) end })
vim.api.nvim_create_autocmd('CmdlineLeave', { callback = function() table.insert(T.marks, { 'CmdlineLeave (point)', uv.hrtime(), uv.hrtime(), 0, T.depth + 1, 0 }) end })
local ns = vim.api.nvim_create_namespace('caboose_turns')
local rs, rc
vim.api.nvim_set_decoration_provider(ns, {
  on_start = function()
    rs, rc = uv.hrtime(), tcpu()
  end,
  on_end = function()
    if rs then
      table.insert(T.marks, { 'redraw (decor on_start..on_end)', rs, uv.hrtime(), (tcpu() - rc) / 1e6, 1, 0 })
      rs = nil
    end
  end,
})
do
  local S = require('caboose.state')
  local nt = S.next_turn
  S.next_turn = function(fn)
    local w = where(fn)
    return nt(function()
      record('turn ' .. w, fn)
    end)
  end
end
