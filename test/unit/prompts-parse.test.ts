/**
 * The prompt library's pure parts (lua/caboose/prompts): front matter parsing, placeholder discovery and
 * substitution, setup() validation. Run in `nvim -l` (no UI, no host) on every Neovim the tests use.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachNvim, REPO_ROOT } from '../support/nvim';

/** Runs `code` (a Lua chunk returning a value) with caboose on the runtimepath; returns the value (JSON). */
function lua<T>(bin: string, code: string, args: unknown[] = []): T {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-prompts-unit-'));
  try {
    const script = path.join(dir, 't.lua');
    fs.writeFileSync(
      script,
      `vim.opt.runtimepath:prepend(${JSON.stringify(REPO_ROOT)})
local args = vim.json.decode(${JSON.stringify(JSON.stringify(args))})
local f = assert(loadstring(${JSON.stringify(code)}))
local ok, res = pcall(f, unpack(args))
io.stdout:write(vim.json.encode({ ok = ok, res = res == nil and vim.NIL or res }))`,
    );
    const env: Record<string, string> = { ...process.env, XDG_CONFIG_HOME: dir, XDG_STATE_HOME: dir, XDG_DATA_HOME: dir } as Record<string, string>;
    const out = execFileSync(bin, ['--clean', '--headless', '-l', script], { encoding: 'utf8', env, timeout: 30_000 });
    const r = JSON.parse(out) as { ok: boolean; res: T };
    if (!r.ok) throw new Error(String(r.res));
    return r.res;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const PARSE = `local p, w = require('caboose.prompts').parse(...)
  if not p then return { error = w } end
  return { description = p.description, text = p.text, mode = p.mode or vim.NIL, model = p.model or vim.NIL, warnings = w }`;

forEachNvim((bin) => {
  describe(`prompt files and placeholders (Neovim ${bin.version})`, () => {
    it('parses front matter (quotes, comments, CRLF, BOM) and the body', () => {
      const file = [
        '\ufeff---',
        'description: "Review: the diff"   ',
        '# a comment',
        "mode: 'plan'",
        'model: openai/gpt-4o # the big one',
        'color: red',
        '---',
        '',
        'Review #gitdiff.',
        'Then {{input}}.',
        '',
      ].join('\r\n');
      assert.deepEqual(lua(bin.path, PARSE, [file]), {
        description: 'Review: the diff',
        text: 'Review #gitdiff.\nThen {{input}}.',
        mode: 'plan',
        model: 'openai/gpt-4o',
        warnings: ['unknown front matter key `color` (ignored; known: description, mode, model)'],
      });
    });

    it('a file without front matter is all text; a horizontal rule later is text', () => {
      assert.deepEqual(lua(bin.path, PARSE, ['Explain {{selection}}\n\n---\n\nmore']), {
        description: '',
        text: 'Explain {{selection}}\n\n---\n\nmore',
        mode: null,
        model: null,
        warnings: [],
      });
    });

    it('refuses an unclosed front matter, a bad line, an unknown mode and an empty body', () => {
      assert.match(lua<{ error: string }>(bin.path, PARSE, ['---\ndescription: x\nbody']).error, /not closed/);
      assert.match(lua<{ error: string }>(bin.path, PARSE, ['---\njust words\n---\nbody']).error, /line 2 is not `key: value`/);
      assert.match(lua<{ error: string }>(bin.path, PARSE, ['---\nmode: yolo\n---\nbody']).error, /`mode` should be one of plan, create, auto-edit, chug/);
      assert.match(lua<{ error: string }>(bin.path, PARSE, ['---\ndescription: x\n---\n  \n']).error, /no text/);
    });

    it('finds placeholders: names, and each input question once, in order', () => {
      const r = lua<{ names: string[]; inputs: string[] }>(
        bin.path,
        `local ph = require('caboose.prompts').placeholders(...)
         local names = vim.tbl_keys(ph.names) table.sort(names)
         return { names = names, inputs = ph.inputs }`,
        ['{{ selection }} {{input:Which language?}} {{buffer}} {{input}} {{input:Which language?}} {{ input }} {{nope}} {{ .Go }} {{file}}'],
      );
      assert.deepEqual(r, { names: ['buffer', 'file', 'input', 'selection'], inputs: ['Which language?', ''] });
    });

    it('substitutes in one pass: answers are not expanded again; unknown and missing ones stay', () => {
      const r = lua<string>(
        bin.path,
        `return require('caboose.prompts').substitute(...)`,
        [
          'Explain {{selection}} in {{input:Lang}} for {{ input }}; {{buffer}} {{unknown}} 100%',
          { selection: 'the selection from a.lua (lines 1-2, attached below)', input: { Lang: 'Lua %1', '': 'me {{selection}}' } },
        ],
      );
      assert.equal(r, 'Explain the selection from a.lua (lines 1-2, attached below) in Lua %1 for me {{selection}}; {{buffer}} {{unknown}} 100%');
    });

    it('trust is keyed by absolute path and content hash, stored under stdpath("state")', () => {
      const r = lua<Record<string, unknown>>(
        bin.path,
        `local trust = require('caboose.prompts.trust')
         local p = vim.fn.getcwd() .. '/.caboose/prompts/x.md'
         local before = trust.is_trusted(p, 'A')
         trust.remember(p, 'A')
         local raw = table.concat(vim.fn.readfile(trust.file()), '\\n')
         return {
           before = before, same = trust.is_trusted(p, 'A'), changed = trust.is_trusted(p, 'B'),
           other_path = trust.is_trusted(vim.fn.getcwd() .. '/.caboose/prompts/y.md', 'A'),
           relative = trust.is_trusted('.caboose/prompts/x.md', 'A'),
           in_state = vim.startswith(trust.file(), vim.fn.stdpath('state')),
           stored = vim.json.decode(raw).prompts[p] == vim.fn.sha256('A'),
         }`,
      );
      assert.deepEqual(r, { before: false, same: true, changed: false, other_path: false, relative: true, in_state: true, stored: true });
    });

    it('validates setup({ prompts }) with the key that is wrong', () => {
      const build = (prompts: unknown) =>
        lua<string | null>(
          bin.path,
          `local ok, err = pcall(require('caboose.config').build, { prompts = ... })
           return ok and vim.NIL or err`,
          [prompts],
        );
      assert.equal(build({ doc: { description: 'write docs', text: 'Document {{code}}', mode: 'plan', model: 'gpt-4o' } }), null);
      assert.match(String(build({ doc: { text: '' } })), /`prompts\.doc\.text` should be a non-empty string/);
      assert.match(String(build({ doc: { text: 'x', mode: 'fast' } })), /`prompts\.doc\.mode` should be one of plan, create, auto-edit, chug/);
      assert.match(String(build({ doc: { text: 'x', colour: 1 } })), /`prompts\.doc\.colour` should be one of description, text, mode, model/);
      assert.match(String(build({ 'my prompt': { text: 'x' } })), /`prompts\.my prompt` should be named with letters, digits, - and _/);
      assert.match(String(build({ doc: 'text' })), /`prompts\.doc` should be a table/);
      assert.match(String(build('x')), /`prompts` should be a table of prompts by name/);
    });
  });
});
