import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachNvim, type TestNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import type { FakeRequest } from '../support/fake-openai';

const chatText = async (t: TestNvim) => (await t.chatLines()).join('\n');
const idle = (t: TestNvim) => t.waitFor(async () => (await t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');
const systemOf = (r: FakeRequest | undefined) => String(r?.body?.messages?.[0]?.content ?? '');
const sessionId = (t: TestNvim) => t.lua<string>("return require('caboose').state().session");

/** A workspace `top/repo/app` (the working directory) in a repository `top/repo`, with the files given. */
function project(files: Record<string, string | Buffer>): { top: string; repo: string; cwd: string } {
  const top = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-rules-e2e-')));
  const repo = path.join(top, 'repo');
  const cwd = path.join(repo, 'app');
  fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
  fs.mkdirSync(cwd, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(top, rel)), { recursive: true });
    fs.writeFileSync(path.join(top, rel), content);
  }
  return { top, repo, cwd };
}

/** Sends a message and waits for the reply and for the agent to be idle again. */
async function say(t: TestNvim, text: string, expect: string): Promise<void> {
  await t.cmd(`Caboose ${text}`);
  await t.waitFor(async () => (await chatText(t)).includes(expect), `the reply to “${text}”`);
  await idle(t);
}

forEachNvim((bin) => {
  describe(`project rules (Neovim ${bin.version})`, () => {
    const e2e = useE2E(bin);
    const tops: string[] = [];
    afterEach(() => {
      for (const d of tops.splice(0)) fs.rmSync(d, { recursive: true, force: true });
    });
    const start = async (files: Record<string, string | Buffer>, initLua?: string) => {
      const p = project(files);
      tops.push(p.top);
      const t = await e2e.start({ cwd: p.cwd, env: { CABOOSE_MODEL: 'fake-model' }, ...(initLua ? { initLua } : {}) });
      return { ...p, t };
    };

    it('files from the working directory up to the repository root go into the system prompt, nearest first, and the chat names them', async () => {
      const { t } = await start({
        'AGENTS.md': 'OUTSIDE-REPO: never read\n',
        'repo/AGENTS.md': '# Root\nROOT-RULE: indent with tabs\n',
        'repo/.github/copilot-instructions.md': 'COPILOT-RULE: be brief\n',
        'repo/app/AGENTS.md': '# App\nAPP-RULE: indent with spaces\n',
        'repo/app/CLAUDE.md': 'CLAUDE-RULE: run npm test\n',
        'repo/app/.cursor/rules/ts.mdc': '---\ndescription: TypeScript style\nglobs: "*.ts"\nalwaysApply: false\n---\nCURSOR-RULE: no any\n',
      });
      e2e.fake.script({ text: 'Understood.' });
      await say(t, 'hello', 'Understood.');

      const lines = await t.chatLines();
      assert.equal(lines[0], 'Rules: AGENTS.md, CLAUDE.md, .cursor/rules/ts.mdc, ../AGENTS.md, ../.github/copilot-instructions.md');
      assert.deepEqual(lines.slice(1, 3), ['', '## You']);
      assert.deepEqual(await t.lua("return require('caboose.chat').rules_lines()"), [lines[0]]);
      const marks = await t.lua<unknown[][]>(
        "local chat = require('caboose.chat') return vim.api.nvim_buf_get_extmarks(chat.buf(), vim.api.nvim_get_namespaces().caboose_chat_rules, 0, -1, { details = true })",
      );
      assert.equal((marks[0][3] as { hl_group: string }).hl_group, 'CabooseRules');

      const system = systemOf(e2e.fake.chatRequests[0]);
      assert.match(system, /^You are Caboose/, 'the rules follow the default prompt');
      assert.match(system, /When instructions conflict, the file nearer to the working directory wins\./);
      const order = ['APP-RULE', 'CLAUDE-RULE', 'CURSOR-RULE', 'ROOT-RULE', 'COPILOT-RULE'].map((m) => system.indexOf(m));
      assert.ok(order.every((i) => i > 0), system);
      assert.deepEqual([...order].sort((a, b) => a - b), order, 'nearest first, then the configured order');
      assert.match(system, /<project_instructions path="AGENTS\.md">\n# App\nAPP-RULE: indent with spaces\n<\/project_instructions>/);
      assert.match(system, /<project_instructions path="\.\.\/AGENTS\.md">\n# Root\nROOT-RULE/);
      assert.match(system, /<project_instructions path="\.cursor\/rules\/ts\.mdc">\n\(This rule applies to files matching \*\.ts: TypeScript style\.\)\nCURSOR-RULE: no any/);
      assert.doesNotMatch(system, /alwaysApply|OUTSIDE-REPO/);
    });

    it('caps: a long file is cut with a notice, a file past the total cap is listed as skipped; unusable files are skipped with a reason', async () => {
      const long = Array.from({ length: 40 }, (_, i) => `LONG-${String(i).padStart(2, '0')} ${'x'.repeat(40)}`).join('\n') + '\n'; // 40 × 49 bytes
      const { t } = await start(
        {
          'repo/app/AGENTS.md': long,
          'repo/app/CLAUDE.md': Buffer.from('caf\xe9 au lait\n', 'latin1'),
          'repo/app/.cursor/rules/blob.mdc': Buffer.from([1, 2, 0, 3]),
          'repo/AGENTS.md': 'PARENT-RULE '.repeat(200),
        },
        "require('caboose').setup({ rules = { max_bytes_per_file = 1000, max_total_bytes = 1500 } })",
      );
      e2e.fake.script({ text: 'Capped.' });
      await say(t, 'hello', 'Capped.');
      const lines = await t.chatLines();
      assert.deepEqual(lines.slice(0, 2), [
        'Rules: AGENTS.md (truncated)',
        'Rules skipped: CLAUDE.md (not UTF-8), .cursor/rules/blob.mdc (binary), ../AGENTS.md (total cap reached)',
      ]);
      const system = systemOf(e2e.fake.chatRequests[0]);
      assert.match(system, /LONG-19 x+\n\[truncated: only the first 980 of 1960 bytes are included \(max_bytes_per_file\); read the file for the rest\]/);
      assert.doesNotMatch(system, /LONG-20|PARENT-RULE|caf/);
      assert.match(system, /Not included because the size cap for these files \(max_total_bytes\) was reached: \.\.\/AGENTS\.md \(2400 bytes\)\./);
    });

    it('the rules are fixed at the first message: an edit applies to the next conversation (:CabooseNew), a reopened one keeps its own', async () => {
      const { t, cwd } = await start({ 'repo/app/AGENTS.md': 'VERSION-1\n' });
      // The host starts (as when `:Cab` is typed) and names the rules; they are read again at the first
      // message, so this edit still counts.
      await t.lua("require('caboose').prestart()");
      await t.waitFor(async () => (await t.chatLines())[0] === 'Rules: AGENTS.md', 'the rules line');
      fs.writeFileSync(path.join(cwd, 'CLAUDE.md'), 'EARLY-EDIT\n');
      e2e.fake.script({ text: 'One.' }, { text: 'Two.' }, { text: 'Three.' }, { text: 'Four.' });
      await say(t, 'first', 'One.');
      assert.match(systemOf(e2e.fake.chatRequests[0]), /VERSION-1[\s\S]*EARLY-EDIT/);
      assert.equal((await t.chatLines())[0], 'Rules: AGENTS.md, CLAUDE.md', 'the line was updated in place');
      assert.equal((await t.chatLines()).filter((l) => l.startsWith('Rules:')).length, 1);
      const first = await sessionId(t);

      fs.writeFileSync(path.join(cwd, 'AGENTS.md'), 'VERSION-2\n');
      fs.rmSync(path.join(cwd, 'CLAUDE.md'));
      await say(t, 'second', 'Two.');
      assert.equal(systemOf(e2e.fake.chatRequests[1]), systemOf(e2e.fake.chatRequests[0]), 'same system prompt mid-conversation');

      await t.cmd('CabooseNew');
      await t.waitFor(async () => (await sessionId(t)) !== first, 'a new session');
      await t.waitFor(async () => (await t.chatLines())[0] === 'Rules: AGENTS.md', 'the new chat names the rules');
      await say(t, 'third', 'Three.');
      const third = systemOf(e2e.fake.chatRequests[2]);
      assert.match(third, /VERSION-2/);
      assert.doesNotMatch(third, /VERSION-1|EARLY-EDIT/);

      // The first conversation, reopened, continues with the rules it started with.
      await t.lua("require('caboose.ui.sessions').open(...)", [first]);
      await t.waitFor(async () => (await sessionId(t)) === first, 'the first session reopened');
      await t.waitFor(async () => (await chatText(t)).includes('One.'), 'its transcript');
      const lines = await t.chatLines();
      assert.equal(lines[0], 'Rules: AGENTS.md, CLAUDE.md');
      assert.deepEqual(await t.lua("return require('caboose.chat').rules_lines()"), ['Rules: AGENTS.md, CLAUDE.md']);
      await say(t, 'fourth', 'Four.');
      assert.equal(systemOf(e2e.fake.chatRequests[3]), systemOf(e2e.fake.chatRequests[0]));
    });

    it('a configured system_prompt still gets the rules; rules = false sends and shows none', async () => {
      const files = { 'repo/app/AGENTS.md': 'PROJECT-RULE\n' };
      const { t } = await start(files, "require('caboose').setup({ system_prompt = 'You are a test prompt.' })");
      e2e.fake.script({ text: 'Custom.' });
      await say(t, 'hello', 'Custom.');
      assert.match(systemOf(e2e.fake.chatRequests[0]), /^You are a test prompt\.\n\n# Project instructions\n[\s\S]*PROJECT-RULE/);
      await t.close();

      const off = await start(files, "require('caboose').setup({ rules = false })");
      e2e.fake.script({ text: 'Plain.' });
      await say(off.t, 'hello', 'Plain.');
      const system = systemOf(e2e.fake.chatRequests.at(-1));
      assert.doesNotMatch(system, /PROJECT-RULE|Project instructions/);
      assert.equal((await off.t.chatLines())[0], '## You');
      const err = await off.t.lua<string>("local ok, e = pcall(require('caboose').setup, { rules = { files = { '../AGENTS.md' } } }) return e");
      assert.match(err, /`rules\.files` should be a list of file names or globs relative to the folder searched/);
      const err2 = await off.t.lua<string>("local ok, e = pcall(require('caboose').setup, { rules = { max_total_bytes = 0 } }) return e");
      assert.match(err2, /`rules\.max_total_bytes` should be a whole number >= 1/);
      const err3 = await off.t.lua<string>("local ok, e = pcall(require('caboose').setup, { rules = 'yes' }) return e");
      assert.match(err3, /`rules` should be false or a table/);
    });

    it(':checkhealth caboose lists the rules files for the current directory, with truncation and skipped ones', async () => {
      const { t, repo } = await start(
        { 'repo/app/AGENTS.md': 'a'.repeat(3000), 'repo/app/CLAUDE.md': Buffer.from([0, 1]), 'repo/AGENTS.md': 'root rule\n' },
        "require('caboose').setup({ rules = { max_bytes_per_file = 2048 } })",
      );
      await t.cmd('checkhealth caboose');
      const text = (await t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
      assert.match(text, /caboose: project rules/);
      assert.match(text, new RegExp(`looked for AGENTS\\.md, CLAUDE\\.md, \\.github/copilot-instructions\\.md, \\.cursor/rules/\\*\\.mdc from \\S+ up to the repository root ${repo.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      assert.match(text, /WARNING.*AGENTS\.md: 2\.9 KB, truncated to 2\.0 KB \(max_bytes_per_file\)/);
      assert.match(text, /WARNING.*CLAUDE\.md: skipped \(binary\)/);
      assert.match(text, /OK.*\.\.\/AGENTS\.md: 10 bytes/);
      assert.match(text, /2 files .* go into the system prompt of a new conversation, nearest first/);

      // After :cd to a folder outside any repository without rules files.
      const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-rules-none-'));
      tops.push(empty);
      await t.cmd(`cd ${empty}`);
      await t.cmd('checkhealth caboose');
      const none = (await t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
      assert.match(none, /not in a repository: no parent folder is searched/);
      assert.match(none, /no project rules file found/);
    });
  });
});
