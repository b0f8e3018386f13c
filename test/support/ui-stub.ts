/**
 * Lua for a test Neovim: vim.ui.select and vim.ui.input answered from queues (`_G.ui.pick` by substring of
 * the shown item, `_G.ui.answer`), what was shown recorded in `_G.ui.selects` and `_G.ui.inputs`.
 */
export const UI_STUB = `
_G.ui = { selects = {}, inputs = {}, pick = {}, answer = {} }
vim.ui.select = function(items, opts, cb)
  local shown = {}
  for i, it in ipairs(items) do shown[i] = opts.format_item and opts.format_item(it) or tostring(it) end
  table.insert(_G.ui.selects, { prompt = opts.prompt, items = shown })
  local want = table.remove(_G.ui.pick, 1)
  if want == nil then return cb(nil) end
  for i, s in ipairs(shown) do
    if s:find(want, 1, true) then return cb(items[i], i) end
  end
  cb(nil)
end
vim.ui.input = function(opts, cb)
  table.insert(_G.ui.inputs, { prompt = opts.prompt, default = opts.default })
  cb(table.remove(_G.ui.answer, 1))
end
`;
