--- The configuration's defaults: one annotated table (the caboose.Config classes document every key).
--- caboose.config merges the user's options over a copy and validates them (caboose.config.checks).

---@class caboose.Config
---@field provider caboose.ProviderConfig|string Model endpoint (falls back to OPENAI_BASE_URL, OPENAI_API_KEY, CABOOSE_MODEL), or the name of the default one among `providers`.
---@field providers table<string, caboose.NamedProvider>|nil Several named providers; `:CabooseModel` switches between their models.
---@field mode 'plan'|'create'|'auto-edit'|'chug' Permission mode at start.
---@field step_limit integer Model calls per message before the agent stops.
---@field max_queue integer Messages queued while the agent is busy.
---@field unsaved_buffers 'edit_buffer'|'refuse' What the agent does with buffers holding unsaved changes.
---@field allow_readonly_writes boolean Let the agent change read-only files (no owner write bit, or not writable by you).
---@field hard_links 'refuse'|'in_place' A file with several hard links: refuse to change it, or write it in place (keeping the links).
---@field deny_globs string[] Paths the agent may never touch.
---@field secret_globs string[] Files that usually hold secrets: reading or searching one asks first, in every mode.
---@field trash_retention_days number How long deleted files stay restorable.
---@field bash_timeout_ms integer Default timeout of the bash tool.
---@field fetch_allow_hosts string[] Hosts fetch may reach although they are loopback, link-local or private.
---@field web_search table|nil `{ searxng_url = 'http://…' }` enables web_search.
---@field system_prompt string|nil Replaces the built-in system prompt (project rules are still appended).
---@field rules caboose.RulesOptions|false Project instruction files added to the system prompt; false: none.
---@field diagnostics caboose.DiagnosticsOptions What the agent's edits report of your language servers' diagnostics.
---@field data_dir string SQLite database and trash (never inside the project).
---@field host caboose.HostOptions How the Node host is started.
---@field chat caboose.ChatOptions Chat window.
---@field approval caboose.ApprovalOptions Approval float.
---@field log caboose.LogOptions Host log file.
---@field mcp caboose.McpOptions MCP servers whose tools the agent may call.
---@field acp caboose.AcpOptions External agents (Claude Code, Codex, Gemini CLI, opencode) :CabooseAgent can run.
---@field prompts table<string, { description: string|nil, text: string, mode: string|nil, model: string|nil }> The prompt library's setup() prompts, run as `/name` (:help caboose-prompts).

---@class caboose.AcpOptions
---@field agents table<string, { command: string|string[], env: table<string,string>|nil, start_timeout_ms: integer|nil }>
---@field sandbox caboose.SandboxOptions Where the agent's commands run (:help caboose-sandbox).

---@class caboose.ProviderConfig
---@field base_url string|nil
---@field api_key string|nil
---@field api_key_cmd string|string[]|nil Command printing the key (run by the host, never logged).
---@field model string|nil
---@field max_tokens integer|nil
---@field context_window integer|nil
---@field headers table<string,string>|nil Extra HTTP headers.
---@field timeout_ms integer|nil
---@field max_retries integer|nil Retries on 429/5xx/network errors (default 3).
---@field retry_base_delay_ms integer|nil First backoff delay (default 500 ms, doubled each retry).
---@field media ('image'|'audio')[]|nil What the model accepts besides text: images/audio tools return reach it.
---@field vision boolean|nil false: the model cannot read images; images you attach are not sent (the text is).

---@class caboose.NamedProvider: caboose.ProviderConfig
---@field api_key_env string|nil Name of the environment variable holding the key.
---@field models string[]|table<string, caboose.ModelOptions>|nil Models offered in the picker (besides the server's /models), or names → their options.

---@class caboose.ModelOptions
---@field context_window integer|nil
---@field max_tokens integer|nil
---@field reasoning_effort string|nil Sent only to this model ('low', 'medium', 'high', …).
---@field temperature number|nil Sent only to this model.

---@class caboose.RulesOptions
---@field files string[] Names or globs looked up in the working directory and each parent up to the repository root.
---@field max_bytes_per_file integer Bytes read from one file at most (the rest is left out, with a notice).
---@field max_total_bytes integer Bytes read from all files at most; files past it are skipped (and listed).

---@class caboose.DiagnosticsOptions
---@field enabled boolean After an agent edit to a loaded buffer with a language server attached, wait for its report and add the diagnostics the edit introduced or resolved to the tool result.
---@field wait_ms integer Longest wait for the language servers after an edit (ms).
---@field settle_ms integer Quiet time after a server's report before it counts as its answer (servers report in steps).

---@class caboose.HostOptions
---@field node string Node executable (20 or newer).
---@field transport 'job'|'remote' 'job': started with jobstart (default); 'remote': the classic remote-plugin host.
---@field prestart boolean Start the host while a :Caboose… command is being typed or the message area is entered.

---@class caboose.ChatOptions
---@field position 'right'|'left'|'bottom'|'top'
---@field size number Share of the screen (0 < size <= 1: of the columns for left/right, of the lines for top/bottom) or, above 1, columns/lines.
---@field min_size integer|nil Smallest size (default 40 columns, or 8 lines for top/bottom).
---@field max_size integer|nil Largest size (default 120 columns, or 30 lines for top/bottom).
---@field input_height integer Lines of the message area under the transcript.
---@field show_thinking boolean Show the model's reasoning as a folded "thinking" block (za opens it).

---@class caboose.ApprovalOptions
---@field grace_ms integer When a new request replaces the one in the focused float, its decision keys are ignored this long (ms), so a double press does not answer it unseen. 0 disables.

---@class caboose.McpOptions
---@field servers table<string, caboose.McpServer> By name (letters, digits, `-`, single `_`; the tools' prefix).
---@field start_timeout_ms integer How long a server may take to start before it is reported as failed.

---@class caboose.McpServer
---@field command string|nil A stdio server: the program (with `args`, `env`, `cwd`).
---@field args string[]|nil
---@field env table<string,string>|nil Added to a small safe environment (PATH, HOME, USER, SHELL, TERM, LOGNAME).
---@field cwd string|nil Default: Neovim's current directory when the host started.
---@field url string|nil A streamable HTTP server (with `headers`).
---@field headers table<string,string>|nil
---@field allow boolean|string[]|nil true: its tools run without asking; a list: those tools. Default: they ask.
---@field disabled boolean|nil Listed, never started.
---@field timeout_ms integer|nil Per tool call (default 60000).

---@class caboose.LogOptions
---@field level 'debug'|'info'|'warn'|'error'|'off'
---@field file string

---@class caboose.SandboxOptions
---@field mode? 'workspace-write'|'read-only'|'off' nil: workspace-write where a sandbox is available.
---@field network { allow: boolean|string[] } Hosts commands may reach (true: all).
---@field deny_read string[] More paths commands may not read (~ is your home folder).
---@field writable string[] More folders commands may write (e.g. '/tmp').

---@type caboose.Config
local defaults = {
  provider = {},
  mode = 'create',
  step_limit = 50,
  max_queue = 3,
  unsaved_buffers = 'edit_buffer',
  allow_readonly_writes = false,
  hard_links = 'refuse',
  deny_globs = { '.git/**' },
  -- Files that usually hold secrets: reading or searching one asks the user first, in every mode.
  secret_globs = { '.env*', '*.pem', '*.key', 'id_*', '.npmrc', '.netrc', '.pypirc', '.pgpass', '.git-credentials', '*.p12', '*.pfx' },
  trash_retention_days = 30,
  bash_timeout_ms = 120000,
  fetch_allow_hosts = {},
  web_search = nil,
  system_prompt = nil,
  rules = {
    files = { 'AGENTS.md', 'CLAUDE.md', '.github/copilot-instructions.md', '.cursor/rules/*.mdc' },
    max_bytes_per_file = 32768,
    max_total_bytes = 65536,
  },
  diagnostics = { enabled = true, wait_ms = 2000, settle_ms = 300 },
  data_dir = vim.fn.stdpath('data') .. '/caboose',
  host = { node = 'node', transport = 'job', prestart = true },
  chat = {
    position = 'right', size = 0.4, min_size = nil, max_size = nil, input_height = 5, show_thinking = true,
    -- Transcript keys of issue 22 ("" disables one): regenerate the last reply, edit-and-resend the message under the cursor,
    -- go to the pending approval (gA: `ga`, which shows the character's code, stays Neovim's).
    keys = { regenerate = 'gR', edit = 'gI', approval = 'gA' },
  },
  approval = { grace_ms = 400, style = 'inline' },
  edit = { keymap = nil }, -- e.g. '<leader>ce' in Visual mode for <Plug>(CabooseEdit)
  -- User CabooseProgress events; shown in fidget.nvim when it is installed (false: not).
  progress = { fidget = true },
  review = {
    -- Set in the review's own read-only scratch buffer only, never `nowait` ("" or false disables one). Not `gr`:
    -- it is the start of Neovim 0.11+'s LSP keys (grn, gra, grr, gri, grt); gR (Virtual Replace) cannot run in
    -- the read-only review buffer anyway. A key that buffer maps already (ftplugin, FileType autocmd) stays theirs.
    keys = { next_hunk = ']c', prev_hunk = '[c', accept = 'ga', reject = 'gX', accept_all = 'gA', reject_all = 'gR', quit = 'q' },
  },
  log = { level = 'info', file = vim.fn.stdpath('log') .. '/caboose.log' },
  mcp = { servers = {}, start_timeout_ms = 10000 },
  acp = { agents = {} },
  sandbox = { mode = nil, network = { allow = {} }, deny_read = {}, writable = {} },
  prompts = {},
}

return defaults
