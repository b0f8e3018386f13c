--- Small text formats shared by the pickers.
local M = {}

--- An ISO time (UTC, as the host stores it) in the local time zone: 'YYYY-MM-DD HH:MM'.
function M.local_time(iso)
  local y, mo, d, h, mi, s = tostring(iso or ''):match('^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)')
  if not y then
    return tostring(iso or '')
  end
  local utc = os.time({ year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h), min = tonumber(mi), sec = tonumber(s) })
  local now = os.time()
  local offset = os.difftime(now, os.time(os.date('!*t', now)))
  return os.date('%Y-%m-%d %H:%M', utc + offset)
end

return M
