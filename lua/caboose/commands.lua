--- The user commands' handlers (plugin/caboose.lua defines the commands): each parses its arguments
--- and calls the public API (caboose, init.lua), which exports them as `command_<name>`.
local S = require('caboose.state')

local M = {}

--- The public API (caboose): required when used, as it requires this module.
local function caboose()
  return require('caboose')
end

--- :Caboose [prompt] — with a range, the selected lines go along with the prompt; `#buffer` and `@path`
--- in the prompt attach the current buffer and files.
function M.caboose(o)
  local context = require('caboose.context')
  local origin = vim.api.nvim_get_current_buf()
  local selection = (o.range and o.range > 0) and context.selection(origin, o.line1, o.line2) or nil
  local send = function(text)
    caboose().send(text, { context = selection and { selection } or nil, origin = origin })
  end
  local text = o.args or ''
  if vim.trim(text) == '' then
    if not selection then
      caboose().open_chat()
    end
    vim.ui.input({ prompt = selection and 'Caboose (selection)> ' or 'Caboose> ' }, function(t)
      if t and vim.trim(t) ~= '' then
        send(t)
      end
    end)
    return
  end
  send(text)
end

function M.edit(o)
  return caboose().edit(o.line1, o.line2, o.args)
end

--- :CabooseMode without argument shows the mode and the standing grants.
function M.mode(o)
  if o.args == nil or o.args == '' then
    S.notify('mode: ' .. (S.state.mode or S.cfg().mode) .. '; ' .. S.grants_text())
    return
  end
  caboose().set_mode(o.args)
end

function M.revoke(o)
  return caboose().revoke(vim.trim(o.args or ''))
end

function M.sessions(o)
  return caboose().sessions(o.args, o.bang)
end

--- :CabooseAudit [count]
function M.audit(o)
  local arg = vim.trim(o.args or '')
  local count = arg ~= '' and tonumber(arg) or nil
  if arg ~= '' and not (count and count >= 1 and count <= 10000 and count == math.floor(count)) then
    S.notify('CabooseAudit takes a count from 1 to 10000, not ' .. arg, vim.log.levels.ERROR)
    return
  end
  caboose().audit(count)
end

--- :CabooseMcp [restart {name}]
function M.mcp(o)
  local args = vim.split(vim.trim(o.args or ''), '%s+', { trimempty = true })
  if #args == 0 then
    return caboose().mcp()
  end
  if args[1] == 'restart' and #args == 2 then
    return caboose().mcp_restart(args[2])
  end
  S.notify('usage: :CabooseMcp [restart {server}]', vim.log.levels.ERROR)
end

--- :CabooseAgent[!] [name]
function M.agent(o)
  return caboose().agent(vim.trim(o.args or ''), o.bang)
end

return M
