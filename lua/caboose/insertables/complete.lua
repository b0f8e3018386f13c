--- Completion of the message area's insertables: `/command` at the start of a line, `#variable` anywhere
--- (and `@path`, from caboose.context). One list of candidates feeds the built-in popup, the omnifunc, and
--- the blink.cmp and nvim-cmp sources (caboose.insertables.blink, caboose.insertables.cmp).
local M = {}

local registry = function()
  return require('caboose.insertables')
end

--- What the text before the cursor is completing: `{ col = 0-based byte column where the token starts
--- (its `/` or `#`), items = { { word, abbr, kind = 'command'|'variable', menu, info } } }`, or nil.
---@param before string the line up to the cursor
function M.candidates(before)
  local items = {}
  local slash = before:match('^%s*(/[%w_-]*)$')
  if slash then
    local col = #before - #slash
    for _, c in ipairs(registry().commands) do
      local word = '/' .. c.name
      if vim.startswith(word, slash) then
        table.insert(items, { word = word, abbr = word .. registry().args_text(c), kind = 'command', menu = '[caboose]', info = c.description .. '\nExample: ' .. c.example })
      end
    end
    return #items > 0 and { col = col, items = items } or nil
  end
  local start = before:find('#{?[%w_:]*$')
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
  if vim.fn.pumvisible() == 1 then
    return false
  end
  local col = vim.api.nvim_win_get_cursor(0)[2]
  local before = vim.api.nvim_get_current_line():sub(1, col)
  -- Only right after the trigger character: typing on narrows the open menu by itself.
  if not before:match('[/#]$') and not before:match('#{$') then
    return false
  end
  local c = M.candidates(before)
  if not c then
    return false
  end
  local saved = vim.o.completeopt
  vim.o.completeopt = 'menuone,noinsert,noselect'
  vim.api.nvim_create_autocmd({ 'CompleteDone', 'InsertLeave' }, {
    once = true,
    buffer = vim.api.nvim_get_current_buf(),
    callback = function()
      vim.o.completeopt = saved
    end,
  })
  vim.fn.complete(c.col + 1, c.items)
  return true
end

--- The candidates as LSP completion items replacing the typed token (for blink.cmp and nvim-cmp).
---@param row integer 0-based line
---@param before string the line up to the cursor
function M.lsp_items(row, before)
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
      kind = i.kind == 'command' and kinds.Function or kinds.Variable,
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

return M
