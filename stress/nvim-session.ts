/** Helpers of the stress suites that drive a real headless Neovim (test/support/nvim.ts) and the fake model. */
import type { FakeOpenAI } from '../test/support/fake-openai';
import { defaultNvim, startNvim, type StartOptions, type TestNvim } from '../test/support/nvim';

export const nvimVersion = (): string => defaultNvim().version;

/** A Neovim (the newest available) pointed at `baseUrl`, with caboose set up by `setupLua`. */
export function startSession(baseUrl: string, setupLua: string, extra: Omit<StartOptions, 'nvim' | 'initLua'> = {}): Promise<TestNvim> {
  return startNvim({ ...extra, nvim: defaultNvim(), env: { OPENAI_BASE_URL: baseUrl, CABOOSE_MODEL: 'fake-model', ...(extra.env ?? {}) }, initLua: setupLua });
}

export const chatText = async (t: TestNvim): Promise<string> => (await t.chatLines()).join('\n');

export async function waitIdle(t: TestNvim, timeoutMs = 20_000): Promise<void> {
  await t.waitFor(async () => (await t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle', timeoutMs);
}

/** Sends `:Caboose <text>` and waits until `expect` is in the chat and the agent is idle again. */
export async function say(t: TestNvim, text: string, expect: string | RegExp, timeoutMs = 20_000): Promise<string> {
  await t.cmd(`Caboose ${text}`);
  const chat = await t.waitFor(
    async () => {
      const c = await chatText(t);
      return (typeof expect === 'string' ? c.includes(expect) : expect.test(c)) ? c : null;
    },
    `${String(expect)} in the chat`,
    timeoutMs,
  );
  await waitIdle(t, timeoutMs);
  return chat;
}

/** The user messages of the last chat request the fake server received. */
export function lastUserMessages(fake: FakeOpenAI): unknown[] {
  const req = fake.chatRequests.at(-1);
  return (req?.body?.messages ?? []).filter((m) => m.role === 'user').map((m) => m.content);
}
