--- :CabooseExport [path] / the chat's /export: the current chat as Markdown in a file (default: a name
--- from its title, in the working directory), or with ! in a new buffer. An existing file is never
--- overwritten (nor a link: a dangling one would write wherever it points).
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
    if path and path ~= '' then
      target = require('caboose.context').expand_path(path)
      if vim.uv.fs_lstat(target) then
        caboose._notify(target .. ' exists: not overwritten (give another path, or :CabooseExport! for a buffer)', vim.log.levels.ERROR)
        return done(nil)
      end
    else
      target = H.free_name(M.file_name(res.title))
    end
    vim.fn.mkdir(vim.fn.fnamemodify(target, ':h'), 'p')
    local ok, werr = pcall(vim.fn.writefile, lines, target)
    if not ok or werr ~= 0 then
      caboose._notify('could not write ' .. target .. (ok and '' or (': ' .. tostring(werr))), vim.log.levels.ERROR)
      return done(nil)
    end
    caboose._notify(string.format('chat exported to %s (%d lines)', vim.fn.fnamemodify(target, ':~:.'), #lines))
    done(target)
  end)
end

return M
