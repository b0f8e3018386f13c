--- Highlight groups, linked to standard ones by default and re-applied after a colorscheme change.
local M = {}

M.groups = {
  CabooseApprovalBorder = 'FloatBorder',
  CabooseApprovalTitle = 'FloatTitle',
  CabooseDiffAdd = 'DiffAdd',
  CabooseDiffDelete = 'DiffDelete',
  CabooseDiffHunk = 'DiffChange',
  CabooseError = 'DiagnosticError',
  CabooseNotice = 'Comment',
  CabooseRules = 'Comment',
  CabooseToolCall = 'Special',
  CabooseMode = 'Visual',
  CabooseTitle = 'Title',
  CabooseInputTitle = 'Title',
  CabooseQueued = 'DiagnosticHint',
  CabooseWarn = 'DiagnosticWarn',
  CabooseToolRunning = 'DiagnosticInfo',
  CabooseToolOk = 'DiagnosticOk',
  CabooseToolError = 'DiagnosticError',
  CabooseToolRejected = 'DiagnosticWarn',
  CabooseReviewAdd = 'DiffAdd',
  CabooseReviewDelete = 'DiffDelete',
  CabooseReviewText = 'DiffText',
  CabooseReviewHunk = 'DiagnosticInfo',
  CabooseReviewRejected = 'Comment',
  CabooseReviewKept = 'Normal',
  CabooseEditProgress = 'DiagnosticInfo',
}

function M.apply()
  for name, link in pairs(M.groups) do
    vim.api.nvim_set_hl(0, name, { link = link, default = true })
  end
end

local done = false
function M.setup()
  M.apply()
  if done then
    return
  end
  done = true
  vim.api.nvim_create_autocmd('ColorScheme', {
    group = vim.api.nvim_create_augroup('CabooseHighlights', { clear = true }),
    callback = M.apply,
  })
end

return M
