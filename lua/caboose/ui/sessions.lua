--- :CabooseSessions / :CabooseRename — stored conversations: pick one to reopen, search them, rename or
--- delete them. Everything goes through vim.ui.select / vim.ui.input, so pickers users configured apply.
local M = {}
local H = {}

--- Calls the host method named by its key in rpc.methods (asynchronously; `cb(err, result)`).
H.call = function(name, params, cb)
  return require('caboose')._request(require('caboose.rpc').methods[name], params, cb)
end

H.notify = function(msg)
  require('caboose')._notify(msg)
end

--- "3 h ago", "2 d ago", or the date for older ones.
function M.age(ms, now)
  local s = math.max(0, math.floor(((now or os.time() * 1000) - ms) / 1000))
  if s < 60 then
    return 'just now'
  elseif s < 3600 then
    return string.format('%d min ago', math.floor(s / 60))
  elseif s < 86400 then
    return string.format('%d h ago', math.floor(s / 3600))
  elseif s < 7 * 86400 then
    return string.format('%d d ago', math.floor(s / 86400))
  end
  return os.date('%Y-%m-%d', math.floor(ms / 1000))
end

--- One line per session: title, last activity, message count; the folder when it is not this one.
function M.format(s)
  local parts = { s.title or '(untitled)', M.age(s.updated_at), string.format('%d message%s', s.message_count, s.message_count == 1 and '' or 's') }
  if type(s.forked_from) == 'table' then
    -- Edit-and-resend's branch (the earlier branch is listed as it was).
    table.insert(parts, 2, '⑂ forked from ' .. tostring(s.forked_from.title or '?'))
  end
  if not s.here then
    table.insert(parts, vim.fn.fnamemodify(s.cwd, ':~'))
  end
  local line = (s.current and '● ' or '  ') .. table.concat(parts, ' · ')
  if s.snippet then
    line = line .. '  — ' .. s.snippet
  end
  return line
end

H.SEARCH = { search = true }

--- Lists the sessions (this folder's first) or those matching `query`; `action` is 'open' or 'delete'.
function M.pick(query, action)
  action = action or 'open'
  return H.call('session_list', { query = query ~= '' and query or nil }, function(err, res)
    if err then
      return
    end
    local sessions = res.sessions or {}
    if #sessions == 0 then
      H.notify(query and query ~= '' and ('no session mentions “' .. query .. '”') or 'no stored sessions yet')
      if not (query and query ~= '') then
        return
      end
    end
    local items = vim.list_extend({}, sessions)
    table.insert(items, H.SEARCH)
    local prompt = query and query ~= '' and ('Caboose sessions matching “' .. query .. '”') or 'Caboose sessions'
    if action == 'delete' then
      prompt = prompt .. ' (delete)'
    end
    vim.ui.select(items, {
      prompt = prompt,
      kind = 'caboose_session',
      format_item = function(it)
        return it == H.SEARCH and '🔍 Search all sessions…' or M.format(it)
      end,
    }, function(choice)
      if not choice then
        return
      end
      if choice == H.SEARCH then
        return M.search(action)
      end
      if action == 'delete' then
        return M.delete(choice)
      end
      return M.open(choice.id)
    end)
  end)
end

--- Asks what to search for (full text over every session's messages), then lists the matches.
function M.search(action)
  vim.ui.input({ prompt = 'Search sessions: ' }, function(q)
    if q and vim.trim(q) ~= '' then
      M.pick(vim.trim(q), action)
    end
  end)
end

--- Reopens a stored session in the chat (its transcript replaces what the chat shows).
function M.open(id)
  -- Its transcript replaces the chat; what the session being left still sends is not shown.
  local undo, scope = require('caboose.rpc').leave_scope()
  return H.call('session_open', { id = id, scope = scope }, function(err, res)
    if err then
      undo()
    else
      H.notify('reopened: ' .. (res.title or id))
    end
  end)
end

--- Deletes a session after asking.
function M.delete(s)
  local title = s.title or s.id
  local what = string.format('“%s” (%d message%s)', title, s.message_count, s.message_count == 1 and '' or 's')
  vim.ui.select({ 'Delete', 'Keep' }, { prompt = 'Delete session ' .. what .. '? This cannot be undone.', kind = 'caboose_confirm' }, function(choice)
    if choice ~= 'Delete' then
      return
    end
    local undo, scope = function() end, nil
    if s.current then
      -- The host starts a new session in its place.
      undo, scope = require('caboose')._leave_session()
      require('caboose').open_chat()
    end
    H.call('session_delete', { id = s.id, scope = scope }, function(err, res)
      if err then
        undo()
      end
      if not err and res.deleted then
        -- One line (the title cut), not a hit-enter prompt after the choice list.
        require('caboose')._notify_line('deleted session ' .. what, nil, title)
      end
    end)
  end)
end

--- Renames the current session; without a title, asks (the current one pre-filled).
function M.rename(title)
  if title and vim.trim(title) ~= '' then
    return H.call('session_rename', { title = vim.trim(title) }, function(err, res)
      if not err then
        H.notify('session renamed: ' .. res.title)
      end
    end)
  end
  return H.call('session_info', {}, function(err, info)
    if err then
      return
    end
    vim.ui.input({ prompt = 'Session title: ', default = info.title or '' }, function(t)
      if t and vim.trim(t) ~= '' then
        M.rename(t)
      end
    end)
  end)
end

return M
