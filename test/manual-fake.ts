import { startFakeOpenAI } from './support/fake-openai';
(async () => {
  const fake = await startFakeOpenAI({
    defaultReply: (req) => {
      const last = String(req.body?.messages?.filter((m) => m.role === 'user').at(-1)?.content ?? '');
      if (/edit/.test(last) && !req.body?.messages?.some((m) => m.role === 'tool')) return { toolCalls: [{ name: 'bash', arguments: { command: 'ls' } }] };
      const text = 'Here is a reply with some code:\n\n```lua\nlocal x = 1\nprint(x)\n```\n\n' + Array.from({ length: 40 }, (_, i) => `Line ${i} of a long answer that keeps going.`).join('\n');
      return { text, delayMs: 30, usage: { prompt_tokens: 1500, completion_tokens: 300 } };
    },
  });
  process.stdout.write(fake.url + '\n');
})();
