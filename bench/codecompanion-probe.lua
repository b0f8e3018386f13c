-- Instrumentation for bench/codecompanion.ts: codecompanion.nvim's side of the comparison, loaded with
-- dofile() after bench/chat-probe.lua (whose stall probe, buffer watch, result() and cpu() it reuses).
-- It drives codecompanion through its own commands and chat API, as a user's keys would.
local uv = vim.uv
local B = assert(_G.caboose_bench, 'load bench/chat-probe.lua first')

--- Sets codecompanion up with one openai_compatible adapter pointed at the fake server (`url` without
--- the /v1 suffix), the model fixed (so no /v1/models request), background interactions off (the default).
function B.cc_setup(url, model)
  require('codecompanion').setup({
    adapters = {
      http = {
        fake = function()
          return require('codecompanion.adapters').extend('openai_compatible', {
            env = { url = url, api_key = 'OPENAI_API_KEY', chat_url = '/v1/chat/completions' },
            schema = { model = { default = model } },
          })
        end,
        opts = { show_presets = false, show_model_choices = false },
      },
    },
    interactions = {
      chat = {
        adapter = 'fake',
        -- The edit lands at once, without the diff to accept (caboose's edit_file bench has no human either).
        -- file_size_limit_mb: bench/buffers.ts's 100,000-line file is 4.3 MB (the default limit is 2).
        tools = { insert_edit_into_file = { opts = { require_confirmation_after = false, file_size_limit_mb = 8 } } },
      },
      inline = { adapter = 'fake' },
      cmd = { adapter = 'fake' },
      background = { adapter = 'fake' },
    },
  })
end

local function chat()
  return require('codecompanion').last_chat()
end

--- Cold: t0, then `:CodeCompanionChat <prompt>` (opens the chat and submits the prompt), then the chat's
--- buffer is watched for `first`/`done` (the reply arrives in later main-loop turns, so nothing is missed).
function B.cc_open(prompt, first, done)
  B.t0 = uv.hrtime()
  vim.cmd('CodeCompanionChat ' .. prompt)
  B.watch(first, done, chat().bufnr)
  B.t_returned = uv.hrtime()
end

--- Warm: the next message typed under the chat's last "Me" header, then submitted as <CR> does.
function B.cc_send(prompt, first, done)
  local c = chat()
  B.t0 = uv.hrtime()
  B.watch(first, done, c.bufnr)
  vim.api.nvim_buf_set_lines(c.bufnr, -1, -1, false, { prompt })
  c:submit()
  B.t_returned = uv.hrtime()
end

--- A new chat holding `messages` ({ role = 'user'|'llm', content }) as earlier conversation (its chat
--- API, as a restored chat is opened), not submitted; ends with an empty user turn for the next message.
--- Without messages: `:CodeCompanionChat` (an empty chat). Returns the chat buffer's size in characters.
function B.cc_new_chat(messages)
  if messages == vim.NIL or messages == nil or #messages == 0 then
    vim.cmd('CodeCompanionChat')
  else
    local msgs = vim.deepcopy(messages)
    table.insert(msgs, { role = 'user', content = '' })
    require('codecompanion').chat({ messages = msgs, auto_submit = false })
  end
  local c = chat()
  return #table.concat(vim.api.nvim_buf_get_lines(c.bufnr, 0, -1, false), '\n')
end

--- Times each insert_edit_into_file run (ms): from the moment its command function is entered (the
--- tool call parsed and approved) until its CodeCompanionFileEdited event (fired once the new text is in
--- the buffer and the file written; codecompanion's one listener before this one only records the path).
--- Only the tool's own work is timed, not the chat's rendering around it. Call after setup (the tool's
--- size limit is read from the config when it loads).
function B.cc_edit_hooks()
  B.edit_ms = {}
  local t0
  local tool = require('codecompanion.interactions.chat.tools.builtin.insert_edit_into_file')
  local cmd = tool.cmds[1]
  tool.cmds[1] = function(...)
    t0 = uv.hrtime()
    return cmd(...)
  end
  vim.api.nvim_create_autocmd('User', {
    pattern = 'CodeCompanionFileEdited',
    callback = function()
      if t0 then
        table.insert(B.edit_ms, (uv.hrtime() - t0) / 1e6)
        t0 = nil
      end
    end,
  })
end

--- Adds a tool to the last chat (as `@{name}` in a message does).
function B.cc_add_tool(name)
  return chat().tool_registry:add(name) ~= nil
end

--- True when the last chat has no request in flight and its buffer holds `tail`.
function B.cc_idle(tail)
  local c = chat()
  if not c or c.current_request ~= nil then
    return false
  end
  local text = table.concat(vim.api.nvim_buf_get_lines(c.bufnr, 0, -1, false), '\n')
  return text:find(tail, 1, true) ~= nil
end

function B.cc_lines()
  local c = chat()
  return c and vim.api.nvim_buf_get_lines(c.bufnr, 0, -1, false) or {}
end

return B
