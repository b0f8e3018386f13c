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

H.watchers = {} ---@type table<string, boolean>

--- Tells the user when a running build ends (polls its lock; the build may belong to another Neovim).
H.watch = function(root, on_done)
  if H.watchers[root] then
    return
  end
  H.watchers[root] = true
  local timer = uv.new_timer()
  timer:start(1000, 1000, function()
    if H.running_pid(root) then
      return
    end
    timer:stop()
    timer:close()
    H.watchers[root] = nil
    vim.schedule(function()
      local s = M.status(root)
      if s.complete then
        H.notify('install finished: ready', vim.log.levels.INFO)
      else
        H.notify(string.format('the build failed (%s); log: %s\n%s', table.concat(s.missing, '; '), s.log, table.concat(M.log_tail(root, 5), '\n')), vim.log.levels.ERROR)
      end
      if on_done then
        on_done(s)
      end
    end)
  end)
end

--- Starts `scripts/build` as a detached job (it outlives Neovim and any build timeout) unless one is
--- running; progress lines are notified when `progress` is set. Returns the status.
---@param opts { root: string|nil, progress: boolean|nil, on_done: fun(status: table)|nil }|nil
function M.start(opts)
  opts = opts or {}
  local root = opts.root or M.root()
  local s = M.status(root)
  if s.running then
    H.notify(string.format('a build is running (pid %d); log: %s', s.running, s.log))
    H.watch(root, opts.on_done)
    return s
  end
  local job = vim.fn.jobstart({ 'sh', root .. '/scripts/build' }, {
    cwd = root,
    detach = true,
    on_stdout = function(_, data)
      if not opts.progress then
        return
      end
      for _, line in ipairs(data or {}) do
        if line:match('^caboose build:') then
          H.notify(line:gsub('^caboose build: ', 'build: '))
        end
      end
    end,
  })
  if job <= 0 then
    H.notify('could not run ' .. root .. '/scripts/build (sh not found?)', vim.log.levels.ERROR)
    return s
  end
  H.notify('finishing the install in the background; log: ' .. s.log)
  -- The lock appears once the script runs; watch from then on.
  vim.defer_fn(function()
    H.watch(root, opts.on_done)
  end, 200)
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
    H.watch(s.root) -- started elsewhere (the plugin manager's build hook): say when it is ready
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
