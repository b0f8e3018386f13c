/**
 * host.init params for the validation tests: a valid one (as setup() sends it) and hostile ones every
 * validator of host.init must refuse (test/unit/zod-jitless.test.ts: the host's zod schemas;
 * test/unit/first-validate.test.ts: the first-request bundle's generated validators).
 */
export const good = {
  cwd: '/tmp/project',
  data_dir: '/tmp/data',
  log_level: 'info',
  nvim_version: '0.12.0',
  config: {
    rules: { files: ['AGENTS.md', '.cursor/rules/*.mdc'], max_bytes_per_file: 32768, max_total_bytes: 65536 },
    trash_retention_days: 30,
    bash_timeout_ms: 120000,
    step_limit: 50,
    mode: 'create',
    deny_globs: ['.git/**'],
    mcp: { servers: {}, start_timeout_ms: 10000 },
    acp: { agents: {} },
    diagnostics: { settle_ms: 300, enabled: true, wait_ms: 2000 },
    sandbox: { deny_read: [], writable: [], network: { allow: [] } },
    provider: { api_key: 'x', model: 'm', base_url: 'http://127.0.0.1:1/v1' },
  },
};

export const HOSTILE_INIT: Array<[string, unknown]> = [
  ['not an object', 'host.init'],
  ['array', [good]],
  ['empty cwd', { ...good, cwd: '' }],
  ['data_dir a number', { ...good, data_dir: 1 }],
  ['unknown log level', { ...good, log_level: 'trace' }],
  ['unknown mode', { ...good, config: { ...good.config, mode: 'yolo' } }],
  ['negative step limit', { ...good, config: { ...good.config, step_limit: -1 } }],
  ['fractional timeout', { ...good, config: { ...good.config, bash_timeout_ms: 1.5 } }],
  ['rules pattern leaving the folder', { ...good, config: { ...good.config, rules: { files: ['../secret'] } } }],
  ['rules pattern absolute', { ...good, config: { ...good.config, rules: { files: ['/etc/passwd'] } } }],
  ['provider name with a slash', { ...good, config: { ...good.config, providers: { '../x': {} } } }],
  ['provider base_url a number', { ...good, config: { ...good.config, provider: { base_url: 1 } } }],
  ['api_key_cmd an object', { ...good, config: { ...good.config, provider: { api_key_cmd: { rm: '-rf' } } } }],
  ['temperature out of range', { ...good, config: { ...good.config, providers: { a: { models: { m: { temperature: 9 } } } } } }],
  ['model option an object', { ...good, config: { ...good.config, providers: { a: { models: { m: { x: { y: 1 } } } } } } }],
  ['headers with a number', { ...good, config: { ...good.config, provider: { headers: { a: 1 } } } }],
  ['deny_globs a string', { ...good, config: { ...good.config, deny_globs: '.git/**' } }],
  ['diagnostics negative wait', { ...good, config: { ...good.config, diagnostics: { wait_ms: -5 } } }],
];
