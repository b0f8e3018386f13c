import { startNvim, defaultNvim } from './support/nvim';
import { startFakeOpenAI } from './support/fake-openai';
(async () => {
  const fake = await startFakeOpenAI({ defaultReply: { text: 'hello there friend', delayMs: 1 } });
  for (const typed of [false, true]) for (let i = 0; i < 3; i++) {
    const t = await startNvim({ nvim: defaultNvim(), env: { OPENAI_BASE_URL: fake.url } });
    await t.lua(`_G.stall = 0 local last = vim.uv.hrtime() _G.tm = vim.uv.new_timer() _G.tm:start(2, 2, function() local n = vim.uv.hrtime() if _G.t0 and not _G.t1 then _G.stall = math.max(_G.stall, (n - last)/1e6) end last = n end)`);
    const code = `_G.t0 = vim.uv.hrtime()
      local chat = require('caboose.ui.chat')
      vim.api.nvim_buf_attach(chat.buf(), false, { on_lines = function() if not _G.t1 and table.concat(vim.api.nvim_buf_get_lines(chat.buf(), 0, -1, false), '\\n'):find('hello') then _G.t1 = vim.uv.hrtime() end end })`;
    if (typed) {
      await t.nvim.input(':Caboo');
      await new Promise((r) => setTimeout(r, Number(process.env.WAIT ?? 400)));
      await t.nvim.input('se hi');
      await t.lua(code);
      await t.nvim.input('<CR>');
    } else {
      await t.lua(code + "\n vim.cmd('Caboose hi')");
    }
    const ms = await t.waitFor(async () => t.lua<number | null>('return _G.t1 and (_G.t1 - _G.t0) / 1e6 or nil'), 'token');
    console.log(typed ? 'typed' : 'cold ', ms.toFixed(1), 'ms; stall', (await t.lua<number>('return _G.stall')).toFixed(1));
    await t.close();
  }
  await fake.close();
})();
