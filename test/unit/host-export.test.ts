import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { exportMarkdown, openFence } from '../../src/host/export';

describe('exportMarkdown', () => {
  it('messages with labels, replies with code intact, tool calls one line each, notices quoted, thinking left out', () => {
    const code = '```lua\nlocal a = 1\n\n\n\nreturn a\n```';
    const md = exportMarkdown(
      'Fix the parser',
      [
        { t: 'user', text: 'fix #buffer', labels: ['#buffer a.lua (3 lines)'] },
        { t: 'thinking', text: 'secret musings' },
        { t: 'tool', id: 'c1', text: 'read_file a.lua', status: 'ok', summary: '3 lines', details: ['local a = 1', 'ARGUMENT DETAIL'] },
        { t: 'text', text: `Here:\n\n${code}` },
        { t: 'notice', text: 'compacted 4 earlier messages\ninto a summary' },
        { t: 'error', text: 'rate limited' },
        { t: 'user', text: 'thanks' },
        { t: 'text', text: 'half', interrupted: true },
      ],
      new Date('2026-01-02T03:04:05Z'),
    );
    assert.equal(
      md,
      [
        '# Fix the parser',
        '',
        '_Exported 2026-01-02T03:04:05.000Z_',
        '',
        '## You',
        '',
        'fix #buffer',
        '> 📎 #buffer a.lua (3 lines)',
        '',
        '## Caboose',
        '',
        '- ✓ read_file a.lua — 3 lines',
        '',
        `Here:\n\n${code}`,
        '',
        '> compacted 4 earlier messages',
        '> into a summary',
        '',
        '> **Error:** rate limited',
        '',
        '## You',
        '',
        'thanks',
        '',
        '## Caboose',
        '',
        'half\n\n_[response interrupted]_',
        '',
      ].join('\n'),
    );
    assert.ok(!md.includes('secret musings') && !md.includes('ARGUMENT DETAIL'));
  });
  it('a summary that starts with its own arrow is not given a dash too', () => {
    const md = exportMarkdown('t', [
      { t: 'user', text: 'run' },
      { t: 'tool', id: 'c1', text: 'bash echo hi', status: 'ok', summary: '→ exit 0' },
      { t: 'tool', id: 'c2', text: 'read_file a.lua', status: 'ok', summary: '3 lines' },
    ]);
    assert.match(md, /^- ✓ bash echo hi → exit 0$/m);
    assert.match(md, /^- ✓ read_file a\.lua — 3 lines$/m);
  });
  it('an untitled chat gets a heading', () => {
    assert.match(exportMarkdown(null, []), /^# caboose chat\n/);
  });

  it('a reply that leaves a code block open (cut off) has it closed: the next message is no code', () => {
    const md = exportMarkdown(
      't',
      [
        { t: 'user', text: 'show' },
        { t: 'text', text: 'Here:\n\n````lua\nlocal s = "```"\n```\nreturn s', interrupted: true },
        { t: 'user', text: 'next' },
        { t: 'text', text: '~~~\nraw\n' },
      ],
      new Date('2026-01-02T03:04:05Z'),
    );
    assert.ok(md.includes('return s\n````\n\n_[response interrupted]_\n\n## You\n\nnext'), md);
    assert.ok(md.endsWith('~~~\nraw\n~~~\n'), md);
    assert.equal(openFence(md), null);
  });
});
