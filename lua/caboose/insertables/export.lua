--- :CabooseExport [path] / the chat's /export: the current chat as Markdown in a file (default: a name
--- from its title, in the working directory), or with ! in a new buffer.
---
--- Where it may write (the path is the user's: typed after :CabooseExport or /export; the title, which a
--- model may have written, only gives a default name made of [a-z0-9-] in the working directory):
--- - a relative path stays in the workspace (the working directory), with the links of its folders
---   resolved, and out of any .git folder; only an absolute or ~ path may name a place elsewhere;
--- - an existing file is never overwritten, nor a link (a dangling one would write wherever it points);
--- - the write is atomic: a temp file beside the target (created exclusively, fsynced) is hard-linked to
---   the name, which fails if anything appeared there meanwhile; where hard links are not supported, the
---   name itself is created exclusively (O_EXCL: never through a link, never over a file).
local M = {}
local H = {}

--- 'Fix the parser: tests' -> 'fix-the-parser-tests.md'
function M.file_name(title)
  local slug = (title or ''):lower():gsub('[^%w]+', '-'):gsub('^%-+', ''):gsub('%-+$', '')
  if slug == '' then
    slug = 'caboose-chat'
  end
  return slug:sub(1, 60):gsub('%-+$', '') .. '.md'
end

--- A default name that is free: `name.md`, `name-2.md`, …
H.free_name = function(name)
  local stem = name:gsub('%.md$', '')
  local candidate, n = name, 1
  while vim.uv.fs_lstat(candidate) do
    n = n + 1
    candidate = string.format('%s-%d.md', stem, n)
  end
  return candidate
end

--- Realpath of the longest existing ancestor of `p` (absolute), with the rest appended.
H.real_prefix = function(p)
  local rest = {}
  local head = p
  while true do
    local real = vim.uv.fs_realpath(head)
    if real then
      for i = #rest, 1, -1 do
        real = real .. '/' .. rest[i]
      end
      return real
    end
    local parent = vim.fn.fnamemodify(head, ':h')
    if parent == head then
      return p
    end
    table.insert(rest, vim.fn.fnamemodify(head, ':t'))
    head = parent
  end
end

H.under = function(root, p)
  return p == root or p:sub(1, #root + 1) == root .. '/'
end

--- Why the user's relative `target` may not be written (nil: it may): outside the workspace once its
--- folders' links are resolved, or inside a .git folder.
H.refusal = function(typed, target)
  local root = vim.uv.fs_realpath(vim.fn.getcwd()) or vim.fn.getcwd()
  local explicit = typed:match('^/') or typed:match('^~')
  local abs = vim.fn.fnamemodify(target, ':p')
  local real = H.real_prefix(vim.fn.fnamemodify(abs, ':h')) .. '/' .. vim.fn.fnamemodify(abs, ':t')
  if not explicit and not H.under(root, real) then
    return 'is outside the workspace (a relative path must stay in it; type an absolute path to write elsewhere)'
  end
  for seg in real:gmatch('[^/]+') do
    if seg:lower() == '.git' then
      return 'is inside a .git folder'
    end
  end
  return nil
end

--- Writes `text` to `target`, which must not exist (nothing there, not even a link), atomically.
--- Returns nil or an error message ('exists' when something is there).
H.write_new = function(target, text)
  local dir = vim.fn.fnamemodify(target, ':h')
  local tmp = string.format('%s/.%s.%d-%d.caboose-tmp', dir, vim.fn.fnamemodify(target, ':t'), vim.uv.os_getpid(), vim.uv.hrtime())
  local write = function(p)
    local fd, err = vim.uv.fs_open(p, 'wx', 420)
    if not fd then
      return err
    end
    local _, werr = vim.uv.fs_write(fd, text, 0)
    local _, serr = vim.uv.fs_fsync(fd)
    vim.uv.fs_close(fd)
    return werr or serr
  end
  local err = write(tmp)
  if err then
    vim.uv.fs_unlink(tmp)
    return err
  end
  local ok, lerr, code = vim.uv.fs_link(tmp, target)
  if not ok and code ~= 'EEXIST' then
    -- No hard links here (some network and FAT file systems): the name itself, created exclusively.
    lerr = write(target)
    ok = lerr == nil
    code = lerr and lerr:match('^EEXIST') and 'EEXIST' or code
  end
  vim.uv.fs_unlink(tmp)
  if not ok then
    return code == 'EEXIST' and 'exists' or lerr
  end
  local dfd = vim.uv.fs_open(dir, 'r', 0)
  if dfd then
    vim.uv.fs_fsync(dfd)
    vim.uv.fs_close(dfd)
  end
  return nil
end

---@param path string|nil
---@param to_buffer boolean|nil
---@param on_done fun(where: string|integer|nil)|nil called with the path written or the buffer opened
function M.export(path, to_buffer, on_done)
  local caboose = require('caboose')
  local done = on_done or function() end
  return caboose._request(require('caboose.rpc').methods.session_export, vim.empty_dict(), function(err, res)
    if err then
      done(nil)
      return
    end
    if (res.messages or 0) == 0 and not res.markdown:find('\n## You') then
      caboose._notify('the chat is empty: nothing to export', vim.log.levels.WARN)
      return done(nil)
    end
    local lines = vim.split(res.markdown:gsub('\n$', ''), '\n', { plain = true })
    if to_buffer then
      vim.cmd('enew')
      local buf = vim.api.nvim_get_current_buf()
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
      vim.bo[buf].filetype = 'markdown'
      vim.bo[buf].modified = false
      return done(buf)
    end
    local target
    local exists = function(t)
      caboose._notify(t .. ' exists: not overwritten (give another path, or :CabooseExport! for a buffer)', vim.log.levels.ERROR)
      return done(nil)
    end
    if path and path ~= '' then
      target = require('caboose.context').expand_path(path)
      local why = H.refusal(path, target)
      if why then
        caboose._notify(target .. ' ' .. why .. ': not exported', vim.log.levels.ERROR)
        return done(nil)
      end
      if vim.uv.fs_lstat(target) then
        return exists(target)
      end
    else
      target = H.free_name(M.file_name(res.title))
    end
    vim.fn.mkdir(vim.fn.fnamemodify(target, ':h'), 'p')
    -- Checked again once the folders exist (a link among them made meanwhile).
    local why = path and path ~= '' and H.refusal(path, target) or nil
    local werr = why and (target .. ' ' .. why) or H.write_new(target, table.concat(lines, '\n') .. '\n')
    if werr == 'exists' then
      return exists(target)
    end
    if werr then
      caboose._notify('could not write ' .. target .. ': ' .. tostring(werr), vim.log.levels.ERROR)
      return done(nil)
    end
    caboose._notify(string.format('chat exported to %s (%d lines)', vim.fn.fnamemodify(target, ':~:.'), #lines))
    done(target)
  end)
end

return M
