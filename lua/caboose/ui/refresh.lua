--- After a shell command ran, buffers without unsaved changes re-read files it changed. Buffers with
--- unsaved changes are left alone (no W12 prompt); the agent's own file tools keep those exact.
local M = {}

function M.clean_buffers()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == '' and not vim.bo[b].modified and vim.api.nvim_buf_get_name(b) ~= '' then
      local views = {}
      for _, w in ipairs(vim.fn.win_findbuf(b)) do
        views[w] = vim.api.nvim_win_call(w, vim.fn.winsaveview)
      end
      vim.api.nvim_buf_call(b, function()
        vim.cmd('setlocal autoread')
        pcall(vim.cmd, 'silent checktime ' .. b)
        vim.cmd('setlocal autoread<')
      end)
      for w, view in pairs(views) do
        if vim.api.nvim_win_is_valid(w) and vim.api.nvim_win_get_buf(w) == b then
          vim.api.nvim_win_call(w, function()
            vim.fn.winrestview(view)
          end)
        end
      end
    end
  end
end

return M
