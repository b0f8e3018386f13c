/**
 * Secrets: a session through Neovim and the fake model with a canary API key — given in setup(), in
 * the environment, or by api_key_cmd — with file tools, a trashed file, a bash command and a 401 whose
 * body echoes the key, at log level debug. Afterwards the key (raw, base64 or hex) must appear nowhere
 * in the data folder (SQLite, trash), the log file or Neovim's state (ShaDa and the rest of the
 * isolated XDG folders). Run after `npm run build`: `node --import tsx stress/secrets.ts`.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI } from '../test/support/fake-openai';
import { firstToolResult, lastToolResults } from '../test/support/chat-requests';
import { Checks, mainIfDirect, scaled, tempDir, type SuiteReport } from './lib';
import { chatText, nvimVersion, say, startSession } from './nvim-session';

type KeySource = 'setup()' | 'environment' | 'api_key_cmd';

function filesUnder(dir: string, skip: (p: string) => boolean = () => false): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (skip(p)) continue;
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/** Files among `files` whose bytes contain the key (as text, base64 or hex). */
function holders(files: string[], key: string): { hits: string[]; bytes: number } {
  const needles = [Buffer.from(key), Buffer.from(Buffer.from(key).toString('base64').slice(0, 24)), Buffer.from(Buffer.from(key).toString('hex'))];
  const hits: string[] = [];
  let bytes = 0;
  for (const f of files) {
    const b = fs.readFileSync(f);
    bytes += b.length;
    if (needles.some((n) => b.includes(n))) hits.push(f);
  }
  return { hits, bytes };
}

async function session(source: KeySource, checks: Checks, figures: string[]): Promise<void> {
  const key = `sk-canary-${randomBytes(16).toString('hex')}`;
  const tmp = tempDir('secrets');
  const home = path.join(tmp.dir, 'home');
  const cwd = path.join(tmp.dir, 'ws');
  fs.mkdirSync(home);
  fs.mkdirSync(cwd);
  const keyFile = path.join(tmp.dir, 'key.txt');
  fs.writeFileSync(keyFile, `${key}\n`);
  const provider =
    source === 'setup()' ? `api_key = ${JSON.stringify(key)}` : source === 'api_key_cmd' ? `api_key_cmd = { 'cat', ${JSON.stringify(keyFile)} }` : '';
  const fake = await startFakeOpenAI();
  const t = await startSession(
    fake.url,
    // ShaDa on (the test harness starts Neovim with -i NONE), in the isolated state folder.
    `vim.o.shadafile = vim.fn.stdpath('state') .. '/shada/main.shada'
     require('caboose').setup({ mode = 'chug', log = { level = 'debug' }, provider = { max_retries = 0, ${provider} } })`,
    { home, cwd, env: { OPENAI_API_KEY: source === 'environment' ? key : '' } },
  );
  let closed = false;
  try {
    fake.script(
      { toolCalls: [{ name: 'create_file', arguments: { path: 'notes.txt', content: 'some notes\n' } }] },
      // The command's own environment and the host's (/proc/$PPID/environ: the key must not be there either).
      { toolCalls: [{ name: 'bash', arguments: { command: "env > env-dump.txt; tr '\\0' '\\n' < /proc/$PPID/environ >> env-dump.txt; echo dumped" } }] },
      { toolCalls: [{ name: 'read_file', arguments: { path: 'env-dump.txt' } }] },
      // Both deletes carry the sha256 of what was read (without it they fail as invalid arguments and
      // nothing reaches the trash: the trash check would pass vacuously, issue 18).
      (req) => {
        const dumpRead = firstToolResult(req);
        const dumpSha = typeof dumpRead.data?.sha256 === 'string' ? dumpRead.data.sha256 : '';
        return {
          toolCalls: [
            { name: 'delete_file', arguments: { path: 'env-dump.txt', expectedSha256: dumpSha } },
            { name: 'delete_file', arguments: { path: 'notes.txt', expectedSha256: createHash('sha256').update('some notes\n').digest('hex') } },
          ],
        };
      },
      { text: 'all done' },
      { status: 401, body: { error: { message: `Incorrect API key provided: ${key}. You can find your API key at https://example.invalid.` } } },
      { text: 'fine again' },
    );
    await say(t, 'please tidy up', 'all done', 30_000);
    await say(t, 'and again', /\*\*Error:\*\*/, 30_000);
    await say(t, 'once more', 'fine again', 30_000);
    const used = fake.chatRequests.every((r) => r.headers.authorization === `Bearer ${key}`);
    checks.record('the canary key was the one sent to the model (the test is not vacuous)', used ? null : `${source}: ${fake.chatRequests.map((r) => r.headers.authorization).join(', ')}`);
    const envSeen = fake.chatRequests.some((r) => JSON.stringify(r.body?.messages ?? []).includes(key));
    checks.record('commands the agent runs do not get the key in their environment', envSeen ? `${source}: the env dump the model read holds the key` : null);
    const dump = firstToolResult(fake.chatRequests[3]);
    if (!dump.ok) checks.record('commands the agent runs do not get the key in their environment', `${source}: reading the env dump failed: ${JSON.stringify(dump.error)}`);
    const chat = await chatText(t);
    if (!/authentication failed \(401\)/.test(chat)) checks.record('the canary key was the one sent to the model (the test is not vacuous)', `${source}: no 401 in the chat`);
    await t.cmd('wshada!');
    await t.close();
    closed = true;
    const dataDir = path.join(home, 'data', 'nvim', 'caboose');
    const logFile = path.join(home, 'state', 'nvim', 'caboose.log');
    const shada = path.join(home, 'state', 'nvim', 'shada', 'main.shada');
    const data = holders(filesUnder(dataDir), key);
    const log = holders(fs.existsSync(logFile) ? [logFile] : [], key);
    // Neovim's own state: everything in the isolated XDG folders except the user's config (init.lua holds
    // the key in the setup() variant by design), the log and the data folder checked above.
    const state = holders(filesUnder(home, (p) => p === path.join(home, 'init.lua') || p.startsWith(path.join(home, 'config')) || p === logFile || p.startsWith(dataDir)), key);
    checks.record('not in the data folder (SQLite + WAL, trash)', data.hits.length ? `${source}: ${data.hits.map((h) => path.relative(home, h)).join(', ')}` : null);
    checks.record('not in the log file (level debug)', log.hits.length ? `${source}: ${path.relative(home, logFile)}` : null);
    checks.record("not in Neovim's state (ShaDa, state/data/cache folders)", state.hits.length ? `${source}: ${state.hits.map((h) => path.relative(home, h)).join(', ')}` : null);
    checks.record('the ShaDa file was written (the check is not vacuous)', fs.existsSync(shada) ? null : `${source}: no ${shada}`);
    const trash = filesUnder(path.join(dataDir, 'trash')).length;
    // The precondition of the trash check: both deleted files really are in the trash.
    const deletes = [...lastToolResults(fake.chatRequests[4]).values()];
    const deleted = deletes.filter((d) => d.ok && typeof d.data?.trashId === 'string');
    checks.record(
      'the deleted files really went to the trash (the trash check is not vacuous)',
      deleted.length === 2 && trash >= 2 ? null : `${source}: ${deleted.length} of 2 deletes ok (${deletes.map((d) => (d.ok ? 'ok' : d.error?.kind)).join(', ')}), ${trash} files in the trash`,
    );
    figures.push(
      `key from ${source}: scanned ${filesUnder(dataDir).length} files in the data folder (${(data.bytes / 1024).toFixed(0)} KB, ${trash} in the trash), ` +
        `the log (${(log.bytes / 1024).toFixed(0)} KB) and ${filesUnder(home).length} files of Neovim's folders.`,
    );
  } catch (err) {
    checks.record('the session ran', `${source}: ${(err as Error).message.split('\n')[0]}`);
  } finally {
    if (!closed) await t.close();
    await fake.close();
    tmp.remove();
  }
}

export async function run(): Promise<SuiteReport> {
  const started = Date.now();
  const checks = new Checks();
  const figures: string[] = [];
  for (let r = 0; r < scaled(1); r++) for (const source of ['setup()', 'environment', 'api_key_cmd'] as KeySource[]) await session(source, checks, figures);
  checks.figures.push(`Neovim ${nvimVersion()}; a canary key sk-canary-<32 hex> per session; searched as text, base64 and hex. ${os.platform()}.`);
  checks.figures.push(...figures);
  return checks.report('secrets', 'Secrets (canary API key)', started);
}

mainIfDirect(module, run);
