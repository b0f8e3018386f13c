--- Variables a message can name anywhere (`#buffer`, `#buffers`, `#selection`, `#diagnostics`, `#gitdiff`,
--- `#quickfix`, `#file:path`, and `#{name}` braces): each gathers what the editor knows into context items
--- (path, range, filetype, text) that the host turns into the model's text and the chat's labels.
local M = {}
local H = {}

local context = function()
  return require('caboose.context')
end

H.display = function(path)
  return path ~= '' and vim.fn.fnamemodify(path, ':.') or ''
end

--- The buffer the user came from (a code buffer), or nil with a warning naming the variable.
H.origin = function(origin, what)
  local buf = context().origin_buffer(origin)
  if not buf then
    vim.notify('(caboose) ' .. what .. ': no file buffer to attach', vim.log.levels.WARN)
  end
  return buf
end

--- Every listed code buffer (unsaved text included).
function M.buffers()
  local items = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    -- (The empty [No Name] buffer Neovim starts with is nothing to attach.)
    local empty = vim.api.nvim_buf_get_name(b) == '' and vim.api.nvim_buf_line_count(b) == 1 and vim.api.nvim_buf_get_lines(b, 0, 1, false)[1] == ''
    if vim.bo[b].buflisted and vim.api.nvim_buf_is_loaded(b) and context().is_code_buffer(b) and not empty then
      local item = context().buffer(b)
      item.name = '#buffers'
      table.insert(items, item)
    end
  end
  return items
end

--- The last visual selection ('< and '> marks) of the buffer the user came from.
function M.selection(origin)
  local buf = H.origin(origin, '#selection')
  if not buf then
    return {}
  end
  local s = vim.api.nvim_buf_get_mark(buf, '<')
  local e = vim.api.nvim_buf_get_mark(buf, '>')
  if s[1] == 0 or e[1] == 0 then
    vim.notify('(caboose) #selection: no visual selection in ' .. H.display(vim.api.nvim_buf_get_name(buf)), vim.log.levels.WARN)
    return {}
  end
  local item = context().selection(buf, math.min(s[1], e[1]), math.max(s[1], e[1]))
  item.name = '#selection'
  return { item }
end

H.SEVERITY = { 'ERROR', 'WARN', 'INFO', 'HINT' }

--- Diagnostics of the buffer the user came from, or of every buffer (`workspace`).
---@param scope 'buffer'|'workspace'|nil
function M.diagnostics(origin, scope, name)
  local buf = scope ~= 'workspace' and H.origin(origin, name or '#diagnostics') or nil
  if scope ~= 'workspace' and not buf then
    return {}
  end
  local diags = vim.diagnostic.get(buf)
  table.sort(diags, function(a, b)
    if a.bufnr ~= b.bufnr then
      return a.bufnr < b.bufnr
    end
    return a.lnum < b.lnum
  end)
  local lines = {}
  for _, d in ipairs(diags) do
    local path = H.display(vim.api.nvim_buf_get_name(d.bufnr))
    table.insert(lines, string.format('%s:%d:%d: %s: %s%s', path ~= '' and path or '[No Name]', d.lnum + 1, d.col + 1, H.SEVERITY[d.severity] or '?', (d.message or ''):gsub('\n', ' '), d.source and (' [' .. d.source .. ']') or ''))
  end
  if #lines == 0 then
    lines = { 'no diagnostics' }
  end
  return {
    {
      kind = 'attachment',
      name = name or '#diagnostics',
      path = buf and H.display(vim.api.nvim_buf_get_name(buf)) or '',
      abs = buf and vim.api.nvim_buf_get_name(buf) ~= '' and vim.api.nvim_buf_get_name(buf) or nil,
      text = table.concat(lines, '\n'),
    },
  }
end

--- `git diff` of the working directory (unstaged, or `staged`); `done(items)` runs when git has answered
--- (the editor does not wait for it).
function M.gitdiff(_, scope, name, done)
  local args = { 'git', 'diff', '--no-color', '--no-ext-diff' }
  if scope == 'staged' then
    table.insert(args, '--staged')
  end
  local finish = function(res)
    if res.code ~= 0 then
      -- One line: outside a repository git prints its whole usage after the reason.
      local err = vim.trim(res.stderr or '')
      local why = err:lower():find('not a git repository', 1, true) and ('not a git repository: ' .. vim.fn.fnamemodify(vim.fn.getcwd(), ':~'))
        or (vim.split(err, '\n', { plain = true })[1] or ''):gsub('^warning: ', '')
      vim.notify('(caboose) ' .. (name or '#gitdiff') .. ': nothing attached: ' .. (why ~= '' and why or 'git diff failed'), vim.log.levels.WARN)
      return done({})
    end
    local text = res.stdout or ''
    if vim.trim(text) == '' then
      text = scope == 'staged' and 'no staged changes' or 'no unstaged changes'
    end
    done({ { kind = 'attachment', name = (name or '#gitdiff') .. (scope == 'staged' and ' (staged)' or ''), path = '', filetype = 'diff', text = text } })
  end
  local ok, err = pcall(vim.system, args, { text = true, cwd = vim.fn.getcwd(), timeout = 10000 }, function(res)
    vim.schedule(function()
      finish(res)
    end)
  end)
  if not ok then
    finish({ code = -1, stderr = tostring(err) })
  end
end

--- The quickfix list, one `path:line:col: text` a line.
function M.quickfix(_, _, name)
  local lines = {}
  for _, e in ipairs(vim.fn.getqflist()) do
    local path = e.bufnr > 0 and H.display(vim.api.nvim_buf_get_name(e.bufnr)) or ''
    table.insert(lines, string.format('%s:%d:%d: %s%s', path, e.lnum, e.col, e.type ~= '' and (e.type .. ': ') or '', vim.trim(e.text or '')))
  end
  local title = vim.fn.getqflist({ title = 0 }).title
  if title == ':setqflist()' then
    title = ''
  end
  if #lines == 0 then
    lines = { 'the quickfix list is empty' }
  end
  return { { kind = 'attachment', name = name or '#quickfix', path = '', text = (title ~= '' and ('title: ' .. title .. '\n') or '') .. table.concat(lines, '\n') } }
end

--- The filetype Neovim gives `path` (its loaded buffer's, else by name and content), or nil.
function M.filetype(path)
  local full = vim.fn.fnamemodify(path, ':p')
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf) == full and vim.bo[buf].filetype ~= '' then
      return vim.bo[buf].filetype
    end
  end
  local ok, ft = pcall(vim.filetype.match, { filename = path })
  return ok and ft or nil
end

--- A file (read by the host, buffer-aware); a loaded buffer with unsaved text sends that text.
function M.file(path, name)
  path = context().expand_path(path)
  if vim.fn.filereadable(path) ~= 1 then
    vim.notify('(caboose) ' .. (name or '#file') .. ': cannot read ' .. path, vim.log.levels.WARN)
    return {}
  end
  return { { kind = 'file', name = name or ('#file:' .. H.display(path)), path = H.display(path), filetype = M.filetype(path) } }
end

H.IMAGE_EXTS = { png = true, jpg = true, jpeg = true }

--- True when `path` names a .png/.jpg/.jpeg file (by its name).
function M.is_image_name(path)
  local ext = (path or ''):match('%.(%w+)$')
  return ext ~= nil and H.IMAGE_EXTS[ext:lower()] == true
end

--- `file:///a%20b.png` → '/a b.png'; `~/x.png` → absolute; quotes around it dropped.
H.unwrap = function(path)
  path = vim.trim(path or '')
  local q = path:sub(1, 1)
  if (q == '"' or q == "'") and path:sub(-1) == q and #path >= 2 then
    path = path:sub(2, -2)
  end
  if path:match('^file://') then
    path = path:gsub('^file://[^/]*', ''):gsub('%%(%x%x)', function(h)
      return string.char(tonumber(h, 16))
    end)
  end
  path = path:gsub('\\ ', ' ')
  if path:sub(1, 1) == '~' then
    path = context().expand_path(path)
  end
  return path
end

--- An image file (PNG/JPEG), read and checked by the host: a relative path must stay in the workspace; an
--- absolute (or ~) path the user typed may be anywhere.
function M.image(path, name)
  path = H.unwrap(path)
  if not M.is_image_name(path) then
    vim.notify('(caboose) ' .. (name or '#image') .. ': only .png, .jpg and .jpeg files can be attached as images: ' .. path, vim.log.levels.WARN)
    return {}
  end
  if vim.fn.filereadable(path) ~= 1 then
    vim.notify('(caboose) ' .. (name or '#image') .. ': cannot read ' .. path, vim.log.levels.WARN)
    return {}
  end
  return { { kind = 'image', name = name or '#image', path = path } }
end

--- Paths to existing image files pasted in a message: a line that is one (spaces allowed, quoted or not,
--- `file://` URLs), or a word that is one (`\ ` escapes a space). `#image:` and `@` forms are left to
--- their own handlers.
function M.image_paths(text)
  local found, seen = {}, {}
  local add = function(candidate)
    local path = H.unwrap(candidate)
    if path ~= '' and not seen[path] and M.is_image_name(path) and vim.fn.filereadable(path) == 1 then
      seen[path] = true
      table.insert(found, path)
      return true
    end
  end
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do
    local l = vim.trim(line)
    if not (l:match('^#') or l:match('^@')) and not add(l) then
      for quoted in l:gmatch('"([^"]+)"') do
        add(quoted)
      end
      for quoted in l:gmatch("'([^']+)'") do
        add(quoted)
      end
      -- Words; an escaped space stays inside its word.
      local words = l:gsub('\\ ', '\0')
      for word in words:gmatch('%S+') do
        word = word:gsub('%z', '\\ '):gsub('[,;:!?%)%]]+$', ''):gsub('%.$', '')
        if not (word:match('^#') or word:match('^@')) then
          add(word)
        end
      end
    end
  end
  return found
end

function M.buffer(origin, name)
  local buf = H.origin(origin, name or '#buffer')
  if not buf then
    return {}
  end
  local item = context().buffer(buf)
  item.name = name
  return { item }
end

return M
