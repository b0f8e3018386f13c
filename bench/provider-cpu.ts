/**
 * The provider layer alone (src/agent/provider.ts over src/agent/node-fetch.ts), reading the paced reply of
 * bench/chat.ts from the fake server (this process), against the plain client's way of reading it
 * (bench/raw-stream.ts's loop), both in one child process, alternately: CPU time of each read
 * (process.cpuUsage). A quick check of the provider's share of the host's relay CPU (bench/chat.ts stream).
 *
 *   node --import tsx bench/provider-cpu.ts [runs]
 */
import { spawn } from 'node:child_process';
import { startFakeOpenAI } from '../test/support/fake-openai';
import { OpenAIProvider } from '../src/agent/provider';
import { streamText } from './chat';
import { plainSseRead } from './plain-sse';

async function rawRead(base: string): Promise<number> {
  let text = '';
  await plainSseRead(base, (delta) => (text += delta));
  return text.length;
}

async function child(base: string, runs: number): Promise<void> {
  const text = streamText(20_000);
  const provider = new OpenAIProvider({ baseURL: base, apiKey: 'k', model: 'fake-model', maxRetries: 0 });
  const cpu = async (f: () => Promise<unknown>): Promise<number> => {
    const c0 = process.cpuUsage();
    await f();
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1000;
  };
  const rawMs: number[] = [];
  const provMs: number[] = [];
  const read = async (): Promise<void> => {
    let got = '';
    for await (const ev of provider.stream({ messages: [{ role: 'user', content: 'stream please' }] })) if (ev.type === 'text') got += ev.delta;
    if (got !== text) throw new Error('provider text differs');
  };
  // Three warm-up rounds (the JIT), then `runs` measured ones, the plain client first in each.
  for (let i = 0; i < runs + 3; i++) {
    const r = await cpu(() => rawRead(base));
    const p = await cpu(read);
    if (i >= 3) {
      rawMs.push(r);
      provMs.push(p);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const f = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
  process.stdout.write(`plain client ${f(rawMs)} ms | provider ${f(provMs)} ms | medians ${med(rawMs).toFixed(1)} / ${med(provMs).toFixed(1)} ms = ${(med(provMs) / med(rawMs)).toFixed(2)}×\n`);
}

async function main(): Promise<void> {
  if (process.argv[2] === 'child') return child(process.argv[3], Number(process.argv[4]));
  const runs = Number(process.argv[2] ?? 6);
  const text = streamText(20_000);
  const chunks = text.match(/[\s\S]{1,40}/g) ?? [];
  const fake = await startFakeOpenAI({ defaultReply: { text, chunks, delayMs: 10 } });
  try {
    await new Promise<void>((resolve, reject) => {
      const p = spawn(process.execPath, [...process.execArgv, __filename, 'child', fake.url, String(runs)], { stdio: ['ignore', 'inherit', 'inherit'] });
      p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}`))));
    });
  } finally {
    await fake.close();
  }
}

main().then(() => process.exit(0), (e: unknown) => { process.stderr.write(String(e instanceof Error ? e.stack : e) + '\n'); process.exit(1); });
