import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolError } from '../../src/workspace/errors';
import { chunkNewLines, chunkOldLines, parsePatch, type PatchOp } from '../../src/workspace/patch';

function parseFails(text: string, line: number, fragment: RegExp): ToolError {
  let caught: unknown;
  try {
    parsePatch(text);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ToolError, `expected a ToolError, got ${String(caught)}`);
  assert.equal(caught.kind, 'patch_parse_error');
  assert.match(caught.message, new RegExp(`^line ${line}: `));
  assert.match(caught.message, fragment);
  return caught;
}

function update(op: PatchOp | undefined): Extract<PatchOp, { type: 'update' }> {
  assert.ok(op && op.type === 'update', `expected an update op, got ${JSON.stringify(op)}`);
  return op;
}

// ---------------------------------------------------------------------------------------------
// Envelope
// ---------------------------------------------------------------------------------------------

test('envelope: add, delete, update with move, context header and end-of-file marker', () => {
  const ops = parsePatch(
    [
      '*** Begin Patch',
      '*** Add File: src/new.ts',
      '+line one',
      '+',
      '+line three',
      '*** Delete File: old.txt',
      '*** Update File: a.py',
      '*** Move to: b.py',
      '@@ def greet():',
      ' context',
      '-print("Hi")',
      '+print("Hello")',
      '@@',
      '-tail',
      '+new tail',
      '*** End of File',
      '*** End Patch',
    ].join('\n'),
  );
  assert.equal(ops.length, 3);
  assert.deepEqual(ops[0], { type: 'add', path: 'src/new.ts', content: 'line one\n\nline three\n' });
  assert.deepEqual(ops[1], { type: 'delete', path: 'old.txt' });
  const u = update(ops[2]);
  assert.equal(u.path, 'a.py');
  assert.equal(u.moveTo, 'b.py');
  assert.equal(u.newlineAtEof, undefined);
  assert.equal(u.chunks.length, 2);
  assert.deepEqual(u.chunks[0]?.contexts, ['def greet():']);
  assert.deepEqual(chunkOldLines(u.chunks[0]!), ['context', 'print("Hi")']);
  assert.deepEqual(chunkNewLines(u.chunks[0]!), ['context', 'print("Hello")']);
  assert.equal(u.chunks[0]?.isEndOfFile, false);
  assert.equal(u.chunks[1]?.contexts, undefined);
  assert.equal(u.chunks[1]?.isEndOfFile, true);
});

test('envelope: add file with no lines is an empty file', () => {
  assert.deepEqual(parsePatch('*** Begin Patch\n*** Add File: empty.txt\n*** End Patch\n'), [
    { type: 'add', path: 'empty.txt', content: '' },
  ]);
});

test('envelope: first chunk may omit @@; an empty line inside a chunk is an empty context line', () => {
  const u = update(parsePatch('*** Begin Patch\n*** Update File: f\n a\n\n-b\n+c\n*** End Patch')[0]);
  assert.deepEqual(u.chunks[0]?.lines, [
    { kind: 'context', text: 'a' },
    { kind: 'context', text: '' },
    { kind: 'remove', text: 'b' },
    { kind: 'add', text: 'c' },
  ]);
});

test('envelope: whitespace-padded markers and blank lines between operations are tolerated', () => {
  const ops = parsePatch(
    [
      '',
      '  *** Begin Patch  ',
      '   *** Update File:   f.txt  ',
      '  @@  ',
      '-one',
      '+two',
      '',
      ' *** Delete File: g.txt',
      '',
      '*** Add File: h.txt',
      '+x',
      '',
      '+y',
      '',
      '\t*** End Patch ',
      '',
    ].join('\n'),
  );
  assert.equal(ops.length, 3);
  const u = update(ops[0]);
  assert.equal(u.path, 'f.txt');
  assert.deepEqual(chunkOldLines(u.chunks[0]!), ['one', ''], 'like Codex, the blank line is an empty context line');
  assert.deepEqual(ops[1], { type: 'delete', path: 'g.txt' });
  assert.deepEqual(ops[2], { type: 'add', path: 'h.txt', content: 'x\n\ny\n' });
});

test('envelope: a padded operation marker ends the previous chunk instead of becoming context', () => {
  const ops = parsePatch('*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n *** Update File: b\n@@\n-p\n+q\n*** End Patch');
  assert.deepEqual(
    ops.map((o) => o.path),
    ['a', 'b'],
  );
});

test('envelope: heredoc wrappers and Markdown fences are removed', () => {
  const body = '*** Begin Patch\n*** Delete File: x\n*** End Patch';
  for (const text of [
    `<<'EOF'\n${body}\nEOF\n`,
    `apply_patch <<"PATCH"\n${body}\nPATCH`,
    `apply_patch <<EOF\n${body}\nEOF`,
    `\`\`\`\n${body}\n\`\`\``,
  ]) {
    assert.deepEqual(parsePatch(text), [{ type: 'delete', path: 'x' }], text);
  }
});

test('envelope: CRLF patch text keeps the CR in line content, markers still recognised', () => {
  const u = update(parsePatch('*** Begin Patch\r\n*** Update File: f\r\n@@\r\n-a\r\n+b\r\n*** End Patch\r\n')[0]);
  assert.equal(u.path, 'f');
  assert.deepEqual(u.chunks[0]?.lines, [
    { kind: 'remove', text: 'a\r' },
    { kind: 'add', text: 'b\r' },
  ]);
});

test('envelope: a unified-style @@ -a,b +c,d @@ header becomes a position hint', () => {
  const u = update(parsePatch('*** Begin Patch\n*** Update File: f\n@@ -12,2 +12,2 @@\n-a\n+b\n*** End Patch')[0]);
  assert.equal(u.chunks[0]?.oldStart, 12);
  assert.equal(u.chunks[0]?.contexts, undefined);
});

test('envelope: consecutive @@ lines narrow the search, outermost first (Codex grammar)', () => {
  const u = update(
    parsePatch(
      [
        '*** Begin Patch',
        '*** Update File: shapes.py',
        '  @@ class BaseClass',
        '@@     def method(self):',
        '-        return 1',
        '+        return 2',
        '@@ class Other',
        '@@',
        '@@     def method(self):',
        '-        return 1',
        '+        return 3',
        '*** End Patch',
      ].join('\n'),
    )[0],
  );
  assert.equal(u.chunks.length, 2);
  assert.deepEqual(u.chunks[0]?.contexts, ['class BaseClass', 'def method(self):']);
  assert.deepEqual(chunkOldLines(u.chunks[0]!), ['        return 1']);
  // A bare @@ among the headers adds no context.
  assert.deepEqual(u.chunks[1]?.contexts, ['class Other', 'def method(self):']);
  assert.deepEqual(chunkNewLines(u.chunks[1]!), ['        return 3']);
  // After a header, " @@ …" is a context line (a patched file may hold "@@" lines).
  const d = update(parsePatch('*** Begin Patch\n*** Update File: x.diff\n@@ top\n @@ -1 +1 @@\n-old\n+new\n*** End Patch')[0]);
  assert.deepEqual(d.chunks[0]?.contexts, ['top']);
  assert.deepEqual(chunkOldLines(d.chunks[0]!), ['@@ -1 +1 @@', 'old']);
});

test('envelope errors carry the line number', () => {
  parseFails('', 1, /empty/);
  parseFails('hello\n*** Begin Patch\n*** End Patch', 1, /must be '\*\*\* Begin Patch'/);
  parseFails('*** Begin Patch\n*** Delete File: x\n', 2, /last line of the patch must be '\*\*\* End Patch'/);
  parseFails('*** Begin Patch\n*** End Patch', 1, /no file operations/);
  parseFails('*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch', 2, /is not a valid hunk header/);
  const e = parseFails('*** Begin Patch\n*** Add File: a\n+x\n*** Update File: foo.txt\n*** End Patch', 4, /Update File hunk for path 'foo.txt' is empty/);
  assert.equal(e.path, 'foo.txt');
  parseFails('*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\nbogus\n*** End Patch', 6, /expected update hunk to start with a @@ context marker, got: 'bogus'/);
  parseFails('*** Begin Patch\n*** Update File: f\n@@\nbogus\n*** End Patch', 4, /unexpected line found in update hunk: 'bogus'/);
  parseFails('*** Begin Patch\n*** Update File: f\n@@\n*** End of File\n*** End Patch', 4, /does not contain any lines/);
  parseFails('*** Begin Patch\n*** Delete File:   \n*** End Patch', 2, /needs a path/);
  parseFails('*** Begin Patch\n*** Update File: f\n*** Move to:\n@@\n-a\n*** End Patch', 3, /needs a path/);
});

// ---------------------------------------------------------------------------------------------
// Unified diffs
// ---------------------------------------------------------------------------------------------

test('unified: git diff of a modified file with two hunks', () => {
  const text = [
    'diff --git a/src/app.ts b/src/app.ts',
    'index 83db48f..bf269f4 100644',
    '--- a/src/app.ts',
    '+++ b/src/app.ts',
    '@@ -1,3 +1,3 @@ export function main() {',
    ' one',
    '-two',
    '+TWO',
    ' three',
    '@@ -10 +10,2 @@',
    ' ten',
    '+eleven',
    '',
  ].join('\n');
  const ops = parsePatch(text);
  assert.equal(ops.length, 1);
  const u = update(ops[0]);
  assert.equal(u.path, 'src/app.ts');
  assert.equal(u.moveTo, undefined);
  assert.equal(u.newlineAtEof, 'keep');
  assert.equal(u.chunks.length, 2);
  assert.equal(u.chunks[0]?.oldStart, 1);
  assert.equal(u.chunks[0]?.contexts, undefined, 'the section heading is not a context line');
  assert.deepEqual(chunkOldLines(u.chunks[0]!), ['one', 'two', 'three']);
  assert.equal(u.chunks[1]?.oldStart, 10);
  assert.deepEqual(chunkNewLines(u.chunks[1]!), ['ten', 'eleven']);
});

test('unified: new file via /dev/null and new file mode', () => {
  const ops = parsePatch(
    [
      'diff --git a/docs/new.md b/docs/new.md',
      'new file mode 100644',
      'index 0000000..e69de29',
      '--- /dev/null',
      '+++ b/docs/new.md',
      '@@ -0,0 +1,2 @@',
      '+# Title',
      '+text',
      'diff --git a/empty.txt b/empty.txt',
      'new file mode 100644',
      'index 0000000..e69de29',
    ].join('\n'),
  );
  assert.deepEqual(ops, [
    { type: 'add', path: 'docs/new.md', content: '# Title\ntext\n' },
    { type: 'add', path: 'empty.txt', content: '' },
  ]);
});

test('unified: deleted file via /dev/null and deleted file mode', () => {
  const ops = parsePatch(
    [
      'diff --git a/gone.txt b/gone.txt',
      'deleted file mode 100644',
      'index e69de29..0000000',
      '--- a/gone.txt',
      '+++ /dev/null',
      '@@ -1,2 +0,0 @@',
      '-a',
      '-b',
      '--- old.txt',
      '+++ /dev/null',
      '@@ -1 +0,0 @@',
      '-x',
    ].join('\n'),
  );
  assert.deepEqual(ops, [
    { type: 'delete', path: 'gone.txt' },
    { type: 'delete', path: 'old.txt' },
  ]);
});

test('unified: git rename, with and without content changes', () => {
  const ops = parsePatch(
    [
      'diff --git a/old name.txt b/new name.txt',
      'similarity index 100%',
      'rename from old name.txt',
      'rename to new name.txt',
      'diff --git a/lib/a.ts b/lib/b.ts',
      'similarity index 90%',
      'rename from lib/a.ts',
      'rename to lib/b.ts',
      'index 1..2 100644',
      '--- a/lib/a.ts',
      '+++ b/lib/b.ts',
      '@@ -1 +1 @@',
      '-x',
      '+y',
    ].join('\n'),
  );
  assert.equal(ops.length, 2);
  const pure = update(ops[0]);
  assert.equal(pure.path, 'old name.txt');
  assert.equal(pure.moveTo, 'new name.txt');
  assert.deepEqual(pure.chunks, []);
  const edited = update(ops[1]);
  assert.equal(edited.path, 'lib/a.ts');
  assert.equal(edited.moveTo, 'lib/b.ts');
  assert.equal(edited.chunks.length, 1);
});

test('unified: plain diff -u without prefixes, timestamps removed, quoted git paths decoded', () => {
  const ops = parsePatch(
    [
      '--- notes.txt\t2024-01-01 10:00:00.000000000 +0100',
      '+++ notes.txt\t2024-01-02 10:00:00.000000000 +0100',
      '@@ -1 +1 @@',
      '-a',
      '+b',
      'diff --git "a/t\\303\\251st.txt" "b/t\\303\\251st.txt"',
      '--- "a/t\\303\\251st.txt"',
      '+++ "b/t\\303\\251st.txt"',
      '@@ -1 +1 @@',
      '-a',
      '+b',
    ].join('\n'),
  );
  assert.deepEqual(
    ops.map((o) => o.path),
    ['notes.txt', 'tést.txt'],
  );
});

test('unified: "\\ No newline at end of file" sets the final-newline policy', () => {
  const removes = update(parsePatch('--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n')[0]);
  assert.equal(removes.newlineAtEof, 'remove');
  const adds = update(parsePatch('--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n')[0]);
  assert.equal(adds.newlineAtEof, 'add');
  const added = parsePatch('--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n');
  assert.deepEqual(added, [{ type: 'add', path: 'f', content: 'a\nb' }]);
});

test('unified: counted hunks trust their counts ("--- x" and "+++ y" inside a hunk are lines)', () => {
  const u = update(parsePatch('--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n--- x\n+++ y\n a\n')[0]);
  assert.deepEqual(u.chunks[0]?.lines, [
    { kind: 'remove', text: '-- x' },
    { kind: 'add', text: '++ y' },
    { kind: 'context', text: 'a' },
  ]);
});

test('unified: hunks without line numbers end at the next header; trailing blank lines dropped', () => {
  const ops = parsePatch(
    ['--- a/f', '+++ b/f', '@@', ' a', '-b', '+c', '@@ @@', '-y', '+z', '', '--- a/g', '+++ b/g', '@@', '-1', '+2', ''].join('\n'),
  );
  assert.deepEqual(
    ops.map((o) => o.path),
    ['f', 'g'],
  );
  const u = update(ops[0]);
  assert.equal(u.chunks.length, 2);
  assert.equal(u.chunks[0]?.oldStart, undefined);
  assert.deepEqual(chunkNewLines(u.chunks[1]!), ['z']);
});

test('unified: format-patch preamble and signature are ignored', () => {
  const ops = parsePatch(
    [
      'From 1234 Mon Sep 17 00:00:00 2001',
      'Subject: [PATCH] change',
      '',
      '---',
      ' f | 2 +-',
      '',
      'diff --git a/f b/f',
      'index 1..2 100644',
      '--- a/f',
      '+++ b/f',
      '@@ -1,2 +1,2 @@',
      ' a',
      '-b',
      '+c',
      '-- ',
      '2.43.0',
      '',
    ].join('\n'),
  );
  assert.equal(ops.length, 1);
  assert.deepEqual(chunkNewLines(update(ops[0]).chunks[0]!), ['a', 'c']);
});

test('unified errors carry the line number', () => {
  parseFails('diff --git a/f b/f\nBinary files a/f and b/f differ\n', 2, /binary/);
  parseFails('diff --git a/f b/g\ncopy from f\ncopy to g\n', 2, /copy/);
  parseFails('--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n', 6, /more lines than its header/);
  parseFails('--- a/f\n+++ b/f\n@@ -x +y @@\n-a\n', 3, /invalid hunk header/);
  parseFails('--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n@@ -5 +5 @@\n', 6, /does not contain any lines/);
  parseFails('--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n a\n', 3, /may only add lines/);
  parseFails('diff --git a/f b/f\nindex 1..2\n', 1, /no file operations/);
});
