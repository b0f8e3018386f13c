--- The host from the Lua side: starting it (finishing a half-built install first), calling it without
--- waiting, or waiting for its answer where an API must return a value; errors are reported to the user.
local S = require('caboose.state')

local M = {}

M.report = function(msg)
  msg = tostring(msg):gsub('^%(caboose%) ', '')
  S.notify(msg, vim.log.levels.ERROR)
  S.chat().error(msg)
end

M.start_host = function(prestarting)
  local rpc = require('caboose.rpc')
  -- A half-built install (a build cut off by a plugin manager's timeout): finished in the background
  -- at the first command (not while a command is being typed).
  if not rpc.is_running() then
    local build = require('caboose.build')
    if prestarting then
      if not build.status().complete then
        return false, 'the install is not finished'
      end
    end
    local unfinished = not prestarting and build.ensure_built()
    if unfinished then
      return false, '(caboose) ' .. unfinished
    end
  end
  rpc.set_handlers(require('caboose.events').handlers)
  return pcall(rpc.ensure, S.cfg(), M.report)
end

--- Starts the host's job (not in 'remote' transport, which starts synchronously), quietly: whatever fails
--- here fails again, and is reported, at the call that follows. Returns true when it started the job now.
M.start_early = function()
  if require('caboose.rpc').is_running() or S.cfg().host.transport == 'remote' then
    return false
  end
  return M.start_host(true) == true
end

--- Start the host (if needed), without waiting for it. Returns true when it is starting or up.
M.ensure_host = function()
  local ok, err = M.start_host()
  if not ok then
    M.report(err)
    return false
  end
  return true
end

--- Calls the host without waiting: `on_done(err, result)` runs when it answers. Errors are reported
--- (notify) unless `on_done` returns true for them. Returns false when the host could not be started.
M.call = function(method, params, on_done)
  if not M.ensure_host() then
    return false
  end
  require('caboose.rpc').call(method, params, function(err, result)
    local handled = on_done and on_done(err, result)
    if err and not handled then
      S.notify(tostring(err):gsub('^%(caboose%) ', ''), vim.log.levels.ERROR)
    end
  end)
  return true
end

--- Waits for the host's answer (API functions that return a value; never a user command's path).
M.request = function(method, params)
  if not M.ensure_host() then
    return nil
  end
  local ok, res = pcall(require('caboose.rpc').request, method, params)
  if not ok then
    local msg = tostring(res):gsub('^%(caboose%) ', '')
    S.notify(msg, vim.log.levels.ERROR)
    return nil, msg
  end
  return res
end

return M
