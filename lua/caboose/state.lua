--- caboose's shared state on the Lua side: the configuration, the state shown to the user (and the host's
--- own), and the small helpers every part uses (notify). caboose (init.lua), caboose.host and
--- caboose.events read and write it here.
local S = {}
local H = {}

S.config = nil ---@type caboose.Config|nil
S.state = { state = 'idle', mode = nil, session = nil, grants = {} }

S.notify = function(msg, level)
  vim.notify('(caboose) ' .. msg, level or vim.log.levels.INFO)
end

--- A message that also stands in the chat (or a list): cut to one command line, so it never stops the
--- editor with a hit-enter prompt. `cut` is the part that gives way (by default the end of `msg`).
S.notify_line = function(msg, level, cut)
  local room = vim.v.echospace - vim.api.nvim_strwidth('(caboose) ' .. msg)
  if room < 0 then
    cut = cut or msg
    local keep = math.max(8, vim.api.nvim_strwidth(cut) + room - 1)
    msg = msg:gsub(vim.pesc(cut), (vim.fn.strcharpart(cut, 0, keep):gsub('%%', '%%%%')) .. '…', 1)
  end
  vim.cmd('redraw') -- a choice list or a float's closing may have scrolled the screen
  S.notify(msg, level)
end

--- Runs fn in a later iteration of the main loop (a libuv timer), so typed keys, RPC requests and timers
--- that arrived meanwhile are served between two pieces of work.
--- libuv times a timer from the loop's cached clock, taken before the current work ran: a 0 ms timer set
--- after 10 ms of work was already due when the loop next ran its timers — before it read input — and
--- the next piece ran at once. Timed from now and 1 ms out, it comes after the loop has read its input.
--- One queue for every piece: the chat's opening (init.lua `send`) and its markdown loading (chat/markdown.lua)
--- are two chains started in the same turn, and with a timer each their pieces fell due together and ran
--- in the same turn (e.g. the `markdown` highlights query, ≈ 5 ms of CPU, with the chat's windows or the
--- message's sending): one piece a turn, in the order they were queued.
--- One libuv timer, restarted (never two due at once).
H.turns = { first = 1, last = 0, armed = false }
H.arm_turn = function()
  H.turns.armed = true
  if not H.turn_timer then
    H.turn_timer = assert(vim.uv.new_timer())
    H.turn_cb = vim.schedule_wrap(function()
      H.run_turn()
    end)
  end
  vim.uv.update_time()
  H.turn_timer:start(1, 0, H.turn_cb)
end
H.run_turn = function()
  local q = H.turns
  q.armed = false
  local fn = q[q.first]
  if not fn then
    return
  end
  q[q.first] = nil
  q.first = q.first + 1
  local ok, err = xpcall(fn, debug.traceback)
  -- The next piece is timed from now (after this one's work, even if it queued one before its end) and
  -- comes even when this one failed.
  if q.first <= q.last then
    H.arm_turn()
  end
  if not ok then
    error(err, 0)
  end
end
S.next_turn = function(fn)
  local q = H.turns
  q.last = q.last + 1
  q[q.last] = fn
  if not q.armed then
    H.arm_turn()
  end
end

S.cfg = function()
  if not S.config then
    S.config = require('caboose.config').build(vim.g.caboose_config)
    S.state.mode = S.config.mode
    require('caboose.highlights').setup()
  end
  return S.config
end

S.agent_state = 'idle' -- the host's state; S.state.state is the one shown to the user

--- The main agent keeps executing its `agent` calls while a subagent's request waits: for the user, that
--- is a pending approval (winbar, state(), CabooseStateChanged).
H.shown_state = function(agent)
  local approval = package.loaded['caboose.ui.approval']
  if agent == 'executing_tools' and approval and approval.subagent_waiting() then
    return 'pending_approval'
  end
  return agent
end

S.set_state = function(new, fields)
  S.agent_state = new
  new = H.shown_state(new)
  local previous = S.state.state
  S.state.state = new
  for k, v in pairs(fields or {}) do
    S.state[k] = v
  end
  local extra = { grants = S.state.grants }
  if new == 'idle' then
    extra.retry = false
  end
  S.chat().set_status(new, S.state.mode, extra)
  if fields and fields.mode and package.loaded['caboose.ui.approval'] then
    require('caboose.ui.approval').mode_changed(fields.mode)
  end
  if previous ~= new or (fields and fields.mode) then
    vim.api.nvim_exec_autocmds('User', {
      pattern = 'CabooseStateChanged',
      modeline = false,
      data = { state = new, previous = previous, mode = S.state.mode, session = S.state.session, grants = vim.deepcopy(S.state.grants) },
    })
  end
end

S.chat = function()
  return require('caboose.chat')
end

S.mode_changes = 0

S.grants_text = function()
  local grants = S.state.grants or {}
  if #grants == 0 then
    return 'no tool is always allowed'
  end
  return 'always allowed this session: ' .. table.concat(grants, ', ')
end

return S
