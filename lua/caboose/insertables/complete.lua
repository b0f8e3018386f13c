--- Completion of the message area's insertables: `/command` at the start of a line, `#variable` anywhere
--- (and `@path`, from caboose.context). One list of candidates feeds the built-in popup, the omnifunc, and
--- the blink.cmp and nvim-cmp sources (caboose.insertables.blink, caboose.insertables.cmp).
local M = {}
local H = {}

local registry = function()
  return require('caboose.insertables')
end

--- MCP prompts (`/server:prompt`) and resources (`#mcp:server:uri`) from the host, cached: refreshed in
--- the background (never waited for) when the host runs and servers are configured.
M.mcp = { items = {}, at = nil, pending = false }
M.MCP_TTL_MS = 30000

--- Refreshes the MCP items when stale; `on_new()` runs when fresh ones arrived.
function M.refresh_mcp(on_new)
  local caboose = require('caboose')
  local servers = (caboose.config().mcp or {}).servers or {}
  if M.mcp.pending or next(servers) == nil or not require('caboose.rpc').is_running() then
    return
  end
  if M.mcp.at and (vim.uv.now() - M.mcp.at) < M.MCP_TTL_MS then
    return
  end
  M.mcp.pending = true
  caboose._request(require('caboose.rpc').methods.mcp_items, vim.empty_dict(), function(err, res)
    M.mcp.pending = false
    M.mcp.at = vim.uv.now()
    if not err and type(res) == 'table' then
      M.mcp.items = res.items or {}
      if on_new then
        on_new()
      end
    end
    return true -- completion stays quiet: :CabooseMcp shows what failed
  end)
end

H.mcp_items = function(kind, prefix)
  local out = {}
  for _, i in ipairs(M.mcp.items) do
    if i.kind == kind and vim.startswith(i.word, prefix) then
      table.insert(out, { word = i.word, abbr = i.word, kind = 'mcp', menu = '[mcp] ' .. (i.menu or ''), info = i.info or '' })
    end
  end
  return out
end

local vars_image = function(f)
  return require('caboose.insertables.variables').is_image_name(f)
end

--- What the text before the cursor is completing: `{ col = 0-based byte column where the token starts
--- (its `/` or `#`), items = { { word, abbr, kind = 'command'|'variable', menu, info } } }`, or nil.
---@param before string the line up to the cursor
function M.candidates(before)
  local items = {}
  local slash = before:match('^%s*(/[%w_:-]*)$')
  if slash then
    local col = #before - #slash
    for _, c in ipairs(registry().commands) do
      local word = '/' .. c.name
      if vim.startswith(word, slash) then
        table.insert(items, { word = word, abbr = word .. registry().args_text(c), kind = 'command', menu = '[caboose]', info = c.description .. '\nExample: ' .. c.example })
      end
    end
    local prompts = require('caboose.prompts')
    for _, e in ipairs(prompts.list()) do
      local word = '/' .. e.name
      if not e.command and vim.startswith(word, slash) then
        local info = (e.description ~= '' and e.description or 'prompt') .. '\nPrompt from ' .. prompts.source_text(e)
        table.insert(items, { word = word, abbr = word, kind = 'prompt', menu = '[prompt]', info = e.error and ('error: ' .. e.error) or info })
      end
    end
    vim.list_extend(items, H.mcp_items('prompt', slash))
    return #items > 0 and { col = col, items = items } or nil
  end
  -- `#image:` completes image files (and folders on the way to them).
  local istart, ipath = before:match('()#{?image:([^%s}]*)$')
  if istart and (istart == 1 or not before:sub(istart - 1, istart - 1):match('[%w_#]')) then
    local lead = before:sub(istart, #before - #ipath)
    for _, f in ipairs(vim.fn.getcompletion(ipath, 'file')) do
      if f:sub(-1) == '/' or vars_image(f) then
        table.insert(items, { word = lead .. f, abbr = f, kind = f:sub(-1) == '/' and 'folder' or 'image', menu = '[caboose]', info = 'attach ' .. f .. ' as an image' })
      end
    end
    return #items > 0 and { col = istart - 1, items = items } or nil
  end
  -- `#file:` completes paths (files and folders), as `@` does.
  local fstart, fpath = before:match('()#{?file:([^%s}]*)$')
  if fstart and (fstart == 1 or not before:sub(fstart - 1, fstart - 1):match('[%w_#]')) then
    local lead = before:sub(fstart, #before - #fpath)
    for _, f in ipairs(vim.fn.getcompletion(fpath, 'file')) do
      local folder = f:sub(-1) == '/'
      table.insert(items, { word = lead .. f, abbr = f, kind = folder and 'folder' or 'file', menu = '[caboose]', info = 'attach ' .. f })
    end
    if #items > 0 then
      return { col = fstart - 1, items = items }
    end
  end
  local start = before:find('#{?[%w_:]*$') or before:find('#mcp:%S*$')
  if start and (start == 1 or not before:sub(start - 1, start - 1):match('[%w_#]')) then
    local typed = before:sub(start)
    local braced = typed:sub(2, 2) == '{'
    local prefix = typed:sub(braced and 3 or 2)
    for _, v in ipairs(registry().variables) do
      local forms = { v.name }
      for _, a in ipairs(v.args or {}) do
        table.insert(forms, v.name .. ':' .. a)
      end
      if v.takes_path then
        forms = { v.name .. ':' }
      end
      for _, f in ipairs(forms) do
        if vim.startswith(f, prefix) then
          local word = braced and ('#{' .. f .. (v.takes_path and '' or '}')) or ('#' .. f)
          table.insert(items, { word = word, abbr = word, kind = 'variable', menu = '[caboose]', info = v.description .. '\nExample: ' .. v.example })
        end
      end
    end
    if not braced then
      vim.list_extend(items, H.mcp_items('resource', typed))
    end
    return #items > 0 and { col = start - 1, items = items } or nil
  end
  return nil
end

--- omnifunc of the message area: `/` and `#` here, `@path` from caboose.context.
function M.omnifunc(findstart, base)
  local col = vim.api.nvim_win_get_cursor(0)[2]
  local before = vim.api.nvim_get_current_line():sub(1, col)
  local c = M.candidates(before)
  if not c then
    return require('caboose.context').omnifunc(findstart, base)
  end
  if findstart == 1 then
    return c.col
  end
  return vim.tbl_filter(function(i)
    return vim.startswith(i.word, base)
  end, c.items)
end

--- After a typed `/` or `#` (TextChangedI of the message area): opens the built-in popup, offering without
--- inserting. True when it handled the text before the cursor (else `@path` completion may run).
function M.popup()
  local typed = vim.b.caboose_typed_trigger
  vim.b.caboose_typed_trigger = nil
  if vim.fn.pumvisible() == 1 then
    return false
  end
  local col = vim.api.nvim_win_get_cursor(0)[2]
  local before = vim.api.nvim_get_current_line():sub(1, col)
  -- Only right after the trigger character: typing on narrows the open menu by itself.
  -- A path after `#file:` or `#image:` completes whenever no menu is open (as `@path` does).
  local path_token = before:match('#{?file:[^%s}]*$') or before:match('#{?image:[^%s}]*$')
  -- Or when a trigger character was typed since the last check: keys arriving in one burst (fast typing
  -- over ssh, a mapping) give a single TextChangedI, after `#sel` rather than after `#`.
  if not before:match('[/#]$') and not before:match('#{$') and not path_token and not typed then
    return false
  end
  local buf, row = vim.api.nvim_get_current_buf(), vim.api.nvim_win_get_cursor(0)[1]
  M.refresh_mcp(function()
    -- Fresh MCP items while the user still completes here: the menu shows them too.
    if vim.api.nvim_get_current_buf() ~= buf or vim.fn.mode() ~= 'i' or vim.api.nvim_win_get_cursor(0)[1] ~= row then
      return
    end
    local now = vim.api.nvim_get_current_line():sub(1, vim.api.nvim_win_get_cursor(0)[2])
    local fresh = M.candidates(now)
    if fresh then
      H.show(fresh)
    end
  end)
  local c = M.candidates(before)
  if not c then
    return false
  end
  H.show(c)
  return true
end

--- Offers `items` from column `startcol` (1-based) in the built-in popup: never inserts on its own (the menu
--- shows even for one match, nothing selected until the user picks); the user's 'completeopt' comes back
--- when the completion ends. The chat's `@` completion uses it too.
function M.offer(startcol, items)
  local saved = vim.o.completeopt
  vim.o.completeopt = 'menuone,noinsert,noselect'
  vim.api.nvim_create_autocmd({ 'CompleteDone', 'InsertLeave' }, {
    once = true,
    buffer = vim.api.nvim_get_current_buf(),
    callback = function()
      vim.o.completeopt = saved
    end,
  })
  vim.fn.complete(startcol, items)
end

H.show = function(c)
  M.offer(c.col + 1, c.items)
end

--- The candidates as LSP completion items replacing the typed token (for blink.cmp and nvim-cmp).
---@param row integer 0-based line
---@param before string the line up to the cursor
function M.lsp_items(row, before)
  M.refresh_mcp()
  local c = M.candidates(before)
  if not c then
    return {}
  end
  local kinds = vim.lsp.protocol.CompletionItemKind
  local out = {}
  for _, i in ipairs(c.items) do
    table.insert(out, {
      label = i.abbr,
      filterText = i.word,
      insertText = i.word,
      kind = (i.kind == 'command' or i.kind == 'prompt' or i.kind == 'mcp' and i.word:sub(1, 1) == '/') and kinds.Function or kinds.Variable,
      documentation = { kind = 'markdown', value = i.info },
      textEdit = { newText = i.word, range = { start = { line = row, character = c.col }, ['end'] = { line = row, character = #before } } },
    })
  end
  return out
end

--- The message area (completion sources offer nothing elsewhere).
function M.in_message_area(buf)
  return vim.b[buf or 0].caboose_input == true
end

M.TRIGGERS = { '/', '#' }

--- InsertCharPre of the message area: notes a typed trigger character for the next popup() check.
function M.note_typed()
  if vim.v.char == '/' or vim.v.char == '#' then
    vim.b.caboose_typed_trigger = true
  end
end

return M
