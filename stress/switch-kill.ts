/**
 * SIGKILL of the host during a session switch (server.ts switchStep / replaceRuntime): a real Neovim and
 * host against the fake model; each round has one finished exchange, then a switch — :CabooseNew, or the
 * previous round's session reopened — sent together with a message (or while a reply still streams), and
 * the host SIGKILLed 0–40 ms later, in the middle of disposing the runtime it leaves, opening the next one
 * and recording the message. After each kill:
 * - the store is intact (`PRAGMA integrity_check`, `quick_check` of the FTS index);
 * - every exchange finished before the kill is stored whole in its session (the user's words and the reply);
 * - a user message is stored at most once, and only in the session it was sent to (the one it followed);
 * - the next `:Caboose` starts a new host that answers, with no error in the chat;
 * - the session the round left can still be reopened and shows its exchange.
 * Run after `npm run build`: `node --import tsx stress/switch-kill.ts` (or `npm run stress -- switch-kill`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { startFakeOpenAI } from '../test/support/fake-openai';
import { seededRandom } from '../test/support/rng';
import { Checks, mainIfDirect, scaled, sleep, type SuiteReport } from './lib';
import { chatText, startSession, waitIdle } from './nvim-session';

type Row = { session_id: string; role: string; display_json: string };

function storedMessages(dbFile: string): { rows: Row[]; integrity: string } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Database = require('better-sqlite3') as typeof import('better-sqlite3');
  const db = new Database(dbFile, { readonly: true, fileMustExist: true });
  try {
    const integrity = (db.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check).join(',');
    const rows = db.prepare("SELECT session_id, role, display_json FROM session_messages WHERE kind = 'message' ORDER BY id").all() as Row[];
    return { rows, integrity };
  } finally {
    db.close();
  }
}

const textOf = (r: Row): string => {
  try {
    return String((JSON.parse(r.display_json) as { text?: unknown }).text ?? '');
  } catch {
    return '';
  }
};

export async function run(): Promise<SuiteReport> {
  const started = Date.now();
  const c = new Checks();
  const rng = seededRandom(Number(process.env.STRESS_SEED ?? 24));
  const rounds = scaled(12, 6);
  const fake = await startFakeOpenAI();
  const t = await startSession(fake.url, "require('caboose').setup({ mode = 'create', provider = { max_retries = 0 } })");
  const dbFile = path.join(t.dataDir, 'caboose.sqlite');
  const kinds = new Map<string, number>();
  // Where the kills landed: with the message sent with the switch already stored, or before that.
  let storedBeforeKill = 0;
  try {
    let previous: string | null = null;
    for (let i = 0; i < rounds; i++) {
      // One finished exchange in the current session.
      fake.script({ text: `Reply ${i}.` });
      await t.cmd(`Caboose ask ${i}`);
      await t.waitFor(async () => (await chatText(t)).includes(`Reply ${i}.`), `reply ${i}`, 30_000);
      await waitIdle(t, 30_000);
      const session = (await t.lua<{ session?: string }>("return require('caboose').state()")).session ?? '';
      const pid = await t.lua<number>("return require('caboose.rpc').host_pid()");

      // The switch and a message at once (or during a streaming reply), then the kill.
      const how = (['new', 'reopen', 'new-streaming'] as const)[i % 3]!;
      const kind = how === 'reopen' && !previous ? 'new' : how;
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      const delay = Math.floor(rng() * 40);
      if (kind === 'new-streaming') {
        fake.script({ text: Array.from({ length: 200 }, (_, k) => `w${k}`).join(' '), delayMs: 5 });
        await t.cmd(`Caboose stream ${i}`);
        await t.waitFor(async () => (await chatText(t)).includes('w3'), 'the stream started', 30_000);
        await t.lua("vim.cmd('CabooseNew'); vim.cmd('Caboose after ' .. ...)", [String(i)]);
      } else if (kind === 'reopen') {
        await t.lua("require('caboose.ui.sessions').open(...); vim.cmd('Caboose after ' .. select(2, ...))", [previous, String(i)]);
      } else {
        await t.lua("vim.cmd('CabooseNew'); vim.cmd('Caboose after ' .. ...)", [String(i)]);
      }
      await sleep(delay);
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await t.waitFor(async () => (await t.lua<number | null>("return require('caboose.rpc').host_pid()")) !== pid, 'Neovim saw the host exit', 10_000).catch(() => undefined);

      // The store, as the kill left it.
      const { rows, integrity } = storedMessages(dbFile);
      c.record('the store is intact after a SIGKILL during a switch', integrity === 'ok' ? null : `round ${i}: ${integrity}`);
      const mine = rows.filter((r) => r.session_id === session).map((r) => `${r.role}:${textOf(r)}`);
      c.record(
        'the exchange finished before the kill is stored whole in its session',
        mine.includes(`user:ask ${i}`) && mine.some((m) => m.startsWith('assistant:') && m.includes(`Reply ${i}.`)) ? null : `round ${i} (${kind}): ${JSON.stringify(mine)}`,
      );
      const after = rows.filter((r) => r.role === 'user' && textOf(r) === `after ${i}`);
      c.record(
        'the message sent with the switch is stored at most once, never in the session left',
        after.length <= 1 && after.every((r) => (kind === 'reopen' ? r.session_id === previous : r.session_id !== session)) ? null : `round ${i} (${kind}): ${JSON.stringify(after.map((r) => r.session_id))} left ${session}`,
      );
      if (after.length === 1) storedBeforeKill++;

      // A new host answers; no error in the chat.
      fake.script({ text: `Recovered ${i}.` });
      await t.cmd(`Caboose recover ${i}`);
      const ok = await t.waitFor(async () => (await chatText(t)).includes(`Recovered ${i}.`), 'recovered', 30_000).then(() => true, () => false);
      await waitIdle(t, 30_000).catch(() => undefined);
      const chat = await chatText(t);
      c.record('the next :Caboose starts a new host that answers', ok ? null : `round ${i} (${kind}): ${chat.slice(-300)}`);
      c.record('no store error after the restart', /database|not open|SQLITE|TypeError/i.test(chat) ? `round ${i}: ${chat.slice(-300)}` : null);

      // The session the round left can be reopened and shows its exchange.
      await t.lua("require('caboose.ui.sessions').open(...)", [session]);
      const reopened = await t.waitFor(async () => ((await chatText(t)).includes(`Reply ${i}.`) ? true : null), 'reopened', 15_000).then(() => true, () => false);
      c.record('the session left by the killed switch reopens with its exchange', reopened ? null : `round ${i} (${kind})`);
      await waitIdle(t, 30_000).catch(() => undefined);
      previous = session;
    }
    c.figures.push(`${rounds} rounds (${[...kinds].map(([k, n]) => `${k} ${n}`).join(', ')}), kill 0–40 ms after the switch; the message sent with the switch was already stored at the kill in ${storedBeforeKill} rounds (the kill landed before it in the others); seed ${process.env.STRESS_SEED ?? 24}`);
  } finally {
    await t.close();
    await fake.close();
    if (fs.existsSync(t.dataDir)) fs.rmSync(t.dataDir, { recursive: true, force: true });
  }
  return c.report('switch-kill', 'SIGKILL of the host during a session switch', started);
}

mainIfDirect(module, run);
