--- Trust in project prompts (`.caboose/prompts/*.md`): a repository's prompt is someone else's text sent to
--- the agent as the user's. Before one runs for the first time (or after it changed), its path and full
--- text are shown and the user chooses: run once, always trust this prompt, or cancel. "Always" is kept
--- keyed by the file's absolute path AND the sha256 of its content, in
--- `<stdpath state>/caboose/trusted-prompts.json` — never in the project, which could otherwise trust itself.
local M = {}
local H = {}

function M.file()
  return vim.fs.joinpath(vim.fn.stdpath('state'), 'caboose', 'trusted-prompts.json')
end

H.key = function(path)
  return vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
end

function M.hash(content)
  return vim.fn.sha256(content)
end

--- { [absolute path] = sha256 }
function M.load()
  local fd = io.open(M.file(), 'rb')
  if not fd then
    return {}
  end
  local raw = fd:read('*a')
  fd:close()
  local ok, data = pcall(vim.json.decode, raw)
  if not ok or type(data) ~= 'table' or type(data.prompts) ~= 'table' then
    return {}
  end
  return data.prompts
end

H.save = function(prompts)
  local file = M.file()
  vim.fn.mkdir(vim.fn.fnamemodify(file, ':h'), 'p')
  local tmp = file .. '.tmp' .. vim.uv.os_getpid()
  local fd = io.open(tmp, 'wb')
  if not fd then
    return false
  end
  fd:write(vim.json.encode({ version = 1, prompts = next(prompts) and prompts or vim.empty_dict() }))
  fd:close()
  local ok = vim.uv.fs_rename(tmp, file)
  if not ok then
    os.remove(tmp)
  end
  return ok ~= nil
end

function M.is_trusted(path, content)
  return M.load()[H.key(path)] == M.hash(content)
end

function M.remember(path, content)
  local prompts = M.load()
  prompts[H.key(path)] = M.hash(content)
  if not H.save(prompts) then
    require('caboose')._notify('could not save the prompt trust to ' .. M.file(), vim.log.levels.WARN)
  end
end

--- What the prompt's front matter switches (said in the dialog: `mode: chug` runs every tool unasked).
H.switches = function(e)
  local out = {}
  if e.mode then
    table.insert(out, 'mode ' .. e.mode .. (e.mode == 'chug' and ' (every tool runs without asking)' or e.mode == 'auto-edit' and ' (edits without asking)' or ''))
  end
  if e.model then
    table.insert(out, 'model ' .. e.model)
  end
  return #out > 0 and ('it switches the chat to ' .. table.concat(out, ' and ')) or nil
end

--- A float showing the prompt's path and full text while the choice is open (closed after it). Returns
--- the closer, and whether all of the text fits in it.
H.preview = function(e, content)
  local rel = vim.fn.fnamemodify(e.path, ':~:.')
  local lines = {
    'Project prompt /' .. e.name .. ' — ' .. rel,
    'This file comes with the project, not from you: read it before it goes to the agent.',
  }
  local switches = H.switches(e)
  if switches then
    table.insert(lines, 'Careful: ' .. switches .. '.')
  end
  table.insert(lines, string.rep('─', 40))
  local header = #lines
  vim.list_extend(lines, vim.split((content:gsub('\r\n', '\n')), '\n', { plain = true }))
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].filetype = 'markdown'
  vim.b[buf].caboose_prompt_preview = e.path
  local width = math.min(math.max(60, vim.o.columns - 10), 100)
  width = math.min(width, vim.o.columns - 4)
  width = math.max(10, width)
  -- Long lines wrap: size by screen rows, else the last lines fall out of the float (shown as @@@)
  -- while it claims to show all of the text.
  local windows = require('caboose.ui.windows')
  local rows = windows.wrapped_rows(lines, width)
  local height = math.max(3, math.min(rows, vim.o.lines - 8))
  local fits = height >= rows
  local whole = #lines -- the lines shown whole when not all fit
  while whole > 0 and windows.wrapped_rows(vim.list_slice(lines, 1, whole), width) > height do
    whole = whole - 1
  end
  local ok, win = pcall(vim.api.nvim_open_win, buf, false, {
    relative = 'editor',
    row = 1,
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    width = width,
    height = height,
    style = 'minimal',
    border = 'rounded',
    title = fits and ' untrusted project prompt ' or string.format(' untrusted project prompt: lines 1-%d of %d shown ', math.max(0, whole - header), #lines - header),
    title_pos = 'center',
    focusable = false,
    zindex = 60,
  })
  return function()
    if ok and vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end, fits
end

M.CHOICES = { 'Run once', 'Always trust this prompt (until it changes)', 'Cancel' }
--- Offered too when the text is longer than the screen: read it all first (nothing runs).
M.READ = 'Open the file to read all of it (nothing runs)'

--- Shows the prompt and asks; `done(true)` to run it (remembered for "always"), `done(false)` otherwise.
function M.ask(e, content, done)
  local close, fits = H.preview(e, content)
  vim.cmd('redraw')
  local choices = vim.list_extend({}, M.CHOICES)
  if not fits then
    table.insert(choices, 3, M.READ)
  end
  local switches = H.switches(e)
  vim.ui.select(choices, {
    prompt = string.format('Run project prompt /%s from %s?%s', e.name, vim.fn.fnamemodify(e.path, ':~:.'), switches and (' (' .. switches .. ')') or ''),
    kind = 'caboose_prompt_trust',
  }, function(choice)
    close()
    if choice == M.READ then
      vim.cmd('split ' .. vim.fn.fnameescape(e.path))
      vim.bo.readonly = true
      return done(false)
    end
    if choice == M.CHOICES[2] then
      M.remember(e.path, content)
      return done(true)
    end
    done(choice == M.CHOICES[1])
  end)
end

return M
