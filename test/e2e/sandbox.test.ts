import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { waitApprovalFloat } from '../support/approval';
import { firstToolResult, type RecordedToolResult } from '../support/chat-requests';
import { detectSandbox } from '../../src/workspace/sandbox/sandbox';

const support = detectSandbox();
const needsBwrap = support.available ? false : `skipped: no usable sandbox (${support.reason})`;
/** Outside the workspace and not under /tmp (the command's /tmp is private, so a write there proves nothing). */
const OUTSIDE = fs.existsSync('/var/tmp') ? '/var/tmp' : '/usr';

const SETUP = (mode: string, extra = '') => `require('caboose').setup({ mode = '${mode}', provider = { max_retries = 0 }, approval = { style = 'float' } ${extra} })`;

forEachNvim((bin) => {
  describe(`the sandbox and the permission modes (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const pending = () => e.t.lua<{ tool: string; preview?: { sandbox?: string } }[]>("return require('caboose.ui.approval').pending()");

    /**
     * The model calls bash once; `answer` decides an approval if one is asked (null: none may be asked).
     * Returns the tool result the model received and the approval float's text (if asked).
     */
    const bash = async (args: Record<string, unknown>, answer: 'once' | 'reject' | null): Promise<{ result: RecordedToolResult; float?: string }> => {
      const n = e.fake.chatRequests.length;
      const done = `done-${randomBytes(3).toString('hex')}`;
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: args }] }, { text: done });
      await e.t.cmd(`Caboose go ${done}`);
      let float: string | undefined;
      if (answer) {
        const f = await waitApprovalFloat(e.t, 'bash');
        float = f.text;
        await e.t.lua(`return require('caboose.ui.approval').respond('${answer}')`);
      }
      await e.t.waitFor(async () => e.fake.chatRequests.length >= n + 2, 'the tool result reached the model');
      if (!answer) assert.deepEqual(await pending(), [], 'no approval was asked');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes(done), 'the answer');
      return { result: firstToolResult(e.fake.chatRequests[n + 1]), ...(float === undefined ? {} : { float }) };
    };

    it('auto-edit runs sandboxed commands without asking; blocked writes are explained; escalation asks and says OUTSIDE', { skip: needsBwrap }, async () => {
      await e.start({ initLua: SETUP('auto-edit') });
      const outside = path.join(OUTSIDE, `caboose-e2e-${randomBytes(4).toString('hex')}`);
      const { result } = await bash({ command: `echo made > made.txt; echo x > .git-free.txt; echo pwned > ${outside}` }, null);
      assert.equal(result.ok, true);
      assert.equal(result.data?.sandboxed, true);
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'made.txt'), 'utf8'), 'made\n');
      assert.equal(fs.existsSync(outside), false);
      assert.match(String(result.data?.sandboxBlocked), /^blocked by the sandbox: writes outside the workspace.*escalate: true/);
      assert.match((await e.t.chatLines()).join('\n'), /bash echo made > made\.txt.*→ exit 1 \(blocked by the sandbox\)/);

      const esc = await bash({ command: `echo pwned > ${outside}`, escalate: true }, 'reject');
      assert.match(esc.float ?? '', /runs OUTSIDE the sandbox \(escalate: true\)/);
      assert.equal(esc.result.ok, false);
      assert.equal(fs.existsSync(outside), false);
    });

    it('chug runs sandboxed commands freely and asks before escalating, even after "always"; create asks for every command', { skip: needsBwrap }, async () => {
      await e.start({ initLua: SETUP('chug') });
      assert.equal((await bash({ command: 'echo free > free.txt' }, null)).result.data?.sandboxed, true);
      const outside = path.join(OUTSIDE, `caboose-e2e-${randomBytes(4).toString('hex')}`);
      try {
        const esc = await bash({ command: `echo escalated > ${outside}`, escalate: true }, 'once');
        assert.match(esc.float ?? '', /runs OUTSIDE the sandbox/);
        assert.equal(esc.result.data?.sandboxed, false);
        assert.equal(fs.readFileSync(outside, 'utf8'), 'escalated\n', 'approved, it ran outside');
      } finally {
        fs.rmSync(outside, { force: true });
      }
      await e.t.cmd('CabooseMode create');
      const asked = await bash({ command: 'echo asked' }, 'once');
      assert.match(asked.float ?? '', /runs inside the sandbox workspace-write/);
      assert.doesNotMatch(asked.float ?? '', /OUTSIDE/);
      assert.equal(asked.result.data?.sandboxed, true);
    });

    it('without a sandbox every command asks (auto-edit and chug), the chat says so once; sandbox.mode = off + chug runs freely', async () => {
      await e.start({ initLua: SETUP('auto-edit'), env: { CABOOSE_BWRAP: 'none' } });
      const first = await bash({ command: 'echo one' }, 'once');
      assert.match(first.float ?? '', /runs OUTSIDE any sandbox: no sandbox available/);
      assert.equal(first.result.data?.sandboxed, false);
      await e.t.waitFor(async () => /commands are not sandboxed: .*fix: install bubblewrap/.test((await e.t.chatLines()).join('\n')), 'the notice');
      await e.t.cmd('CabooseMode chug');
      await bash({ command: 'echo two' }, 'once');
      await e.t.close();

      await e.start({ initLua: SETUP('chug', ", sandbox = { mode = 'off' }"), env: { CABOOSE_BWRAP: 'none' } });
      assert.equal((await bash({ command: 'echo free' }, null)).result.data?.sandboxed, false);
      await e.t.cmd('CabooseMode auto-edit');
      assert.match((await bash({ command: 'echo asks' }, 'once')).float ?? '', /OUTSIDE any sandbox \(sandbox.mode = "off"\)/);
    });

    it('setup() validates the sandbox settings and sends them to the host', async () => {
      await e.start({ initLua: SETUP('create', ", sandbox = { network = { allow = { 'registry.npmjs.org' } }, deny_read = { '~/.config/hub' } }") });
      const err = async (opts: string) => e.t.lua<string>(`local ok, e = pcall(require('caboose').setup, ${opts}) return ok and 'ok' or e`);
      assert.match(await err("{ sandbox = { mode = 'strict' } }"), /`sandbox\.mode` should be nil, 'workspace-write', 'read-only' or 'off'/);
      assert.match(await err("{ sandbox = { network = { allow = 'all' } } }"), /`sandbox\.network\.allow` should be true, false or a list of host names/);
      assert.match(await err("{ sandbox = { deny_read = '~/.ssh' } }"), /`sandbox\.deny_read` should be a list of strings/);
      assert.match(await err("{ mcp = { servers = { x = { url = 'http://127.0.0.1:1/mcp', sandbox = true } } } }"), /mcp\.servers\.x\.sandbox` should be absent \(it is for stdio servers/);
      const part = await e.t.lua<{ sandbox: { network: { allow: string[] }; deny_read: string[] } }>("return require('caboose.config').host_part(require('caboose.config').build({ sandbox = { network = { allow = { 'registry.npmjs.org' } } } }))");
      assert.deepEqual(part.sandbox.network.allow, ['registry.npmjs.org']);
    });

    it(':checkhealth caboose probes the sandbox (each attack blocked) or says how to get one', async () => {
      const healthText = async () => {
        await e.t.cmd('checkhealth caboose');
        return (await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
      };
      if (support.available) {
        await e.start({ initLua: SETUP('create') });
        const text = await healthText();
        assert.match(text, /OK.*bwrap \(.*\): sandbox workspace-write/);
        for (const attack of [/write outside the workspace/, /read the data folder/, /open a socket to 127\.0\.0\.1 on the host/, /read the host's \/proc\/<pid>\/environ/]) {
          assert.match(text, new RegExp(`OK.*probe: ${attack.source}.*: blocked`));
        }
        assert.doesNotMatch(text, /NOT blocked/);
        await e.t.close();
      }
      await e.start({ initLua: SETUP('create'), env: { CABOOSE_BWRAP: 'none' } });
      const text = await healthText();
      assert.match(text, /ERROR.*no sandbox available: bubblewrap \(bwrap\) not found/);
      assert.match(text, /install bubblewrap \(Debian\/Ubuntu: sudo apt install bubblewrap/);
      assert.match(text, /every command asks for approval, in every mode/);
    });
  });
});
