--- :CabooseRestore — pick a file from the agent's trash and put it back (never overwrites).
local M = {}

function M.pick()
  local caboose = require('caboose')
  local rpc = require('caboose.rpc')
  caboose._request(rpc.methods.trash_list, {}, function(err, entries)
    if err then
      return
    end
    if type(entries) ~= 'table' or #entries == 0 then
      caboose._notify('the trash is empty')
      return
    end
    vim.ui.select(entries, {
      prompt = 'Restore which file?',
      format_item = function(e)
        return string.format('%s  (deleted %s)', e.path or e.originalPath or '?', require('caboose.ui.format').local_time(e.deletedAt or e.time))
      end,
    }, function(choice)
      if not choice then
        return
      end
      caboose._request(rpc.methods.trash_restore, { trash_id = choice.id or choice.trashId }, function(rerr, res)
        if rerr then
          return
        end
        if type(res) == 'table' and res.ok then
          caboose._notify('restored ' .. tostring(res.data and res.data.path or choice.path))
        elseif type(res) == 'table' and res.error then
          caboose._notify(res.error.message, vim.log.levels.ERROR)
        end
      end)
    end)
  end)
end

return M
