--- One registry of the things a user can insert in a message: slash commands (`/help`, `/file`, …: at the
--- start of a message, or alone on a line) and variables (`#buffer`, `#gitdiff`, `#file:path`, `#{buffer}`,
--- …: anywhere). The message area, :Caboose and require('caboose').send() all go through M.send, so they
--- expand a message the same way; completion (built-in popup, blink.cmp, nvim-cmp) and /help read the
--- same tables.
local M = {}
local H = {}

local vars = function()
  return require('caboose.insertables.variables')
end
local caboose = function()
  return require('caboose')
end

--- Variables: `#name`, `#name:arg`, `#{name}`. `gather(origin, arg, name)` returns context items.
M.variables = {
  {
    name = 'buffer',
    description = 'the buffer you came from (unsaved text included)',
    example = 'what does #buffer do?',
    gather = function(origin)
      return vars().buffer(origin, nil)
    end,
  },
  {
    name = 'buffers',
    description = 'every listed file buffer (unsaved text included)',
    example = 'how do #buffers fit together?',
    gather = function()
      return vars().buffers()
    end,
  },
  {
    name = 'selection',
    description = "the last visual selection ('< to '>) of the buffer you came from",
    example = 'simplify #selection',
    gather = function(origin)
      return vars().selection(origin)
    end,
  },
  {
    name = 'diagnostics',
    args = { 'workspace' },
    description = 'diagnostics of the buffer you came from (#diagnostics:workspace: of every buffer)',
    example = 'fix #diagnostics',
    gather = function(origin, arg)
      return vars().diagnostics(origin, arg, arg == 'workspace' and '#diagnostics:workspace' or '#diagnostics')
    end,
  },
  {
    name = 'gitdiff',
    args = { 'staged' },
    description = 'the unstaged git diff of the working directory (#gitdiff:staged: the staged one)',
    example = 'review #gitdiff',
    gather = function(origin, arg, done)
      vars().gitdiff(origin, arg, '#gitdiff', done)
    end,
    async = true,
  },
  {
    name = 'quickfix',
    description = 'the quickfix list',
    example = 'explain the errors in #quickfix',
    gather = function(origin)
      return vars().quickfix(origin, nil, '#quickfix')
    end,
  },
  {
    name = 'file',
    args = {},
    takes_path = true,
    description = 'a file (the live buffer when it has unsaved changes)',
    example = 'compare #file:lua/a.lua with #buffer',
    gather = function(_, arg)
      if not arg or arg == '' then
        vim.notify('(caboose) #file needs a path: #file:path/to/file', vim.log.levels.WARN)
        return {}
      end
      return vars().file(arg)
    end,
  },
  {
    name = 'image',
    args = {},
    takes_path = true,
    description = 'a PNG or JPEG image, sent as an image to the model (a pasted path to one works too)',
    example = 'what is wrong in #image:screenshots/bug.png',
    gather = function(_, arg)
      if not arg or arg == '' then
        vim.notify('(caboose) #image needs a path: #image:path/to/shot.png (#{image:with spaces.png})', vim.log.levels.WARN)
        return {}
      end
      return vars().image(arg, '#image')
    end,
  },
}

--- Slash commands. `attach` ones add context and the message goes on (the command line stays in its
--- text); the others act instead of sending (the rest of the line is their argument).
M.commands = {
  {
    name = 'help',
    description = 'list the slash commands, variables and prompts',
    example = '/help',
    run = function()
      caboose().open_chat()
      require('caboose.chat').block(M.help_text())
    end,
  },
  {
    name = 'clear',
    description = 'start a new chat',
    example = '/clear',
    run = function()
      caboose().new_session()
    end,
  },
  {
    name = 'mode',
    args = { 'plan', 'create', 'auto-edit', 'chug' },
    description = 'set the permission mode (without argument: show it)',
    example = '/mode plan',
    run = function(arg)
      caboose().command_mode({ args = arg })
    end,
  },
  {
    name = 'model',
    description = 'pick the model (the :CabooseModel picker)',
    example = '/model',
    run = function(arg)
      if arg ~= '' then
        return caboose().set_model(arg)
      end
      caboose().pick_model()
    end,
  },
  {
    name = 'undo',
    description = "rewind the files the agent changed for the last message (:CabooseUndo)",
    example = '/undo',
    run = function()
      caboose().undo()
    end,
  },
  {
    name = 'compact',
    description = 'summarize the conversation now (frees context)',
    example = '/compact',
    run = function()
      caboose().compact()
    end,
  },
  {
    name = 'export',
    args = { '[path]' },
    description = 'write the chat as Markdown (:CabooseExport)',
    example = '/export notes/chat.md',
    run = function(arg)
      caboose().export(arg)
    end,
  },
  {
    name = 'file',
    attach = true,
    description = 'pick a file and attach it (/file path: that file)',
    example = '/file',
    gather = function(origin, arg, done)
      if arg ~= '' then
        return done(vars().file(arg, '/file'))
      end
      local pick = function(files)
        vim.ui.select(files, { prompt = 'Attach file' }, function(choice)
          done(choice and vars().file(choice, '/file') or {})
        end)
      end
      -- The files git knows (tracked and untracked, not ignored); outside a repository, a glob.
      local ok = pcall(vim.system, { 'git', 'ls-files', '--cached', '--others', '--exclude-standard' }, { text = true, timeout = 5000 }, function(res)
        vim.schedule(function()
          if res.code == 0 and vim.trim(res.stdout or '') ~= '' then
            return pick(vim.split(vim.trim(res.stdout), '\n'))
          end
          pick(vim.tbl_filter(function(f)
            return vim.fn.isdirectory(f) == 0
          end, vim.fn.glob('**/*', false, true)))
        end)
      end)
      if not ok then
        pick(vim.tbl_filter(function(f)
          return vim.fn.isdirectory(f) == 0
        end, vim.fn.glob('**/*', false, true)))
      end
    end,
  },
  {
    name = 'buffer',
    attach = true,
    description = 'pick a loaded buffer and attach it (unsaved text included)',
    example = '/buffer',
    gather = function(_, _, done)
      local ctx = require('caboose.context')
      local bufs = vim.tbl_filter(function(b)
        return vim.api.nvim_buf_is_loaded(b) and ctx.is_code_buffer(b)
      end, vim.api.nvim_list_bufs())
      vim.ui.select(bufs, {
        prompt = 'Attach buffer',
        format_item = function(b)
          local name = vim.api.nvim_buf_get_name(b)
          return (name == '' and '[No Name]' or vim.fn.fnamemodify(name, ':.')) .. (vim.bo[b].modified and ' [+]' or '')
        end,
      }, function(choice)
        if not choice then
          return done({})
        end
        local item = ctx.buffer(choice)
        item.name = '/buffer'
        done({ item })
      end)
    end,
  },
  {
    name = 'diagnostics',
    attach = true,
    args = { 'workspace' },
    description = 'attach the diagnostics of the buffer you came from (/diagnostics workspace: all)',
    example = '/diagnostics workspace',
    gather = function(origin, arg, done)
      done(vars().diagnostics(origin, arg == 'workspace' and 'workspace' or nil, '/diagnostics'))
    end,
  },
  {
    name = 'gitdiff',
    attach = true,
    args = { 'staged' },
    description = 'attach the unstaged git diff (/gitdiff staged: the staged one)',
    example = '/gitdiff staged',
    gather = function(origin, arg, done)
      vars().gitdiff(origin, arg == 'staged' and 'staged' or nil, '/gitdiff', done)
    end,
  },
  {
    name = 'fetch',
    attach = true,
    args = { '<url>' },
    description = 'fetch a URL and attach its text (asks as the fetch tool does; fetch rules apply)',
    example = '/fetch https://neovim.io/doc/user/lua.html',
    gather = function(_, arg, done)
      local attach = function(url)
        url = vim.trim(url or '')
        if url == '' then
          return done({})
        end
        done({ { kind = 'fetch', name = '/fetch', path = '', url = url } })
      end
      if arg ~= '' then
        return attach(arg)
      end
      vim.ui.input({ prompt = 'Fetch URL: ' }, attach)
    end,
  },
  {
    name = 'quickfix',
    attach = true,
    description = 'attach the quickfix list',
    example = '/quickfix',
    gather = function(origin, _, done)
      done(vars().quickfix(origin, nil, '/quickfix'))
    end,
  },
}

H.by_name = function(list, name)
  for _, e in ipairs(list) do
    if e.name == name then
      return e
    end
  end
end

function M.command(name)
  return H.by_name(M.commands, name)
end

function M.variable(name)
  return H.by_name(M.variables, name)
end

--- ' {mode}'-style argument hint of a command or variable ('' without arguments).
function M.args_text(e, sep)
  local args = e.args or {}
  if #args == 0 then
    return ''
  end
  if #args == 1 and args[1]:match('^[%[<]') then
    return ' ' .. args[1]
  end
  return (sep or ' ') .. '[' .. table.concat(args, '|') .. ']'
end

--- The /help text (markdown).
function M.help_text()
  local out = { '### Slash commands', '' }
  for _, c in ipairs(M.commands) do
    table.insert(out, string.format('- `/%s%s` — %s (e.g. `%s`)', c.name, M.args_text(c), c.description, c.example))
  end
  vim.list_extend(out, { '', '### Variables (anywhere in a message; `#{name}` too)', '' })
  for _, v in ipairs(M.variables) do
    table.insert(out, string.format('- `#%s%s` — %s (e.g. `%s`)', v.name, v.takes_path and ':path' or (v.args and #v.args > 0 and '[:' .. table.concat(v.args, '|') .. ']' or ''), v.description, v.example))
  end
  vim.list_extend(out, { '', '### Prompts (`:CaboosePrompts` shows their source; `:help caboose-prompts`)', '' })
  for _, e in ipairs(require('caboose.prompts').list()) do
    if not e.command then
      table.insert(out, string.format('- `/%s` — %s (%s)', e.name, e.error and ('error: ' .. e.error) or (e.description ~= '' and e.description or 'no description'), require('caboose.prompts').source_text(e)))
    end
  end
  vim.list_extend(out, { '', '`@path` attaches a file; `/server:prompt` runs an MCP prompt; `#mcp:server:uri` attaches an MCP resource.' })
  return table.concat(out, '\n')
end

--- What a message asks for.
--- `prompt`: the library prompt `/name` runs (with `arg`, the rest of the message). With `opts.text_only`
--- (a prompt's expanded text), a leading `/word` is neither a command nor a prompt.
---@return { action: table|nil, prompt: table|nil, arg: string|nil, attach: { cmd: table, arg: string }[], vars: { var: table, arg: string|nil }[], unknown: string|nil }
function M.parse(text, opts)
  local r = { attach = {}, vars = {} }
  local first = not (opts and opts.text_only) and text:match('^%s*(/[^\n]*)') or nil
  if first then
    local name, rest = first:match('^/([%w_-]+)(.*)$')
    -- `/usr/bin` (a path) and `/server:prompt` (MCP) are no commands.
    if name and (rest == '' or rest:match('^%s')) then
      local cmd = M.command(name)
      if cmd and not cmd.attach then
        r.action = cmd
        -- The rest of the message is the argument.
        r.arg = vim.trim((text:gsub('^%s*/[%w_-]+', '', 1)))
        return r
      elseif not cmd then
        -- A prompt of the library (caboose.prompts): the rest of the message goes with it.
        local prompt = require('caboose.prompts').get(name)
        if prompt then
          r.prompt = prompt
          r.arg = vim.trim((text:gsub('^%s*/[%w_-]+', '', 1)))
          return r
        end
        r.unknown = name
      end
    end
  end
  -- Attach commands: the first line, or any line that is only the command (and its argument).
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do
    local name, rest = vim.trim(line):match('^/([%w_-]+)(.*)$')
    if name and (rest == '' or rest:match('^%s')) then
      local cmd = M.command(name)
      if cmd and cmd.attach then
        table.insert(r.attach, { cmd = cmd, arg = vim.trim(rest) })
      end
    end
  end
  local seen = {}
  local add = function(name, arg)
    local v = M.variable(name)
    local key = name .. ':' .. (arg or '')
    if v and not seen[key] then
      seen[key] = true
      table.insert(r.vars, { var = v, arg = arg })
    end
  end
  local s = ' ' .. text
  for pos in s:gmatch('()#') do
    if not s:sub(pos - 1, pos - 1):match('[%w_#]') then
      -- Balanced braces: `#{file:a{b}.lua}`.
      local braced = s:match('^#(%b{})', pos)
      braced = braced and #braced > 2 and not braced:find('\n') and braced:sub(2, -2) or nil
      local token = braced or s:match('^#([%a][%w_]*:?[^%s]*)', pos)
      if token then
        local name, arg = token:match('^([%a][%w_]*):(.*)$')
        name = name or token:match('^[%a][%w_]*')
        if not braced then
          arg = arg and arg:gsub('[%.,;!?%)%]}\'"]+$', '') or nil
          -- `#buffer.` or `#buffer,`: the word ends at the punctuation.
        end
        if name and name ~= 'mcp' then
          add(name, arg ~= '' and arg or nil)
        end
      end
    end
  end
  return r
end

--- Most context items one message carries (the host's limit).
M.MAX_ITEMS = 50

--- Expands `text` as the message area does and sends it (or runs the command it starts with).
--- opts: those of require('caboose').send(), plus `origin` (the buffer the message was written from).
function M.send(text, opts)
  opts = opts or {}
  local p = M.parse(text, { text_only = opts.from_prompt ~= nil })
  if p.prompt then
    return require('caboose.prompts').run(p.prompt, p.arg, opts)
  end
  if p.action then
    p.action.run(p.arg or '')
    if opts.on_done then
      opts.on_done(nil, { status = 'command', command = p.action.name })
    end
    return true
  end
  -- The buffer `#buffer` means: the given one, the current one when it holds code (send() from a
  -- mapping), else the code buffer the user was in last (the message area).
  local origin = opts.origin or vim.api.nvim_get_current_buf()
  local items = vim.deepcopy(opts.context or {})
  -- Variables, `@path`s, then attach commands, in that order; some answer later (git, a picker): one
  -- after another, then the message goes.
  local steps = {}
  for _, v in ipairs(p.vars) do
    table.insert(steps, function(done)
      if v.var.async then
        return v.var.gather(origin, v.arg, done)
      end
      done(v.var.gather(origin, v.arg))
    end)
  end
  table.insert(steps, function(done)
    local refs = {}
    for _, path in ipairs(require('caboose.context').file_refs(text)) do
      local full = require('caboose.context').expand_path(path)
      table.insert(refs, { kind = 'file', path = vim.fn.fnamemodify(full, ':.'), filetype = vars().filetype(full) })
    end
    done(refs)
  end)
  -- A path to an image file pasted in the message (screenshots): attached as an image.
  table.insert(steps, function(done)
    local imgs = {}
    for _, path in ipairs(vars().image_paths(text)) do
      vim.list_extend(imgs, vars().image(path, 'image'))
    end
    done(imgs)
  end)
  for _, a in ipairs(p.attach) do
    table.insert(steps, function(done)
      a.cmd.gather(origin, a.arg, done)
    end)
  end
  local i = 0
  local function step()
    i = i + 1
    if steps[i] then
      return steps[i](function(got)
        vim.list_extend(items, got or {})
        step()
      end)
    end
    if #items > M.MAX_ITEMS then
      -- The host takes at most that many (#buffers with many buffers open): say which were left out.
      local left = {}
      for j = M.MAX_ITEMS + 1, #items do
        table.insert(left, items[j].path ~= '' and items[j].path or (items[j].name or items[j].kind))
        items[j] = nil
      end
      caboose()._notify(string.format('only %d attachments go with one message; not attached: %s', M.MAX_ITEMS, table.concat(left, ', ')), vim.log.levels.WARN)
    end
    local sent = caboose().send(text, vim.tbl_extend('force', opts, { context = items, expanded = true }))
    if p.unknown then
      caboose()._notify(string.format('/%s is not a caboose command: sent as text (/help lists them)', p.unknown), vim.log.levels.INFO)
    end
    return sent
  end
  return step() ~= false
end

return M
