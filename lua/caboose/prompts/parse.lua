--- Prompt files and setup() entries as data (|caboose-prompts|): front matter, the checks of a prompt's
--- fields, and the `{{placeholders}}` of its text. Pure functions; loading and running are elsewhere.
local M = {}
local H = {}

M.MODES = { 'plan', 'create', 'auto-edit', 'chug' }
--- Sources, highest precedence first.
M.SOURCES = { 'project', 'user', 'setup', 'builtin' }
M.SOURCE_LABEL = { project = 'project', user = 'user', setup = 'setup()', builtin = 'built-in' }
--- What `/name` can be (the chat's slash-command syntax).
M.NAME_PATTERN = '^[%w_-]+$'
--- The front matter keys.
M.FIELDS = { description = true, mode = true, model = true }

-- Parsing -------------------------------------------------------------------------------------------

H.unquote = function(value)
  local dq = value:match('^"(.*)"$')
  if dq then
    return (dq:gsub('\\(.)', { ['"'] = '"', ['\\'] = '\\', n = '\n', t = '\t' }))
  end
  local sq = value:match("^'(.*)'$")
  if sq then
    return (sq:gsub("''", "'"))
  end
  -- A ` # comment` after a plain value.
  return (value:gsub('%s+#.*$', ''))
end

--- Checks one prompt's fields; returns the normalized prompt or nil and what is wrong.
---@return { description: string, text: string, mode: string|nil, model: string|nil }|nil, string|nil
function M.check(p)
  if type(p.text) ~= 'string' or vim.trim(p.text) == '' then
    return nil, 'the prompt has no text'
  end
  if p.description ~= nil and type(p.description) ~= 'string' then
    return nil, '`description` should be a string'
  end
  local mode = p.mode
  if mode == '' then
    mode = nil
  end
  if mode ~= nil and not vim.tbl_contains(M.MODES, mode) then
    return nil, string.format('`mode` should be one of %s, got %s', table.concat(M.MODES, ', '), vim.inspect(mode))
  end
  local model = p.model
  if model == '' then
    model = nil
  end
  if model ~= nil and type(model) ~= 'string' then
    return nil, '`model` should be a string (provider/model)'
  end
  return { description = p.description or '', text = p.text, mode = mode, model = model }
end

--- Parses a prompt file: optional front matter between `---` lines (`key: value`, quotes optional, `#`
--- comments), then the prompt text.
---@param content string
---@return { description: string, text: string, mode: string|nil, model: string|nil }|nil prompt
---@return string|string[] error (when nil) or warnings
function M.parse(content)
  content = content:gsub('^\239\187\191', ''):gsub('\r\n', '\n')
  local lines = vim.split(content, '\n', { plain = true })
  local meta, warnings, start = {}, {}, 1
  if lines[1] and lines[1]:match('^%-%-%-%s*$') then
    local close
    for i = 2, #lines do
      if lines[i]:match('^%-%-%-%s*$') or lines[i]:match('^%.%.%.%s*$') then
        close = i
        break
      end
    end
    if not close then
      return nil, 'the front matter is not closed (a line `---` ends it)'
    end
    for i = 2, close - 1 do
      local l = lines[i]
      if not (l:match('^%s*$') or l:match('^%s*#')) then
        local key, value = l:match('^%s*([%w_-]+)%s*:%s*(.-)%s*$')
        if not key then
          return nil, string.format('front matter line %d is not `key: value`: %s', i, l)
        end
        if M.FIELDS[key] then
          meta[key] = H.unquote(value)
        else
          table.insert(warnings, string.format('unknown front matter key `%s` (ignored; known: description, mode, model)', key))
        end
      end
    end
    start = close + 1
  end
  meta.text = vim.trim(table.concat(lines, '\n', start))
  local p, err = M.check(meta)
  if not p then
    return nil, err
  end
  return p, warnings
end

-- Placeholders --------------------------------------------------------------------------------------

M.PLACEHOLDERS = { selection = true, buffer = true, code = true, file = true, filetype = true, input = true }

--- The placeholder inside `{{…}}`: its name and, for `input:Question`, the question; nil when unknown.
H.placeholder = function(inner)
  local q = inner:match('^%s*input%s*:%s*(.-)%s*$')
  if q then
    return 'input', q
  end
  local name = inner:match('^%s*([%a_]+)%s*$')
  if name and M.PLACEHOLDERS[name] then
    return name, name == 'input' and '' or nil
  end
end

--- The placeholders `text` uses: `names` (a set) and `inputs` (the questions, in order, once each; '' is
--- the plain `{{input}}`).
---@return { names: table<string, boolean>, inputs: string[] }
function M.placeholders(text)
  local out = { names = {}, inputs = {} }
  local seen = {}
  for inner in text:gmatch('{{(.-)}}') do
    local name, q = H.placeholder(inner)
    if name then
      out.names[name] = true
      if name == 'input' and not seen[q] then
        seen[q] = true
        table.insert(out.inputs, q)
      end
    end
  end
  return out
end

--- Replaces the placeholders in one pass (an answer that contains `{{…}}` stays as typed). `values`: one
--- string per placeholder name, and `input = { [question] = answer }`. Unknown or missing ones stay.
function M.substitute(text, values)
  return (text:gsub('{{(.-)}}', function(inner)
    local name, q = H.placeholder(inner)
    if not name then
      return nil
    end
    local v
    if name == 'input' then
      v = (values.input or {})[q]
    else
      v = values[name]
    end
    return v
  end))
end

return M
