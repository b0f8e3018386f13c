--- :checkhealth caboose
local M = {}
local H = {}

H.size = function(n)
  n = tonumber(n) or 0
  if n >= 1024 then
    return string.format('%.1f KB', n / 1024)
  end
  return string.format('%d bytes', n)
end

--- Where the agent's commands run, and the probe's attacks (:help caboose-sandbox).
H.report_sandbox = function(sb)
  local h = vim.health
  h.start('caboose: sandbox')
  if type(sb) ~= 'table' then
    h.warn('the host did not report the sandbox')
    return
  end
  if sb.mode == 'off' then
    h.warn("sandbox.mode = 'off': commands run with your full rights (chug mode runs them without asking)", { "remove sandbox.mode = 'off' to run them in the sandbox" })
    return
  end
  if not sb.available then
    h.error('no sandbox available: ' .. tostring(sb.reason or sb.error), {
      tostring(sb.fix or ''),
      'until then every command asks for approval, in every mode',
    })
    return
  end
  h.ok(string.format('%s (%s): %s', tostring(sb.kind), tostring(sb.path), tostring(sb.summary)))
  for _, p in ipairs(type(sb.probes) == 'table' and sb.probes or {}) do
    local line = string.format('probe: %s: %s (%s)', tostring(p.attack), p.blocked and 'blocked' or 'NOT blocked', tostring(p.detail))
    if p.blocked then
      h.ok(line)
    elseif tostring(p.detail):find('allowed by', 1, true) then
      h.info(line)
    else
      h.error(line, { 'the sandbox does not hold here: report it, and set mode to create meanwhile' })
    end
  end
  if sb.error then
    h.warn('the probe did not finish: ' .. tostring(sb.error))
  end
end

--- The project rules a new conversation in the current directory would read (the host looked them up).
H.report_rules = function(r)
  local h = vim.health
  h.start('caboose: project rules')
  if type(r) ~= 'table' then
    h.warn('the host did not report project rules')
    return
  end
  if not r.enabled then
    h.info('project rules are off (rules = false in setup())')
    return
  end
  if r.error then
    h.error('project rules could not be read: ' .. tostring(r.error))
    return
  end
  local root = r.root ~= vim.NIL and r.root or nil
  local where = root and string.format('from %s up to the repository root %s', r.cwd, root) or string.format('in %s (not in a repository: no parent folder is searched)', r.cwd)
  h.info(string.format('looked for %s %s', table.concat(r.patterns or {}, ', '), where))
  local files = r.files or {}
  for _, f in ipairs(files) do
    if f.truncated then
      h.warn(string.format('%s: %s, truncated to %s (%s)', f.rel, H.size(f.size), H.size(f.bytes), f.truncated), { 'the rest is left out of the prompt; raise rules.' .. f.truncated .. ' or shorten the file' })
    else
      h.ok(string.format('%s: %s', f.rel, H.size(f.size)))
    end
  end
  for _, s in ipairs(r.skipped or {}) do
    h.warn(string.format('%s: skipped (%s)', s.rel, s.reason))
  end
  if #files == 0 then
    h.info('no project rules file found')
  else
    h.info(string.format('%d file%s (%s of at most %s) go into the system prompt of a new conversation, nearest first; the nearest wins on conflict', #files, #files == 1 and '' or 's', H.size(H.sum(files)), H.size(r.max_total_bytes)))
  end
end

H.sum = function(files)
  local n = 0
  for _, f in ipairs(files) do
    n = n + (f.bytes or 0)
  end
  return n
end

function M.check()
  H.main()
  H.report_prompts()
end

--- The prompt library: how many prompts from where, and the files that cannot be used.
H.report_prompts = function()
  local h = vim.health
  local ok, all = pcall(function()
    return require('caboose.prompts').all()
  end)
  if not ok then
    return
  end
  h.start('caboose: prompt library')
  local count, broken = {}, 0
  for _, e in ipairs(all) do
    count[e.source] = (count[e.source] or 0) + 1
    if e.error then
      broken = broken + 1
      h.warn(string.format('/%s (%s): %s', e.name, require('caboose.prompts').source_text(e), e.error), { 'fix the file; :help caboose-prompts' })
    end
  end
  h.info(string.format('%d project, %d user, %d setup(), %d built-in (:CaboosePrompts lists them)', count.project or 0, count.user or 0, count.setup or 0, count.builtin or 0))
  if broken == 0 then
    h.ok('every prompt can be used')
  end
end

H.main = function()
  local h = vim.health
  h.start('caboose: editor and runtime')
  local v = vim.version()
  local vs = string.format('%d.%d.%d', v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    h.ok('Neovim ' .. vs)
  else
    h.error('Neovim ' .. vs .. ' is too old', { 'caboose needs Neovim 0.10 or newer' })
  end

  local ok_cfg, cfg = pcall(require('caboose').config)
  if not ok_cfg then
    h.error('invalid configuration: ' .. tostring(cfg))
    return
  end
  h.ok('configuration is valid')

  local node = cfg.host.node
  if vim.fn.executable(node) ~= 1 then
    h.error('node not found: ' .. node, { 'install Node.js 20+ or set host.node in setup()' })
    return
  end
  local out = vim.trim(vim.fn.system({ node, '--version' }))
  local major = tonumber(out:match('^v(%d+)'))
  if major and major >= 20 then
    h.ok('Node ' .. out)
  else
    h.error('Node ' .. out .. ' is too old', { 'caboose needs Node.js 20 or newer' })
  end

  -- A half-built install (a plugin manager's build timeout cut `npm ci` short): say what is missing and
  -- the one command that finishes it, and do not try to start a host that cannot run.
  h.start('caboose: install')
  local build = require('caboose.build')
  local bs = build.status()
  if bs.complete then
    h.ok('installed: dependencies, native better-sqlite3 module and compiled host (dist/) in ' .. bs.root)
  else
    local advice = { 'finish it with ' .. build.finish_command .. ' (or in a shell: sh ' .. bs.root .. '/scripts/build)' }
    if bs.running then
      table.insert(advice, 1, string.format('a build is running (pid %d); log: %s', bs.running, bs.log))
    elseif bs.failed then
      table.insert(advice, 1, 'the last build failed; log: ' .. bs.log)
    end
    h.error('half-built install: ' .. table.concat(bs.missing, '; '), advice)
    return
  end

  h.start('caboose: host')
  local rpc = require('caboose.rpc')
  local started, err = require('caboose')._start_host()
  if not started then
    h.error('host does not start: ' .. tostring(err), { 'run the build step: npm ci (in the plugin folder)', 'see the log: ' .. cfg.log.file })
    return
  end
  local t0 = vim.uv.hrtime()
  local okp, ping = pcall(rpc.request, rpc.methods.ping, {})
  if not okp then
    h.error('host does not answer: ' .. tostring(ping))
    return
  end
  h.ok(string.format('host %s answers (pid %s, %s, %.0f ms round trip)', ping.version, ping.pid, ping.node, (vim.uv.hrtime() - t0) / 1e6))

  local okh, report = pcall(rpc.request, rpc.methods.health, { cwd = vim.fn.getcwd() })
  if not okh then
    h.error('health check failed: ' .. tostring(report))
    return
  end
  if report.sqlite and report.sqlite.ok then
    h.ok('better-sqlite3 loads (SQLite ' .. tostring(report.sqlite.version) .. ')')
  else
    h.error('better-sqlite3 does not load: ' .. tostring(report.sqlite and report.sqlite.error), { 'rebuild it: npm rebuild better-sqlite3' })
  end

  h.start('caboose: audit log')
  local audit = report.audit or {}
  if audit.error then
    h.error('the audit log could not be verified: ' .. tostring(audit.error), { 'database: ' .. tostring(audit.db) })
  elseif audit.missing then
    h.ok('no audit log yet (' .. tostring(audit.db) .. ')')
  elseif audit.ok then
    h.ok(string.format('audit log hash chain verifies (%d rows, %s)', audit.rows or 0, tostring(audit.db)))
  else
    local what = audit.first_bad_row_id
        and string.format('audit log hash chain is broken at row %s (the first bad row; %d rows checked)', tostring(audit.first_bad_row_id), audit.rows or 0)
      or string.format('audit log does not verify (%d rows)', audit.rows or 0)
    h.error(what, {
      audit.problem or 'that row, or one before it, was edited, inserted or removed outside caboose',
      'database: ' .. tostring(audit.db),
    })
  end

  H.report_rules(report.rules)
  H.report_sandbox(report.sandbox)
  h.start('caboose: MCP servers')
  if type(report.mcp) ~= 'table' or #report.mcp == 0 then
    h.info('no MCP server configured: see :help caboose-mcp')
  else
    for _, s in ipairs(report.mcp) do
      local what = string.format('%s (%s)', s.name, tostring(s.target))
      if s.state == 'running' then
        h.ok(string.format('%s: running, %d tool%s', what, s.tools or 0, s.tools == 1 and '' or 's'))
      elseif s.state == 'failed' then
        h.error(string.format('%s: %s', what, tostring(s.reason or 'failed')), {
          ':CabooseMcp restart ' .. s.name .. ' tries again',
          "the server's stderr is in the log: " .. cfg.log.file,
        })
      elseif s.state == 'disabled' then
        h.info(what .. ': disabled')
      else
        h.warn(string.format('%s: %s', what, s.state == 'starting' and 'still starting' or 'not started'))
      end
    end
  end

  h.start('caboose: ACP agents')
  local agents = (cfg.acp or {}).agents or {}
  local names = vim.tbl_keys(agents)
  table.sort(names)
  if #names == 0 then
    h.info('no ACP agent configured: see :help caboose-acp')
  end
  for _, name in ipairs(names) do
    local cmd = agents[name].command
    local program = type(cmd) == 'table' and cmd[1] or cmd
    local line = type(cmd) == 'table' and table.concat(cmd, ' ') or tostring(cmd)
    if vim.fn.executable(vim.fs.normalize(program)) == 1 then
      h.ok(string.format('%s: %s (:CabooseAgent %s)', name, line, name))
    else
      h.error(string.format('%s: command not found: %s', name, program), { 'install the agent, or fix acp.agents.' .. name .. '.command' })
    end
  end

  h.start('caboose: model endpoint')
  local ep = report.endpoint or {}
  h.info('endpoint: ' .. tostring(ep.base_url) .. '  model: ' .. tostring(ep.model))
  if report.key_present then
    h.ok('API key present')
  else
    h.warn('no API key', { 'set provider.api_key / provider.api_key_cmd, or OPENAI_API_KEY (local servers may not need one)' })
  end
  if ep.reachable and ep.status and ep.status < 400 then
    h.ok(string.format('endpoint reachable (GET /models → %d%s)', ep.status, ep.models and (', ' .. ep.models .. (ep.models == 1 and ' model' or ' models')) or ''))
  elseif ep.reachable then
    h.warn(string.format('endpoint answered GET /models with HTTP %s', tostring(ep.status)), { 'check the key and base_url' })
  else
    h.error('endpoint not reachable: ' .. tostring(ep.error), { 'check provider.base_url / OPENAI_BASE_URL' })
  end
  H.providers(h, report.providers)
end

--- Every configured provider (`providers = { name = {…} }`): reachable, key accepted, model listed.
H.providers = function(h, providers)
  if type(providers) ~= 'table' or #providers <= 1 then
    return
  end
  h.start('caboose: providers')
  for _, p in ipairs(providers) do
    local what = string.format('%s (%s, model %s)', tostring(p.name), tostring(p.base_url), tostring(p.model))
    if not p.reachable then
      h.error(what .. ': not reachable: ' .. tostring(p.error), { 'check providers.' .. tostring(p.name) .. '.base_url' })
    elseif p.status == 401 or p.status == 403 then
      h.error(string.format('%s: the key was refused (HTTP %d)', what, p.status), { 'check providers.' .. tostring(p.name) .. '.api_key / api_key_cmd / api_key_env' })
    elseif p.status and p.status >= 400 then
      h.warn(string.format('%s: GET /models answered HTTP %d', what, p.status))
    elseif p.model_listed == false then
      h.warn(what .. ': reachable, but its model list does not name the model', { ':CabooseModel lists what it offers' })
    else
      h.ok(string.format('%s: reachable%s%s', what, p.key_present and ', key present' or ', no key', p.models and string.format(', %d models', p.models) or ''))
    end
  end
  h.info('whether each streams tool calls: :CabooseModel check (one tiny request per provider)')
end

return M
