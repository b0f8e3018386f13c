/** Issue 18, item 12: the API key never reaches the agent, the database or the log; base_url userinfo is redacted. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

const KEY = 'sk-e2e-canary-7f3a9c1d5b';

/** Every file under `dir` whose bytes contain `needle`. */
function filesContaining(dir: string, needle: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    if (!fs.existsSync(d)) return;
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && (fs.existsSync(p) ? (() => { try { return fs.readFileSync(p); } catch { return Buffer.alloc(0); } })() : Buffer.alloc(0)).includes(needle)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

forEachNvim((bin) => {
  describe(`the API key stays with the editor and the endpoint (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it('the host starts without OPENAI_API_KEY in its environment; a command reading /proc/$PPID/environ finds nothing; no stored or logged copy', async () => {
      const t = await e.start({
        env: { OPENAI_API_KEY: KEY },
        initLua: "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 }, log = { level = 'debug' } })",
      });
      const n = e.fake.requests.length;
      const command = "tr '\\0' '\\n' < /proc/$PPID/environ | grep -c OPENAI_API_KEY; printenv OPENAI_API_KEY; echo done-reading";
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command } }] }, { text: 'finished' });
      await t.cmd('Caboose look around');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('finished'), 'reply');
      const first = e.fake.requests[n];
      assert.equal(first.headers.authorization, `Bearer ${KEY}`, 'the key reached the endpoint over the RPC channel');
      const toModel = JSON.stringify(e.fake.requests.slice(n + 1).map((r) => r.body));
      assert.match(toModel, /done-reading/, 'the command ran');
      assert.ok(!toModel.includes(KEY), 'the key never reached the model');
      assert.ok(toModel.includes('0\\\\ndone-reading'), 'the host environment holds no OPENAI_API_KEY (grep -c printed 0, printenv nothing)');
      assert.deepEqual(filesContaining(t.dataDir, KEY), [], 'no copy in the data folder (session database)');
      assert.ok(!fs.existsSync(t.logFile) || !fs.readFileSync(t.logFile, 'utf8').includes(KEY), 'no copy in the log');
    });

    it('credentials in base_url (http://user:pw@…) are redacted in the database and the log', async () => {
      const url = new URL(e.fake.url);
      const base = `${url.protocol}//alice:pw-e2e-hidden-42@${url.host}${url.pathname}`;
      const t = await e.start({
        initLua: `require('caboose').setup({ provider = { base_url = '${base}', max_retries = 0 }, log = { level = 'debug' } })`,
      });
      e.fake.script({ text: 'hello' });
      await t.cmd('Caboose hi');
      await t.waitFor(async () => /hello|Error/.test((await t.chatLines()).join('\n')), 'a reply or an error');
      await t.cmd('CabooseNew').catch(() => undefined);
      assert.deepEqual(filesContaining(t.dataDir, 'pw-e2e-hidden-42'), [], 'no copy in the data folder');
      const log = fs.existsSync(t.logFile) ? fs.readFileSync(t.logFile, 'utf8') : '';
      assert.ok(!log.includes('pw-e2e-hidden-42'), 'no copy in the log');
    });
  });
});
