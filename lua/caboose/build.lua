--- The plugin's install, and finishing it: `scripts/build` (dependencies, the native better-sqlite3
--- module, the compiled host in dist/) run as a detached job, so a plugin manager's build timeout, or
--- Neovim exiting, never leaves it half done for good. Resumable: each run does only what is missing.
--- See |caboose-install|.
local M = {}
local H = {}

local uv = vim.uv or vim.loop

--- The plugin folder (holds lua/, scripts/, dist/ once built).
function M.root()
  local src = debug.getinfo(1, 'S').source:sub(2)
  return vim.fn.fnamemodify(src, ':p:h:h:h')
end

--- The command that finishes a half-built install (named by :checkhealth and the first-use notice).
M.finish_command = ':CabooseBuild'

H.exists = function(p)
  return uv.fs_stat(p) ~= nil
end

H.read = function(p)
  local f = io.open(p, 'r')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

--- The pid of a running build (its lock holds it), or nil.
H.running_pid = function(root)
  local pid = tonumber(vim.trim(H.read(root .. '/.build/lock/pid') or ''))
  if pid and pid > 0 and uv.kill(pid, 0) == 0 then
    return pid
  end
  return nil
end

--- What the install has and lacks. Cheap (a few stat calls): checked before every host start.
---@param root string|nil
---@return { complete: boolean, missing: string[], running: integer|nil, failed: boolean, log: string, root: string }
function M.status(root)
  root = root or M.root()
  local missing = {}
  if not H.exists(root .. '/node_modules') then
    table.insert(missing, 'no node_modules/ (dependencies not installed)')
  elseif not H.exists(root .. '/node_modules/better-sqlite3/build/Release/better_sqlite3.node') then
    table.insert(missing, 'no native better-sqlite3 module (node_modules/better-sqlite3/build/Release/better_sqlite3.node)')
  end
  if not H.exists(root .. '/dist/host/main.js') then
    table.insert(missing, 'no dist/ (the host is not compiled)')
  end
  local status = vim.trim(H.read(root .. '/.build/status') or '')
  return {
    complete = #missing == 0,
    missing = missing,
    running = H.running_pid(root),
    failed = status == 'failed',
    log = root .. '/.build/log',
    root = root,
  }
end

--- The last lines of the build log.
function M.log_tail(root, n)
  local text = H.read((root or M.root()) .. '/.build/log') or ''
  local lines = vim.split(text, '\n', { trimempty = true })
  return vim.list_slice(lines, math.max(1, #lines - (n or 5) + 1), #lines)
end

H.notify = function(msg, level)
  vim.schedule(function()
    vim.notify('(caboose) ' .. msg, level or vim.log.levels.INFO, { title = 'caboose' })
  end)
end

H.watchers = {} ---@type table<string, table>

--- Whether a build of `root` is under way: its lock names a live process, or `--background` has just
--- said "running" and the process has not taken the lock yet (a few seconds at most).
H.building = function(root, since)
  if H.running_pid(root) then
    return true
  end
  local status = vim.trim(H.read(root .. '/.build/status') or '')
  return status == 'running' and since ~= nil and uv.now() - since < 5000
end

--- Follows a running build (the log's step lines as messages when `progress`), and tells the user when
--- it ends. The build may belong to another Neovim, or to a plugin manager's build hook.
H.watch = function(root, opts)
  opts = opts or {}
  local w = H.watchers[root]
  if w then
    w.progress = w.progress or opts.progress
    if opts.on_done then
      table.insert(w.on_done, opts.on_done)
    end
    return
  end
  w = { progress = opts.progress, on_done = { opts.on_done }, seen = 0, since = opts.since }
  H.watchers[root] = w
  local timer = uv.new_timer()
  local function step()
    local lines = vim.split(H.read(root .. '/.build/log') or '', '\n', { trimempty = true })
    for i = w.seen + 1, #lines do
      if w.progress and lines[i]:match('^caboose build: ') and not lines[i]:match('^caboose build: done') then
        H.notify((lines[i]:gsub('^caboose build: ', 'build: ')))
      end
    end
    w.seen = math.max(w.seen, #lines)
    if H.building(root, w.since) then
      return
    end
    timer:stop()
    timer:close()
    H.watchers[root] = nil
    local s = M.status(root)
    if s.complete then
      H.notify('install finished: ready', vim.log.levels.INFO)
    else
      H.notify(string.format('the build failed (%s); log: %s\n%s', table.concat(s.missing, '; '), s.log, table.concat(M.log_tail(root, 5), '\n')), vim.log.levels.ERROR)
    end
    for _, fn in ipairs(w.on_done) do
      pcall(fn, s)
    end
  end
  timer:start(500, 500, vim.schedule_wrap(function()
    if H.watchers[root] == w then
      step()
    end
  end))
end

--- Starts `scripts/build --background` (it detaches: it outlives Neovim and any build timeout; its output
--- goes to .build/log) unless a build is running, and follows it: its steps as messages when `progress`.
---@param opts { root: string|nil, progress: boolean|nil, on_done: fun(status: table)|nil }|nil
function M.start(opts)
  opts = opts or {}
  local root = opts.root or M.root()
  local s = M.status(root)
  if s.running then
    H.notify(string.format('a build is running (pid %d); log: %s', s.running, s.log))
    H.watch(root, { progress = opts.progress, on_done = opts.on_done })
    return s
  end
  local out = vim.fn.system({ 'sh', root .. '/scripts/build', '--background' })
  if vim.v.shell_error ~= 0 then
    H.notify('could not run ' .. root .. '/scripts/build: ' .. vim.trim(out), vim.log.levels.ERROR)
    return s
  end
  H.notify('finishing the install in the background; log: ' .. s.log)
  H.watch(root, { progress = opts.progress, on_done = opts.on_done, since = uv.now() })
  return s
end

--- Before a host start: nil when the install is complete, else the message to show (and a build is
--- started in the background when none runs: the first use finishes the install).
function M.ensure_built()
  local s = M.status()
  if s.complete then
    return nil
  end
  if not s.running then
    M.start({ progress = true })
  else
    H.watch(s.root, {}) -- started elsewhere (the plugin manager's build hook): say when it is ready
  end
  return string.format(
    'the install is not finished (%s): it is being finished in the background (log: %s); try again when it says ready, or run %s to follow it',
    table.concat(s.missing, '; '),
    s.log,
    M.finish_command
  )
end

M._H = H
return M
