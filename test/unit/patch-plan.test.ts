import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolError, type ErrorKind } from '../../src/workspace/errors';
import { finalContents, parsePatch, planPatch, unifiedDiff, type FileState, type PlannedChange } from '../../src/workspace/patch';

type Tree = Record<string, string | 'DIR'>;

function reader(tree: Tree, calls: string[] = []): (p: string) => FileState {
  return (p) => {
    calls.push(p);
    const v = tree[p];
    if (v === undefined) return { kind: 'missing' };
    if (v === 'DIR') return { kind: 'directory' };
    return { kind: 'file', text: v };
  };
}

function envelope(...body: string[]): string {
  return ['*** Begin Patch', ...body, '*** End Patch'].join('\n');
}

function plan(tree: Tree, patch: string): PlannedChange[] {
  return planPatch(parsePatch(patch), reader(tree));
}

/** New text of the single file a patch updates. */
function updated(text: string, ...body: string[]): string {
  const changes = plan({ f: text }, envelope('*** Update File: f', ...body));
  assert.equal(changes.length, 1);
  return changes[0]?.newText as string;
}

function planFails(tree: Tree, patch: string, kind: ErrorKind, path?: string): ToolError {
  let caught: unknown;
  try {
    plan(tree, patch);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ToolError, `expected a ToolError, got ${String(caught)}`);
  assert.equal(caught.kind, kind, caught.message);
  if (path !== undefined) assert.equal(caught.path, path);
  return caught;
}

// ---------------------------------------------------------------------------------------------
// Update semantics (Codex apply_patch)
// ---------------------------------------------------------------------------------------------

test('an updated file always ends with a newline; blank last lines are kept', () => {
  assert.equal(updated('a\nb', '@@', '-b', '+c'), 'a\nc\n');
  assert.equal(updated('a\nb\n\n', '@@', '-a', '+A'), 'A\nb\n\n');
  assert.equal(updated('only\n', '@@', '-only'), '');
});

test('chunks apply in order, each searched after the previous one', () => {
  assert.equal(updated('x\ny\nx\ny\n', '@@', '-x', '+X', '@@', '-x', '+Z'), 'X\ny\nZ\ny\n');
  assert.equal(updated('1\n2\n3\n4\n', '@@', '-2', '+two', '@@', '-4', '+four'), '1\ntwo\n3\nfour\n');
});

test('a chunk that only matches before the previous one fails', () => {
  planFails({ f: 'a\nb\n' }, envelope('*** Update File: f', '@@', '-b', '+B', '@@', '-a', '+A'), 'patch_apply_error', 'f');
});

test('@@ context header narrows the search to after that line', () => {
  const text = 'def a():\n    return 1\ndef b():\n    return 1\n';
  assert.equal(
    updated(text, '@@ def b():', '-    return 1', '+    return 2'),
    'def a():\n    return 1\ndef b():\n    return 2\n',
  );
  const e = planFails({ f: text }, envelope('*** Update File: f', '@@ def c():', '-    return 1'), 'patch_apply_error', 'f');
  assert.match(e.message, /Failed to find context 'def c\(\):' in f/);
});

test('several @@ lines narrow the search in order: each is sought after the previous one', () => {
  const text = [
    'class BaseClass:',
    '    def method(self):',
    '        return 1',
    'class Other:',
    '    def method(self):',
    '        return 1',
    '    def helper(self):',
    '        return 1',
    '',
  ].join('\n');
  const expected = text.replace('return 1\n    def helper', 'return 2\n    def helper');
  assert.equal(updated(text, '@@ class Other:', '@@     def method(self):', '-        return 1', '+        return 2'), expected);
  // The inner context is found after the outer one, even though it also occurs earlier.
  assert.equal(
    updated(text, '@@ class Other:', '@@     def helper(self):', '+        # helper'),
    text.replace('def helper(self):\n', 'def helper(self):\n        # helper\n'),
  );
  // An inner context that only occurs before the outer one is not found.
  const e = planFails({ f: 'def method():\n    pass\nclass A:\n    x = 1\n' }, envelope('*** Update File: f', '@@ class A:', '@@ def method():', '-    pass'), 'patch_apply_error', 'f');
  assert.match(e.message, /Failed to find context 'def method\(\):' in f/);
});

test('pure addition appends at the end without context, after the context line with it', () => {
  assert.equal(updated('a\nb\n', '@@', '+c', '+d'), 'a\nb\nc\nd\n');
  assert.equal(updated('a\nb', '@@', '+c'), 'a\nb\nc\n');
  assert.equal(updated('', '@@', '+c'), 'c\n');
  assert.equal(updated('a\nb\n', '@@ a', '+after a'), 'a\nafter a\nb\n');
});

test('*** End of File anchors the chunk at the end of the file', () => {
  assert.equal(updated('a\nb\na\n', '@@', '-a', '+A', '*** End of File'), 'a\nb\nA\n');
  assert.equal(updated('a\nb\na\n', '@@', '-a', '+A'), 'A\nb\na\n');
});

test('a trailing blank context line that does not match is dropped and retried', () => {
  assert.equal(updated('a\nb\n', '@@', '-a', '+A', ''), 'A\nb\n');
});

test('lenient matches keep the file\'s own context lines; added lines come from the patch', () => {
  const text = '  say(“hi”)  \nx = 1\n';
  assert.equal(updated(text, '@@', ' say("hi")', '-x = 1', '+x = 2'), '  say(“hi”)  \nx = 2\n');
});

test('CRLF files round-trip; added lines follow the file\'s line endings', () => {
  assert.equal(updated('a\r\nb\r\nc\r\n', '@@', ' a', '-b', '+B', '+B2'), 'a\r\nB\r\nB2\r\nc\r\n');
  assert.equal(updated('a\r\nb', '@@', '-b', '+c'), 'a\r\nc\r\n');
  // mixed files are left as they are
  assert.equal(updated('a\r\nb\nc\n', '@@', '-b', '+B'), 'a\r\nB\nc\n');
  // a CRLF patch against an LF file does not smuggle CRs in
  const changes = plan({ f: 'a\nb\n' }, '*** Begin Patch\r\n*** Update File: f\r\n@@\r\n a\r\n-b\r\n+c\r\n*** End Patch\r\n');
  assert.equal(changes[0]?.newText, 'a\nc\n');
});

test('patch_apply_error names the file and shows the expected lines', () => {
  const e = planFails({ 'src/x.ts': 'a\n' }, envelope('*** Update File: src/x.ts', '@@', ' ctx', '-missing', '+new'), 'patch_apply_error', 'src/x.ts');
  assert.equal(e.message, 'Failed to find expected lines in src/x.ts:\nctx\nmissing');
  assert.deepEqual(e.details, { expected: ['ctx', 'missing'] });
});

// ---------------------------------------------------------------------------------------------
// File-level rules
// ---------------------------------------------------------------------------------------------

test('missing files: update and delete report not_found', () => {
  planFails({}, envelope('*** Update File: nope.txt', '@@', '-a', '+b'), 'not_found', 'nope.txt');
  planFails({}, envelope('*** Delete File: nope.txt'), 'not_found', 'nope.txt');
});

test('directories: delete and update report is_directory, add reports already_exists', () => {
  planFails({ dir: 'DIR' }, envelope('*** Delete File: dir'), 'is_directory', 'dir');
  planFails({ dir: 'DIR' }, envelope('*** Update File: dir', '@@', '-a'), 'is_directory', 'dir');
  planFails({ dir: 'DIR' }, envelope('*** Add File: dir', '+x'), 'already_exists', 'dir');
});

test('never overwrite: Add onto an existing file or Move onto an existing destination fails', () => {
  planFails({ 'a.txt': 'old\n' }, envelope('*** Add File: a.txt', '+new'), 'already_exists', 'a.txt');
  planFails(
    { 'a.txt': 'x\n', 'b.txt': 'y\n' },
    envelope('*** Update File: a.txt', '*** Move to: b.txt', '@@', '-x', '+z'),
    'already_exists',
    'b.txt',
  );
});

test('a failure anywhere means the whole plan fails (no partial result)', () => {
  planFails({}, envelope('*** Add File: created.txt', '+hello', '*** Update File: missing.txt', '@@', '-old', '+new'), 'not_found', 'missing.txt');
});

test('add, delete and move produce planned changes with old and new text', () => {
  const calls: string[] = [];
  const changes = planPatch(
    parsePatch(
      envelope('*** Add File: n/new.txt', '+created', '*** Delete File: del.txt', '*** Update File: old/a.txt', '*** Move to: new/a.txt', '@@', '-x', '+y'),
    ),
    reader({ 'del.txt': 'bye\n', 'old/a.txt': 'x\n' }, calls),
  );
  assert.deepEqual(changes, [
    { type: 'add', path: 'n/new.txt', newText: 'created\n' },
    { type: 'delete', path: 'del.txt', oldText: 'bye\n' },
    { type: 'update', path: 'old/a.txt', moveTo: 'new/a.txt', oldText: 'x\n', newText: 'y\n' },
  ]);
  assert.deepEqual(calls, ['n/new.txt', 'del.txt', 'old/a.txt', 'new/a.txt']);
  assert.deepEqual(
    [...finalContents(changes)],
    [
      ['n/new.txt', 'created\n'],
      ['del.txt', null],
      ['old/a.txt', null],
      ['new/a.txt', 'y\n'],
    ],
  );
});

test('several operations on one path build on each other in memory', () => {
  const calls: string[] = [];
  const changes = planPatch(
    parsePatch(
      envelope(
        '*** Add File: a.txt',
        '+one',
        '*** Update File: ./a.txt',
        '@@',
        '-one',
        '+two',
        '*** Delete File: b.txt',
        '*** Add File: b.txt',
        '+fresh',
        '*** Update File: c.txt',
        '*** Move to: d.txt',
        '@@',
        '-c',
        '+d',
        '*** Update File: d.txt',
        '@@',
        '+more',
        '*** Add File: c.txt',
        '+c again',
      ),
    ),
    reader({ 'b.txt': 'stale\n', 'c.txt': 'c\n' }, calls),
  );
  assert.deepEqual(changes[1], { type: 'update', path: './a.txt', oldText: 'one\n', newText: 'two\n' });
  assert.deepEqual(Object.fromEntries(finalContents(changes)), {
    'a.txt': 'two\n',
    'b.txt': 'fresh\n',
    'c.txt': 'c again\n',
    'd.txt': 'd\nmore\n',
  });
  // each distinct path is read from "disk" once, with the string written in the patch
  assert.deepEqual(calls, ['a.txt', 'b.txt', 'c.txt', 'd.txt']);
});

test('Move to the same path is a plain update', () => {
  const changes = plan({ 'a.txt': 'x\n' }, envelope('*** Update File: a.txt', '*** Move to: a.txt', '@@', '-x', '+y'));
  assert.deepEqual(changes, [{ type: 'update', path: 'a.txt', oldText: 'x\n', newText: 'y\n' }]);
});

// ---------------------------------------------------------------------------------------------
// Unified diffs
// ---------------------------------------------------------------------------------------------

test('unified: final newline follows the diff ("\\ No newline at end of file"), else the original', () => {
  const p = (body: string): string => `--- a/f\n+++ b/f\n${body}`;
  assert.equal(plan({ f: 'a\nb' }, p('@@ -1 +1 @@\n-a\n+A\n'))[0]?.newText, 'A\nb');
  assert.equal(plan({ f: 'a\nb\n' }, p('@@ -2 +2 @@\n-b\n+B\n\\ No newline at end of file\n'))[0]?.newText, 'a\nB');
  assert.equal(plan({ f: 'a\nb' }, p('@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+B\n'))[0]?.newText, 'a\nB\n');
  assert.equal(plan({ f: 'a\r\nb\r\n' }, p('@@ -2 +2 @@\n-b\n+B\n\\ No newline at end of file\n'))[0]?.newText, 'a\r\nB');
});

test('unified: line numbers pick the right one of several identical spots', () => {
  const text = 'x\nx\nx\nx\n';
  assert.equal(plan({ f: text }, '--- a/f\n+++ b/f\n@@ -3 +3 @@\n-x\n+Y\n')[0]?.newText, 'x\nx\nY\nx\n');
  assert.equal(plan({ f: text }, '--- a/f\n+++ b/f\n@@ -2,0 +3 @@\n+new\n')[0]?.newText, 'x\nx\nnew\nx\nx\n');
  // wrong line numbers are only a hint: the context is still found
  assert.equal(plan({ f: 'a\nb\nc\n' }, '--- a/f\n+++ b/f\n@@ -40,2 +40,2 @@\n a\n-b\n+B\n')[0]?.newText, 'a\nB\nc\n');
});

test('unified: in a CRLF file the hinted line wins over an identical unterminated last line', () => {
  // Found by stress/fuzz.ts: only the last line has no \r, so it matched "exactly" and pulled the hunk there.
  const text = 'a\r\nbaz\r\nfoo\r\nbar\r\nbaz';
  const patch = '--- a/f.txt\n+++ b/f.txt\n@@ -2,1 +1,0 @@\n-baz\n@@ -3,2 +2,0 @@\n-foo\n-bar\n';
  const [change] = planPatch(parsePatch(patch), reader({ 'f.txt': text }));
  assert.equal(change?.newText, 'a\r\nbaz');
  // Envelope chunks too: the first match in order, not the one without \r.
  const [env] = planPatch(parsePatch(envelope('*** Update File: f.txt', '@@', '-baz', '+BAZ', ' foo')), reader({ 'f.txt': text }));
  assert.equal(env?.newText, 'a\r\nBAZ\r\nfoo\r\nbar\r\nbaz\r\n');
});

test('unified: git rename without changes moves the file as is', () => {
  const changes = plan({ 'a.txt': 'keep\nno newline' }, 'diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n');
  assert.deepEqual(changes, [{ type: 'update', path: 'a.txt', moveTo: 'b.txt', oldText: 'keep\nno newline', newText: 'keep\nno newline' }]);
});

// ---------------------------------------------------------------------------------------------
// unifiedDiff helper
// ---------------------------------------------------------------------------------------------

test('unifiedDiff renders git-style headers and round-trips through the engine', () => {
  const oldText = 'one\ntwo\nthree\n';
  const newText = 'one\n2\nthree\nfour\n';
  const d = unifiedDiff('src/n.txt', oldText, newText);
  assert.ok(d.startsWith('--- a/src/n.txt\n+++ b/src/n.txt\n@@ -1,3 +1,4 @@\n'), d);
  assert.equal(plan({ 'src/n.txt': oldText }, d)[0]?.newText, newText);
  assert.equal(unifiedDiff('x', 'same\n', 'same\n'), '');
  assert.match(unifiedDiff('new.txt', 'a\n', 'a\n', { oldPath: 'old.txt' }), /^--- a\/old.txt\n\+\+\+ b\/new.txt/);
  assert.match(unifiedDiff('added.txt', '', 'hi\n'), /@@ -0,0 \+1(,1)? @@\n\+hi/);
});
