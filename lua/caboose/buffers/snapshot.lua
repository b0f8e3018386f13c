--- What a buffer would write: its format (line ends, final EOL, BOM, encoding) and the bytes `:write`
--- would put on disk, as the snapshots the host compares with the file (sha256).
local M = {}
local H = {}

--- Loaded normal buffer whose file is `path` (absolute, realpath-resolved), or nil.
--- With `any`, unloaded buffers count too (for wipe and rename).
M.find = function(path, any)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if (any or vim.api.nvim_buf_is_loaded(b)) and vim.bo[b].buftype == '' then
      local name = vim.api.nvim_buf_get_name(b)
      if name == path or (name ~= '' and vim.uv.fs_realpath(name) == path) then
        return b
      end
    end
  end
  return nil
end

H.encoding = function(fenc)
  fenc = (fenc or ''):lower()
  if fenc == '' or fenc == 'utf8' then
    return 'utf-8'
  end
  return fenc
end

H.BOMS = {
  ['utf-8'] = '\239\187\191',
  ['ucs-2'] = '\254\255',
  ['utf-16'] = '\254\255',
  ['ucs-2le'] = '\255\254',
  ['utf-16le'] = '\255\254',
  ['ucs-4'] = '\0\0\254\255',
  ['utf-32'] = '\0\0\254\255',
  ['ucs-4le'] = '\255\254\0\0',
  ['utf-32le'] = '\255\254\0\0',
}

M.format = function(b)
  local bo = vim.bo[b]
  local ff = bo.fileformat
  local fenc = H.encoding(bo.fileencoding)
  return {
    eol = ff == 'dos' and '\r\n' or ff == 'mac' and '\r' or '\n',
    final_eol = bo.eol or (bo.fixeol and not bo.binary),
    bom = bo.bomb and not bo.binary and H.BOMS[fenc] ~= nil,
    fileencoding = fenc,
  }
end

--- A buffer with no lines at all (what `ggdG` leaves) writes 0 bytes; one empty line writes one EOL.
M.is_empty = function(b, lines)
  if #lines ~= 1 or lines[1] ~= '' then
    return false
  end
  return vim.api.nvim_buf_call(b, function()
    return vim.fn.line2byte(vim.fn.line('$') + 1) == -1
  end)
end

--- The bytes `:write` would put on disk for buffer `b`.
--- The bytes `:write` would produce; for a non-UTF-8 'fileencoding' also the same text in UTF-8 (what
--- the tools read and edit; no BOM).
M.bytes = function(b, fmt)
  local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
  if M.is_empty(b, lines) then
    return ''
  end
  local text = table.concat(lines, fmt.eol)
  if fmt.final_eol then
    text = text .. fmt.eol
  end
  local utf8
  if fmt.fileencoding ~= 'utf-8' and not vim.bo[b].binary then
    utf8 = text
    text = vim.iconv(text, 'utf-8', fmt.fileencoding) or text
  end
  if fmt.bom then
    text = H.BOMS[fmt.fileencoding] .. text
  end
  return text, utf8
end

M.snapshot = function(b, with_bytes)
  local fmt = M.format(b)
  local modified = vim.bo[b].modified
  local snap = {
    bufnr = b,
    modified = modified,
    changedtick = vim.api.nvim_buf_get_changedtick(b),
    format = fmt,
  }
  if with_bytes == 'always' or (with_bytes == 'modified' and modified) then
    local bytes, utf8 = M.bytes(b, fmt)
    snap.bytes64 = vim.base64.encode(bytes)
    if utf8 then
      snap.utf8_64 = vim.base64.encode(utf8)
    end
  end
  return snap
end

return M
