/** Per-test fixture for end-to-end tests: a fresh fake model server and (on demand) a fresh Neovim. */
import { afterEach, beforeEach } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai';
import type { NvimBinary } from './nvim-path';
import { startNvim, type StartOptions, type TestNvim } from './nvim';

export interface E2E {
  /** This test's fake server (fresh per test, so unconsumed replies never leak into the next test). */
  readonly fake: FakeOpenAI;
  /** The Neovim started by `start()` in this test. */
  readonly t: TestNvim;
  /** Starts Neovim pointed at the fake server (OPENAI_BASE_URL); `env` entries override. */
  start(o?: Omit<StartOptions, 'nvim'>): Promise<TestNvim>;
}

export function useE2E(bin: NvimBinary): E2E {
  let fake: FakeOpenAI | undefined;
  let t: TestNvim | undefined;
  beforeEach(async () => {
    fake = await startFakeOpenAI();
  });
  afterEach(async () => {
    await t?.close();
    t = undefined;
    await fake?.close();
    fake = undefined;
  });
  return {
    get fake() {
      if (!fake) throw new Error('useE2E: no fake server outside a test');
      return fake;
    },
    get t() {
      if (!t) throw new Error('useE2E: call start() first');
      return t;
    },
    async start(o = {}) {
      t = await startNvim({ ...o, nvim: bin, env: { OPENAI_BASE_URL: this.fake.url, ...(o.env ?? {}) } });
      return t;
    },
  };
}
