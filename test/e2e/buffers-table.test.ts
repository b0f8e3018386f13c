/**
 * The live-buffer contract as a table: {not loaded, loaded clean, loaded with unsaved changes} ×
 * {nothing changed since the read, disk changed, buffer changed, both changed} × {write_file,
 * edit_file, apply_patch, delete_file, move_file}. Every cell asserts the tool result, the disk bytes
 * and the buffer text. One Neovim per (version, state) group; files and buffers are reset per cell.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim, startNvim, type TestNvim } from '../support/nvim';
import { bufferOf, toolCall, type BufferState as Buf } from '../support/buffers';

type State = 'not_loaded' | 'clean' | 'unsaved';
type Change = 'none' | 'disk' | 'buffer' | 'both';
type Tool = 'write_file' | 'edit_file' | 'apply_patch' | 'delete_file' | 'move_file';

const ORIGINAL = 'alpha\nbeta\ngamma\n';
const DISK_CHANGED = 'alpha\nbeta\ngamma\ndisk\n';
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const STATES: State[] = ['not_loaded', 'clean', 'unsaved'];
const CHANGES: Change[] = ['none', 'disk', 'buffer', 'both'];
const TOOLS: Tool[] = ['write_file', 'edit_file', 'apply_patch', 'delete_file', 'move_file'];

function argsFor(tool: Tool, expected: string): Record<string, unknown> {
  switch (tool) {
    case 'write_file':
      return { path: 'f.txt', content: 'new\ncontent\n', expectedSha256: expected };
    case 'edit_file':
      return { path: 'f.txt', expectedSha256: expected, edits: [{ oldText: 'gamma', newText: 'GAMMA' }] };
    case 'apply_patch':
      return {
        patch: '*** Begin Patch\n*** Update File: f.txt\n@@\n beta\n-gamma\n+GAMMA\n*** End Patch\n',
        expectedSha256ByPath: { 'f.txt': expected },
      };
    case 'delete_file':
      return { path: 'f.txt', expectedSha256: expected };
    case 'move_file':
      return { from: 'f.txt', to: 'g.txt', expectedSha256: expected };
  }
}

/** Buffer text as file text (lines + "\n"). */
const text = (b: Buf) => b.lines.map((l) => l + '\n').join('');

forEachNvim((bin) => {
  for (const state of STATES) {
    describe(`buffer contract table, ${state}, Neovim ${bin.version}`, () => {
      let t: TestNvim;
      const f = () => path.join(t.cwd, 'f.txt');
      const g = () => path.join(t.cwd, 'g.txt');
      before(async () => {
        t = await startNvim({ nvim: bin, initLua: "require('caboose').setup({})" });
      });
      after(async () => {
        const msgs = await t.lua<string>("return vim.fn.execute('messages')");
        await t.close();
        assert.doesNotMatch(msgs, /W1[1236]|E37|E13|E\d+:|WARNING/, 'no prompts or errors in :messages');
      });

      for (const change of CHANGES) {
        for (const tool of TOOLS) {
          it(`${tool} after ${change === 'none' ? 'no change' : `${change} changed`}`, async () => {
            // Reset: no buffers, the original file.
            await t.cmd('silent! %bwipeout!');
            for (const p of [f(), g()]) fs.rmSync(p, { force: true });
            fs.writeFileSync(f(), ORIGINAL);
            if (state !== 'not_loaded') await t.cmd('edit f.txt');
            if (state === 'unsaved') await t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, {'ALPHA'})");

            const read = await toolCall(t, 'read_file', { path: 'f.txt' });
            assert.ok(read.ok, JSON.stringify(read));
            const seen = state === 'unsaved' ? 'ALPHA\nbeta\ngamma\n' : ORIGINAL;
            assert.equal(read.data!.content, seen);
            assert.equal(read.data!.sha256, sha(seen));
            if (state === 'unsaved') {
              assert.equal(read.data!.unsavedBuffer, true);
              assert.equal(read.data!.diskSha256, sha(ORIGINAL));
            } else assert.equal(read.data!.unsavedBuffer, false);

            if (change === 'disk' || change === 'both') fs.writeFileSync(f(), DISK_CHANGED);
            if (change === 'buffer' || change === 'both') {
              if (state === 'not_loaded') await t.cmd('edit f.txt');
              await t.lua("vim.api.nvim_buf_set_lines(0, 1, 2, false, {'BETA-user'})");
            }
            const diskBefore = fs.readFileSync(f(), 'utf8');
            const bufBefore = await bufferOf(t, f());

            const r = await toolCall(t, tool, argsFor(tool, read.data!.sha256 as string));
            const diskAfter = fs.existsSync(f()) ? fs.readFileSync(f(), 'utf8') : null;
            const bufAfter = await bufferOf(t, f());
            const unsavedNow = state === 'unsaved' || change === 'buffer' || change === 'both';

            const refusedUnchanged = () => {
              assert.equal(diskAfter, diskBefore, 'disk untouched');
              assert.deepEqual(bufAfter, bufBefore, 'buffer untouched');
              assert.equal(fs.existsSync(g()), false);
            };
            if ((tool === 'delete_file' || tool === 'move_file') && unsavedNow) {
              assert.equal(r.ok, false);
              assert.equal(r.error!.kind, 'unsaved_buffer', JSON.stringify(r));
              assert.equal(r.error!.suggestedAction, 'Ask the user to save or discard their changes to f.txt first.');
              return refusedUnchanged();
            }
            if (change !== 'none') {
              assert.equal(r.ok, false, JSON.stringify(r));
              assert.equal(r.error!.kind, 'stale_file');
              const m = r.error!.message;
              if (change === 'disk') {
                assert.match(m, /disk/);
                assert.doesNotMatch(m, /buffer/);
              } else if (change === 'buffer') {
                assert.match(m, /buffer/);
                assert.doesNotMatch(m, /disk/);
              } else {
                assert.match(m, /buffer/);
                assert.match(m, /disk/);
              }
              return refusedUnchanged();
            }
            assert.ok(r.ok, JSON.stringify(r));
            if (tool === 'delete_file') {
              assert.equal(diskAfter, null);
              assert.equal(bufAfter, null, 'the clean buffer is wiped');
              return;
            }
            if (tool === 'move_file') {
              assert.equal(diskAfter, null);
              assert.equal(fs.readFileSync(g(), 'utf8'), ORIGINAL);
              assert.equal(bufAfter, null);
              const moved = await bufferOf(t, g());
              if (state === 'clean') assert.deepEqual(moved, { lines: ['alpha', 'beta', 'gamma'], modified: false }, 'buffer renamed');
              else assert.equal(moved, null);
              return;
            }
            const expected = tool === 'write_file' ? 'new\ncontent\n' : seen.replace('gamma', 'GAMMA');
            const savedToDisk = tool === 'apply_patch' ? (r.data!.files as Record<string, unknown>[])[0].savedToDisk : r.data!.savedToDisk;
            if (state === 'unsaved') {
              assert.equal(savedToDisk, false);
              assert.equal(diskAfter, ORIGINAL, 'the unsaved changes never reach the disk');
              assert.equal(text(bufAfter!), expected);
              assert.equal(bufAfter!.modified, true);
              const again = await toolCall(t, 'read_file', { path: 'f.txt' });
              const newSha = tool === 'apply_patch' ? (r.data!.files as Record<string, unknown>[])[0].sha256 : r.data!.sha256;
              assert.equal(again.data!.sha256, newSha, 'the result sha256 is the buffer’s');
            } else {
              assert.equal(savedToDisk, true);
              assert.equal(diskAfter, expected);
              if (state === 'clean') assert.deepEqual(bufAfter, { lines: expected.split('\n').slice(0, -1), modified: false });
              else assert.equal(bufAfter, null);
            }
          });
        }
      }
    });
  }
});
